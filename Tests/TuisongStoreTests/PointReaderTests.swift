import Foundation
import Testing
import TuisongCore

@testable import TuisongStore

@Suite("Point lookups on raw prepared statements")
struct PointReaderTests {
    @Test("A lookup sees each committed write at once, with tags, and nil for unknown devices")
    func seesCommittedWrites() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        #expect(try await store.deviceWithTags(appID: app.id, token: token(1)) == nil)

        let registered = try await store.registerDevice(
            appID: app.id,
            DeviceRegistration(
                token: token(1), environment: .sandbox, user: "小明", locale: "zh_CN",
                tags: [TagName("北京")!, TagName("vip")!]))
        let found = try #require(await store.deviceWithTags(appID: app.id, token: token(1)))
        #expect(found.device == registered.device)
        #expect(found.tags == ["vip", "北京"].sorted())
        #expect(try await store.device(appID: app.id, token: token(1)) == registered.device)
        #expect(try await store.device(id: registered.device.id) == registered.device)

        // The prepared statement is reused; the next lookup sees the next commit.
        _ = try await store.removeTag(appID: app.id, token: token(1), tag: TagName("vip")!)
        #expect(try await store.deviceWithTags(appID: app.id, token: token(1))?.tags == ["北京"])
        _ = try await store.deleteDevice(appID: app.id, token: token(1))
        #expect(try await store.deviceWithTags(appID: app.id, token: token(1)) == nil)
        #expect(try await store.device(id: registered.device.id) == nil)
    }

    @Test("A write by another process's connection is visible to the next lookup")
    func seesOtherConnections() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let app = try await makeApp(fixture.store)
        _ = try await fixture.store.deviceWithTags(appID: app.id, token: token(7))  // warm a reader
        let other = try SQLiteStore(path: fixture.database.path)
        _ = try await other.registerDevice(appID: app.id, DeviceRegistration(token: token(7), environment: .production))
        try other.close()
        #expect(
            try await fixture.store.deviceWithTags(appID: app.id, token: token(7))?.device.environment == .production)
    }

    @Test("Lookups from many threads at once all answer correctly")
    func concurrentLookups() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        for n in 1...50 {
            _ = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(n), environment: .sandbox))
        }
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for round in 0..<200 {
                        let n = (worker * 200 + round) % 60 + 1
                        let device = try await store.device(appID: app.id, token: token(n))
                        if (n <= 50) != (device?.token == token(n).hex) { wrong += 1 }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    @Test("After close, lookups fail as unavailable instead of reopening the file")
    func closedStore() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let app = try await makeApp(fixture.store)
        _ = try await fixture.store.deviceWithTags(appID: app.id, token: token(1))
        try fixture.store.close()
        let error = await #expect(throws: StoreError.self) {
            try await fixture.store.deviceWithTags(appID: app.id, token: token(1))
        }
        #expect(error?.code == .unavailable)
    }

    @Test("A failing statement reports SQLite's code and message")
    func errorsCarrySQLiteText() throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let readers = PointReaders(path: fixture.database.path + "-missing", busyTimeout: 1)
        let error = #expect(throws: StoreError.self) {
            try readers.withConnection { _ in () }
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("SQLite error") == true)
    }
}
