import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

@Suite("Tags and tag listings")
struct TagTests {
    @Test("Tags are added once, listed sorted, and removed", arguments: Backend.allCases)
    func addListRemove(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            _ = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(1), environment: .sandbox, channel: .apns))
            #expect(try await store.tags(appID: app.id, token: token(1)) == [])

            try await store.addTag(appID: app.id, token: token(1), tag: tag("vip"))
            try await store.addTag(appID: app.id, token: token(1), tag: tag("beta"))
            try await store.addTag(appID: app.id, token: token(1), tag: tag("vip"))
            try await store.addTag(appID: app.id, token: token(1), tag: tag("北京"))
            #expect(try await store.tags(appID: app.id, token: token(1)) == ["beta", "vip", "北京"])

            #expect(try await store.removeTag(appID: app.id, token: token(1), tag: tag("vip")))
            #expect(try await store.removeTag(appID: app.id, token: token(1), tag: tag("vip")) == false)
            #expect(
                try await store.removeTag(appID: app.id, token: token(1), tag: tag("never")) == false)
            #expect(try await store.tags(appID: app.id, token: token(1)) == ["beta", "北京"])
        }
    }

    @Test("Tag operations on an unknown device are not found", arguments: Backend.allCases)
    func unknownDevice(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let add = await #expect(throws: StoreError.self) {
                try await store.addTag(appID: app.id, token: token(9), tag: tag("a"))
            }
            #expect(add?.code == .notFound)
            let remove = await #expect(throws: StoreError.self) {
                _ = try await store.removeTag(appID: app.id, token: token(9), tag: tag("a"))
            }
            #expect(remove?.code == .notFound)
            let list = await #expect(throws: StoreError.self) {
                _ = try await store.tags(appID: app.id, token: token(9))
            }
            #expect(list?.code == .notFound)
        }
    }

    @Test("A registration with tags replaces the tag set; one without leaves it alone", arguments: Backend.allCases)
    func registrationReplacesTags(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            _ = try await store.registerDevice(
                appID: app.id,
                DeviceRegistration(
                    token: token(1), environment: .sandbox, tags: [tag("a"), tag("b"), tag("a")], channel: .apns))
            #expect(try await store.tags(appID: app.id, token: token(1)) == ["a", "b"])

            _ = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(1), environment: .sandbox, channel: .apns))
            #expect(try await store.tags(appID: app.id, token: token(1)) == ["a", "b"])

            _ = try await store.registerDevice(
                appID: app.id,
                DeviceRegistration(token: token(1), environment: .sandbox, tags: [tag("c")], channel: .apns))
            #expect(try await store.tags(appID: app.id, token: token(1)) == ["c"])

            _ = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(1), environment: .sandbox, tags: [], channel: .apns))
            #expect(try await store.tags(appID: app.id, token: token(1)) == [])
        }
    }

    @Test("Listing a tag walks every device once across pages, in id order, and ends", arguments: Backend.allCases)
    func pagination(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let other = try await makeApp(store, "other")
            var tagged = [Int64]()
            for n in 0..<60 {
                let tags = n % 2 == 0 ? [tag("news")] : [tag("sports")]
                let (device, _) = try await store.registerDevice(
                    appID: app.id,
                    DeviceRegistration(token: token(n), environment: .sandbox, tags: tags, channel: .apns))
                if n % 2 == 0 { tagged.append(device.id) }
                // The same tag name in another app must not leak into the listing.
                _ = try await store.registerDevice(
                    appID: other.id,
                    DeviceRegistration(token: token(n), environment: .sandbox, tags: [tag("news")], channel: .apns))
            }

            var seen = [Int64]()
            var cursor: String?
            var pages = 0
            repeat {
                let page = try await store.devices(
                    appID: app.id, tag: tag("news"), cursor: cursor, limit: 7)
                #expect(page.items.count <= 7)
                #expect(page.items.allSatisfy { $0.appID == app.id })
                seen += page.items.map(\.id)
                cursor = page.nextCursor
                pages += 1
            } while cursor != nil && pages < 100
            #expect(seen == tagged)
            #expect(pages == 5)  // 30 devices: 7+7+7+7+2

            let exact = try await store.devices(appID: app.id, tag: tag("news"), cursor: nil, limit: 30)
            #expect(exact.items.count == 30)
            #expect(exact.nextCursor == nil)

            let none = try await store.devices(
                appID: app.id, tag: tag("nobody"), cursor: nil, limit: 10)
            #expect(none.items.isEmpty && none.nextCursor == nil)
        }
    }

    @Test("Limits are clamped to 1…1000", arguments: Backend.allCases)
    func limitClamping(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let batch = (0..<1005).map {
                DeviceRegistration(token: token($0), environment: .sandbox, tags: [tag("all")], channel: .apns)
            }
            _ = try await store.registerDevices(appID: app.id, batch)

            let one = try await store.devices(appID: app.id, tag: tag("all"), cursor: nil, limit: 0)
            #expect(one.items.count == 1)
            #expect(one.nextCursor != nil)
            let most = try await store.devices(
                appID: app.id, tag: tag("all"), cursor: nil, limit: 50_000)
            #expect(most.items.count == 1000)
            let rest = try await store.devices(
                appID: app.id, tag: tag("all"), cursor: most.nextCursor, limit: 50_000)
            #expect(rest.items.count == 5)
            #expect(rest.nextCursor == nil)
        }
    }

    @Test(
        "A cursor the store did not issue is an invalid cursor",
        arguments: Backend.allCases,
        [
            "", "not base64!", "MTIz=", "LTU", "MDEy", "YWJj", "KzE",
        ])
    func badCursor(_ backend: Backend, cursor: String) async throws {
        // "MTIz=" is padded "123"; "LTU" is "-5"; "MDEy" is "012"; "YWJj" is "abc"; "KzE" is "+1".
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let error = await #expect(throws: StoreError.self) {
                _ = try await store.devices(appID: app.id, tag: tag("a"), cursor: cursor, limit: 10)
            }
            #expect(error?.code == .invalidCursor)
        }
    }

    @Test("Cursors round-trip")
    func cursorRoundTrip() throws {
        for id: Int64 in [0, 1, 9, 10, 123_456_789, .max] {
            #expect(try Cursor.decode(Cursor.encode(id)) == id)
        }
    }
}
