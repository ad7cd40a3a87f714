import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

@Suite("Apps")
struct AppStoreTests {
    @Test("An app is created, found by id and by API key hash, and listed", arguments: Backend.allCases)
    func createAndFind(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await withStore(backend, clock: clock) { store in
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
    }

    @Test(
        "A second app with the same API key hash is a conflict carrying the database's message",
        arguments: Backend.allCases)
    func duplicateKeyHash(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.createApp(name: "A", bundleID: "a", apiKeyHash: "same")
            let error = await #expect(throws: StoreError.self) {
                _ = try await store.createApp(name: "B", bundleID: "b", apiKeyHash: "same")
            }
            #expect(error?.code == .conflict)
            switch backend {
            case .sqlite:
                #expect(error?.message.contains("UNIQUE constraint failed: apps.api_key_hash") == true)
                #expect(error?.message.contains("SQLite error 2067") == true)  // SQLITE_CONSTRAINT_UNIQUE
            case .postgresql:
                #expect(error?.message.contains("PostgreSQL 23505") == true)  // unique_violation
                #expect(error?.message.contains("apps_api_key_hash_key") == true)
            }
        }
    }

    @Test("updateApp replaces the fields and vendor settings and moves updatedAt only", arguments: Backend.allCases)
    func update(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await withStore(backend, clock: clock) { store in
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
    }

    @Test(
        "Updating an unknown app is not found; taking another app's key hash is a conflict", arguments: Backend.allCases
    )
    func updateErrors(_ backend: Backend) async throws {
        try await withStore(backend) { store in
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
    }

    @Test(
        "Deleting an app cascades to its devices, tags and memberships; other apps keep theirs",
        arguments: Backend.allCases)
    func deleteCascades(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let doomed = try await makeApp(store, "doomed")
            let kept = try await makeApp(store, "kept")
            for app in [doomed, kept] {
                for n in 0..<5 {
                    _ = try await store.registerDevice(
                        appID: app.id,
                        DeviceRegistration(
                            token: token(n), environment: .sandbox, tags: [tag("a"), tag("b")], channel: .apns))
                }
            }
            #expect(try await storedRowCount(store, "device_tags") == 20)

            #expect(try await store.deleteApp(id: doomed.id))
            #expect(try await store.deleteApp(id: doomed.id) == false)

            #expect(try await storedDeviceCount(store, appID: doomed.id) == 0)
            #expect(try await storedDeviceCount(store, appID: kept.id) == 5)
            #expect(try await storedRowCount(store, "devices") == 5)
            #expect(try await storedRowCount(store, "tags") == 2)
            #expect(try await storedRowCount(store, "device_tags") == 10)
        }
    }

    @Test("Foreign keys are enforced: a device of an unknown app is not found, not stored", arguments: Backend.allCases)
    func foreignKeysEnforced(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let error = await #expect(throws: StoreError.self) {
                _ = try await store.registerDevice(
                    appID: 4242, DeviceRegistration(token: token(1), environment: .sandbox, channel: .apns))
            }
            #expect(error?.code == .notFound)
            let expected = backend == .sqlite ? "FOREIGN KEY" : "PostgreSQL 23503"  // foreign_key_violation
            #expect(error?.message.contains(expected) == true)
            let stored = try await storedRowCount(store, "devices")
            #expect(stored == 0)
        }
    }

    @Test("An app is found by one vendor setting, the first by id when several have it", arguments: Backend.allCases)
    func findByVendorSetting(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            var first = try await makeApp(store, "first")
            var second = try await makeApp(store, "second")
            first.vendorSettings = ["baidu": ["apikey": "k1", "region": "gz"], "tencent": ["sdkappid": "1400"]]
            second.vendorSettings = [
                "baidu": ["apikey": "k2", "region": "gz"], "easemob": ["org": "demo#app"],
                // Bound, never written into the statement: quotes and placeholders are plain text.
                "jpush": ["appkey": "it's $1 ?"],
            ]
            try await store.updateApp(first)
            try await store.updateApp(second)

            #expect(try await store.app(vendor: "tencent", setting: "sdkappid", value: "1400")?.id == first.id)
            #expect(try await store.app(vendor: "easemob", setting: "org", value: "demo#app")?.id == second.id)
            #expect(try await store.app(vendor: "baidu", setting: "apikey", value: "k2")?.id == second.id)
            #expect(try await store.app(vendor: "baidu", setting: "region", value: "gz")?.id == first.id)
            #expect(try await store.app(vendor: "baidu", setting: "apikey", value: "other") == nil)
            #expect(try await store.app(vendor: "baidu", setting: "sdkappid", value: "1400") == nil)
            #expect(try await store.app(vendor: "nobody", setting: "apikey", value: "k1") == nil)
            #expect(try await store.app(vendor: "bai\"du", setting: "apikey", value: "k1") == nil)
            #expect(try await store.app(vendor: "jpush", setting: "appkey", value: "it's $1 ?")?.id == second.id)
            #expect(try await store.app(vendor: "baidu", setting: "apikey", value: "x' OR '1'='1") == nil)
        }
    }

    @Test(
        "Vendor settings read back exactly, escapes and non-ASCII included; a stored value that is not a string is refused",
        arguments: Backend.allCases)
    func vendorSettingsReadBack(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            var app = try await makeApp(store, "settings")
            app.vendorSettings = [
                "tencent": ["sdkappid": "1400000042", "secret": "a\"b\\c/d\n\u{1}"],
                "easemob": ["org": "演示#app", "emoji": "😀"], "empty": [:],
            ]
            try await store.updateApp(app)
            #expect(try await store.app(id: app.id)?.vendorSettings == app.vendorSettings)
            #expect(
                try await store.app(vendor: "easemob", setting: "org", value: "演示#app")?.vendorSettings
                    == app.vendorSettings)

            let id = app.id
            for corrupt in [#"{"tencent": {"sdkappid": 1400}}"#, #"{"tencent": "x"}"#, "[]"] {
                try await store.sharedDatabase.write { db in
                    try db.execute("UPDATE apps SET vendor_settings = ? WHERE id = ?", [.text(corrupt), .integer(id)])
                }
                await #expect(throws: StoreError.self, "\(corrupt)") { _ = try await store.app(id: id) }
            }
        }
    }
}
