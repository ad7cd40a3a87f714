import Foundation
import GRDB
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit
import TuisongTransportKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// `v24-uploaded-credentials-are-channel-credentials` (SQLite) and
/// `pg18-uploaded-credentials-are-channel-credentials` (PostgreSQL): a database left by the
/// previous binary (v23 / pg17) holding APNs credentials in `credentials` is upgraded by today's
/// store, and every credential reads as it did — ids, fields, status, sealed secret and digest —
/// now from `channel_credentials`, with the channels' credentials beside them unchanged.
@Suite struct UploadedCredentialsMigrationTests {
    /// A `.p8` key serving both environments and a failing sandbox certificate with a selector,
    /// topics and an expiry, as the previous schema stored them.
    static func rows(blob: (String) -> String) -> [String] {
        [
            """
            INSERT INTO apps (id, name, bundle_id, api_key_hash, created_at, updated_at)
            VALUES (1, 'old', 'com.example.old', 'hash-old', 0, 0)
            """,
            """
            INSERT INTO credentials (id, app_id, kind, environment, team_id, key_id, encrypted_secret, status,
                created_at, both_environments, secret_digest)
            VALUES (1, 1, 'p8', 'production', 'TEAM123456', 'KEY1234567', \(blob("0a0b0c")), 'ok', 1000, 1, 'digest-1')
            """,
            """
            INSERT INTO credentials (id, app_id, kind, environment, subject, topic, expires_at, encrypted_secret,
                status, status_reason, created_at, selector, both_environments, secret_digest)
            VALUES (2, 1, 'p12', 'sandbox', 'CN=Apple Push Services: com.example.old',
                '["com.example.old","com.example.old.voip"]', 1900000000000, \(blob("0d0e")), 'failing',
                'BadCertificate', 2000, 'cert-a', 0, 'digest-2')
            """,
        ]
    }

    /// An FCM credential stored beside them, in `channel_credentials` already.
    static func fcmRow(blob: (String) -> String) -> String {
        """
        INSERT INTO channel_credentials (id, app_id, channel, vendor_app_id, client_id, encrypted_secret, options,
            created_at, secret_digest)
        VALUES (1, 1, 'fcm', 'project-1', 'push@project-1.iam', \(blob("0102")), '{"a":"b"}', 500, 'digest-fcm')
        """
    }

    static let expected = [
        CredentialRecord(
            id: 1, appID: 1, channel: .apns, kind: .p8, environment: .production, teamID: "TEAM123456",
            keyID: "KEY1234567", subject: nil, topics: [], expiresAt: nil, encryptedSecret: [0x0a, 0x0b, 0x0c],
            status: "ok", statusReason: nil, createdAt: Date(timeIntervalSince1970: 1), selector: nil,
            servesBothEnvironments: true, secretDigest: "digest-1"),
        CredentialRecord(
            id: 2, appID: 1, channel: .apns, kind: .p12, environment: .sandbox, teamID: nil, keyID: nil,
            subject: "CN=Apple Push Services: com.example.old", topics: ["com.example.old", "com.example.old.voip"],
            expiresAt: Date(timeIntervalSince1970: 1_900_000_000), encryptedSecret: [0x0d, 0x0e], status: "failing",
            statusReason: "BadCertificate", createdAt: Date(timeIntervalSince1970: 2), selector: "cert-a",
            servesBothEnvironments: false, secretDigest: "digest-2"),
    ]

    static let sqliteBlob: @Sendable (String) -> String = { "X'\($0)'" }
    static let postgresBlob: @Sendable (String) -> String = { "'\\x\($0)'::bytea" }

    @Test(arguments: [false, true])
    func anSQLiteDatabaseAtV23ReadsItsCredentialsUnchanged(withFCM: Bool) async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let old = try database.openMigrated(through: Schema.v23Identifier)
        try await old.write { db in
            for row in Self.rows(blob: Self.sqliteBlob) { try db.execute(sql: row) }
            if withFCM { try db.execute(sql: Self.fcmRow(blob: Self.sqliteBlob)) }
        }
        try old.close()
        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        #expect(try await store.appliedMigrations() == store.migrationNames)
        try await Self.expectUnchanged(store, withFCM: withFCM)
    }

    @Test(arguments: [false, true])
    func aPostgresDatabaseAtPg17ReadsItsCredentialsUnchanged(withFCM: Bool) async throws {
        try await withTestDatabase { url in
            let old = try PostgresConnection(url: url)
            try PostgresSchema.migrate(old, plugins: [], through: "pg17-receipt-inbox")
            for row in Self.rows(blob: Self.postgresBlob) { try old.execute(row) }
            if withFCM { try old.execute(Self.fcmRow(blob: Self.postgresBlob)) }
            for table in ["apps", "credentials", "channel_credentials"] {
                try old.execute(
                    "SELECT setval(pg_get_serial_sequence('\(table)', 'id'), max(id)) FROM \(table) HAVING count(*) > 0"
                )
            }
            let store = try PostgresStore(url: url)
            defer { try? store.close() }
            #expect(try await store.appliedMigrations() == store.migrationNames)
            try await Self.expectUnchanged(store, withFCM: withFCM)
        }
    }

    /// With no channel credential stored, every id is kept; with one, the moved rows follow it
    /// (ids +1), everything else unchanged.
    static func expectUnchanged(_ store: any GatewayStore, withFCM: Bool) async throws {
        let shift: Int64 = withFCM ? 1 : 0
        let expected = Self.expected.map { record in
            var record = record
            record.id += shift
            return record
        }
        #expect(try await store.credentials(appID: 1) == expected)
        #expect(try await store.credential(id: 2 + shift) == expected[1])
        #expect(try await store.credential(appID: 1, secretDigest: "digest-1") == expected[0])
        #expect(try await store.activeCredential(appID: 1, channel: .apns, environment: .sandbox) == expected[0])
        let forms = try await store.formCredentials(appID: 1)
        #expect(forms.map(\.channel) == (withFCM ? [.fcm] : []))
        if withFCM {
            let fcm = try #require(forms.first)
            #expect(fcm.id == 1 && fcm.vendorAppID == "project-1" && fcm.clientID == "push@project-1.iam")
            #expect(fcm.encryptedSecret == [0x01, 0x02] && fcm.options == ["a": "b"] && fcm.environment == nil)
            #expect(try await store.credential(id: 1) == nil)
        }
        // A credential stored after the upgrade takes the next id, and a repeated digest still answers
        // the first.
        let added = try await store.addCredential(
            NewCredential(
                appID: 1, channel: .apns, kind: .p8, environment: .sandbox, teamID: "TEAM654321", keyID: "KEY7654321",
                subject: nil, topics: [], expiresAt: nil, encryptedSecret: [9], secretDigest: "digest-3"))
        #expect(added.id == 3 + shift)
        let repeated = try await store.addCredential(
            NewCredential(
                appID: 1, channel: .apns, kind: .p8, environment: .sandbox, teamID: "TEAM654321", keyID: "KEY7654321",
                subject: nil, topics: [], expiresAt: nil, encryptedSecret: [9], secretDigest: "digest-1"))
        #expect(repeated == expected[0])
    }
}
