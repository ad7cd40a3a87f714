import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// `v19-credentials-both-environments-digests` (SQLite) and
/// `pg13-credentials-both-environments-digests` (PostgreSQL): the `.p8` keys stored before serve
/// both environments (a sandbox iPhone beside a production key is no longer held), certificates
/// keep theirs, and rows without a digest stay distinct.
@Suite struct CredentialEnvironmentsMigrationTests {
    @Test(arguments: Backend.allCases)
    func storedKeysServeBothEnvironments(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let (blob, migration): (String, String) =
                switch backend {
                case .sqlite: ("X'01'", Schema.v19CredentialsBothEnvironmentsDigests)
                case .postgresql: ("'\\x01'::bytea", PostgresSchema.credentialsBothEnvironmentsDigests)
                }
            // The tables as v18 / pg12 left them, a production key and a sandbox certificate, then
            // the migration.
            try await store.sharedDatabase.write { db in
                try db.execute(
                    """
                    DROP INDEX credentials_by_digest;
                    DROP INDEX channel_credentials_by_digest;
                    ALTER TABLE credentials DROP COLUMN both_environments;
                    ALTER TABLE credentials DROP COLUMN secret_digest;
                    ALTER TABLE channel_credentials DROP COLUMN secret_digest;
                    """)
                try db.execute(
                    """
                    INSERT INTO credentials (app_id, kind, environment, team_id, key_id, encrypted_secret, created_at)
                    VALUES (\(app.id), 'p8', 'production', 'TEAM123456', 'KEY1234567', \(blob), 1)
                    """)
                try db.execute(
                    """
                    INSERT INTO credentials (app_id, kind, environment, subject, encrypted_secret, created_at)
                    VALUES (\(app.id), 'p12', 'sandbox', 'CN=x', \(blob), 2)
                    """)
                try db.execute(migration)
            }
            let stored = try await store.credentials(appID: app.id)
            #expect(stored.map(\.servesBothEnvironments) == [true, false])
            #expect(stored.map(\.secretDigest) == [nil, nil])
            // The production key now serves sandbox too; the newer sandbox certificate wins there.
            #expect(try await store.activeCredential(appID: app.id, environment: .production)?.kind == .p8)
            #expect(try await store.activeCredential(appID: app.id, environment: .sandbox)?.kind == .p12)
            try await store.sharedDatabase.write { db in try db.execute("DELETE FROM credentials WHERE kind = 'p12'") }
            #expect(try await store.activeCredential(appID: app.id, environment: .sandbox)?.kind == .p8)
        }
    }
}
