import Foundation
import GRDB
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// v18 / pg12: receipt callback credentials per app and service (the key sealed by the
/// gateway), the apps that predate them, and `apps.app_receipts`.
@Suite struct ReceiptCredentialStoreTests {
    static func credential(_ appID: Int64, _ channel: PushChannel, _ user: String, _ key: [UInt8])
        -> ReceiptCallbackCredential
    {
        ReceiptCallbackCredential(
            appID: appID, channel: channel, userName: user, encryptedKey: key,
            updatedAt: Date(timeIntervalSince1970: 1_750_000_000))
    }

    @Test(arguments: Backend.allCases)
    func theFirstCredentialStoredWinsAndAReplacementTakesItsPlace(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let other = try await makeApp(store, "other")
            #expect(try await store.receiptCallbackCredentials(appID: app.id) == ReceiptCallbackCredentials())

            let first = try await store.addReceiptCallbackCredential(Self.credential(app.id, .huawei, "u1", [1, 2, 3]))
            #expect(first.userName == "u1" && first.encryptedKey == [1, 2, 3])
            // Another node made one at the same moment: the one stored first is everyone's.
            let second = try await store.addReceiptCallbackCredential(Self.credential(app.id, .huawei, "u2", [9]))
            #expect(second.userName == "u1" && second.encryptedKey == [1, 2, 3])
            _ = try await store.addReceiptCallbackCredential(Self.credential(app.id, .harmony, "h", [4]))
            _ = try await store.addReceiptCallbackCredential(Self.credential(other.id, .huawei, "o", [5]))

            try await store.replaceReceiptCallbackCredential(Self.credential(app.id, .huawei, "typed", [7, 7]))
            let stored = try await store.receiptCallbackCredentials(appID: app.id)
            #expect(stored.byChannel[.huawei]?.userName == "typed")
            #expect(stored.byChannel[.huawei]?.encryptedKey == [7, 7])
            #expect(stored.byChannel[.harmony]?.userName == "h")
            #expect(!stored.predatesStoredCredentials, "an app made since v18 gets new credentials")
            #expect(try await store.receiptCallbackCredentials(appID: other.id).byChannel[.huawei]?.userName == "o")

            await #expect(throws: StoreError.self) {
                _ = try await store.addReceiptCallbackCredential(Self.credential(999_999, .huawei, "x", [1]))
            }
            await #expect(throws: StoreError.self) {
                try await store.replaceReceiptCallbackCredential(Self.credential(999_999, .huawei, "x", [1]))
            }
            // Deleting the app deletes its credentials.
            #expect(try await store.deleteApp(id: app.id))
            #expect(try await store.receiptCallbackCredentials(appID: app.id).byChannel.isEmpty)
        }
    }

    @Test(arguments: Backend.allCases)
    func anAppsOwnReceiptsSettingIsKept(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            var app = try await makeApp(store)
            #expect(!app.appReceipts)
            app.appReceipts = true
            try await store.updateApp(app)
            #expect(try await store.app(id: app.id)?.appReceipts == true)
            #expect(try await store.app(apiKeyHash: app.apiKeyHash)?.appReceipts == true)
            #expect(try await store.apps().first { $0.id == app.id }?.appReceipts == true)
            app.appReceipts = false
            try await store.updateApp(app)
            #expect(try await store.app(id: app.id)?.appReceipts == false)
        }
    }

    /// An app that existed before v18 had its callback credentials derived from the master key:
    /// it is marked, so its first stored credential of a service is the derived one.
    @Test func anSQLiteAppFromBeforeV18IsMarkedAsPredatingStoredCredentials() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let old = try database.openMigrated(through: Schema.v17Identifier)
        try await old.write { db in
            try db.execute(
                sql: """
                    INSERT INTO apps (id, name, bundle_id, api_key_hash, created_at, updated_at)
                    VALUES (1, 'old', 'com.example.old', 'hash-old', 0, 0)
                    """)
        }
        try old.close()
        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        #expect(try await store.receiptCallbackCredentials(appID: 1).predatesStoredCredentials)
        #expect(try await store.app(id: 1)?.appReceipts == false)
        let new = try await makeApp(store, "new")
        #expect(try await !store.receiptCallbackCredentials(appID: new.id).predatesStoredCredentials)
    }

    @Test func aPostgresAppFromBeforePg12IsMarkedAsPredatingStoredCredentials() async throws {
        try await withTestDatabase { url in
            let old = try PostgresConnection(url: url)
            try PostgresSchema.migrate(old, plugins: [], through: "pg11-webhooks")
            try old.execute(
                """
                INSERT INTO apps (id, name, bundle_id, api_key_hash, created_at, updated_at)
                VALUES (1, 'old', 'com.example.old', 'hash-old', 0, 0)
                """)
            try old.execute("SELECT setval(pg_get_serial_sequence('apps', 'id'), 1)")
            let store = try PostgresStore(url: url)
            defer { try? store.close() }
            #expect(try await store.receiptCallbackCredentials(appID: 1).predatesStoredCredentials)
            #expect(try await store.app(id: 1)?.appReceipts == false)
            let new = try await makeApp(store, "new")
            #expect(try await !store.receiptCallbackCredentials(appID: new.id).predatesStoredCredentials)
        }
    }
}
