import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongStore

@Suite("Apps")
struct AppStoreTests {
    @Test("An app is created, found by id and by API key hash, and listed")
    func createAndFind() async throws {
        let clock = ManualClock()
        let fixture = try StoreFixture(.init(clock: clock))
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await store.createApp(
            name: "Demo", bundleID: "com.example.demo", apiKeyHash: "abc")
        #expect(app.name == "Demo")
        #expect(app.bundleID == "com.example.demo")
        #expect(app.createdAt == clock.now)
        #expect(app.vendorSettings.isEmpty)

        #expect(try await store.app(id: app.id) == app)
        #expect(try await store.app(apiKeyHash: "abc") == app)
        #expect(try await store.app(apiKeyHash: "nope") == nil)
        #expect(try await store.app(id: app.id + 100) == nil)

        let other = try await store.createApp(
            name: "Other", bundleID: "com.example.other", apiKeyHash: "def")
        #expect(try await store.apps().map(\.id) == [app.id, other.id])
    }

    @Test("A second app with the same API key hash is a conflict carrying SQLite's message")
    func duplicateKeyHash() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        _ = try await store.createApp(name: "A", bundleID: "a", apiKeyHash: "same")
        let error = await #expect(throws: StoreError.self) {
            _ = try await store.createApp(name: "B", bundleID: "b", apiKeyHash: "same")
        }
        #expect(error?.code == .conflict)
        #expect(error?.message.contains("UNIQUE constraint failed: apps.api_key_hash") == true)
        #expect(error?.message.contains("SQLite error 2067") == true)  // SQLITE_CONSTRAINT_UNIQUE
    }

    @Test("updateApp replaces the fields and vendor settings and moves updatedAt only")
    func update() async throws {
        let clock = ManualClock()
        let fixture = try StoreFixture(.init(clock: clock))
        defer { fixture.tearDown() }
        let store = fixture.store
        var app = try await store.createApp(
            name: "Demo", bundleID: "com.example.demo", apiKeyHash: "abc")
        let created = app.createdAt
        clock.advance(by: 60)
        app.name = "Renamed"
        app.bundleID = "com.example.renamed"
        app.apiKeyHash = "xyz"
        app.vendorSettings = [
            "baidu": ["apikey": "k", "secret_key": "enc:…"], "tencent": ["sdkappid": "1400000000"],
        ]
        try await store.updateApp(app)

        let stored = try #require(await store.app(id: app.id))
        #expect(stored.name == "Renamed")
        #expect(stored.bundleID == "com.example.renamed")
        #expect(stored.vendorSettings == app.vendorSettings)
        #expect(stored.createdAt == created)
        #expect(stored.updatedAt == clock.now)
        #expect(try await store.app(apiKeyHash: "abc") == nil)
        #expect(try await store.app(apiKeyHash: "xyz")?.id == app.id)
    }

    @Test("Updating an unknown app is not found; taking another app's key hash is a conflict")
    func updateErrors() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let first = try await store.createApp(name: "A", bundleID: "a", apiKeyHash: "ka")
        var second = try await store.createApp(name: "B", bundleID: "b", apiKeyHash: "kb")

        var ghost = first
        ghost.id = 999
        let missing = await #expect(throws: StoreError.self) { try await store.updateApp(ghost) }
        #expect(missing?.code == .notFound)

        second.apiKeyHash = "ka"
        let conflict = await #expect(throws: StoreError.self) { try await store.updateApp(second) }
        #expect(conflict?.code == .conflict)
    }

    @Test("Deleting an app cascades to its devices, tags and memberships; other apps keep theirs")
    func deleteCascades() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let doomed = try await makeApp(store, "doomed")
        let kept = try await makeApp(store, "kept")
        for app in [doomed, kept] {
            for n in 0..<5 {
                _ = try await store.registerDevice(
                    appID: app.id,
                    DeviceRegistration(
                        token: token(n), environment: .sandbox, tags: [tag("a"), tag("b")]))
            }
        }
        #expect(try await store.rowCount("device_tags") == 20)

        #expect(try await store.deleteApp(id: doomed.id))
        #expect(try await store.deleteApp(id: doomed.id) == false)

        #expect(try await store.deviceCount(appID: doomed.id) == 0)
        #expect(try await store.deviceCount(appID: kept.id) == 5)
        #expect(try await store.rowCount("devices") == 5)
        #expect(try await store.rowCount("tags") == 2)
        #expect(try await store.rowCount("device_tags") == 10)
    }

    @Test("Foreign keys are enforced: a device of an unknown app is not found, not stored")
    func foreignKeysEnforced() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let error = await #expect(throws: StoreError.self) {
            _ = try await store.registerDevice(
                appID: 4242, DeviceRegistration(token: token(1), environment: .sandbox))
        }
        #expect(error?.code == .notFound)
        #expect(error?.message.contains("FOREIGN KEY") == true)
        #expect(try await store.rowCount("devices") == 0)
    }
}
