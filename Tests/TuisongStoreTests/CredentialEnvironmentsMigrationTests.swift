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

/// `v19-credentials-both-environments-digests` (SQLite) and
/// `pg13-credentials-both-environments-digests` (PostgreSQL): the `.p8` keys stored before serve
/// both environments (a sandbox iPhone beside a production key is no longer held), certificates
/// keep theirs, and rows without a digest stay distinct. A database left by an older binary
/// (v18 / pg12), upgraded by today's store.
@Suite struct CredentialEnvironmentsMigrationTests {
    /// A production key and a sandbox certificate, as v18 / pg12 stored them.
    static let rows = [
        """
        INSERT INTO apps (id, name, bundle_id, api_key_hash, created_at, updated_at)
        VALUES (1, 'old', 'com.example.old', 'hash-old', 0, 0)
        """,
        """
        INSERT INTO credentials (app_id, kind, environment, team_id, key_id, encrypted_secret, created_at)
        VALUES (1, 'p8', 'production', 'TEAM123456', 'KEY1234567', X'01', 1)
        """,
        """
        INSERT INTO credentials (app_id, kind, environment, subject, encrypted_secret, created_at)
        VALUES (1, 'p12', 'sandbox', 'CN=x', X'01', 2)
        """,
    ]

    @Test func storedSQLiteKeysServeBothEnvironments() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let old = try database.openMigrated(through: Schema.v18Identifier)
        try await old.write { db in for row in Self.rows { try db.execute(sql: row) } }
        try old.close()
        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        try await Self.expectBothEnvironments(store)
    }

    @Test func storedPostgresKeysServeBothEnvironments() async throws {
        try await withTestDatabase { url in
            let old = try PostgresConnection(url: url)
            try PostgresSchema.migrate(old, plugins: [], through: "pg12-receipt-credentials")
            for row in Self.rows { try old.execute(row.replacingOccurrences(of: "X'01'", with: "'\\x01'::bytea")) }
            try old.execute("SELECT setval(pg_get_serial_sequence('apps', 'id'), 1)")
            let store = try PostgresStore(url: url)
            defer { try? store.close() }
            try await Self.expectBothEnvironments(store)
        }
    }

    static func expectBothEnvironments(_ store: any GatewayStore) async throws {
        let stored = try await store.credentials(appID: 1)
        #expect(stored.map(\.servesBothEnvironments) == [true, false])
        #expect(stored.map(\.secretDigest) == [nil, nil])
        // The production key now serves sandbox too; the newer sandbox certificate wins there.
        #expect(try await store.activeCredential(appID: 1, channel: .apns, environment: .production)?.kind == .p8)
        #expect(try await store.activeCredential(appID: 1, channel: .apns, environment: .sandbox)?.kind == .p12)
        let certificate = try #require(stored.last)
        #expect(try await store.deleteCredential(id: certificate.id))
        #expect(try await store.activeCredential(appID: 1, channel: .apns, environment: .sandbox)?.kind == .p8)
    }
}
