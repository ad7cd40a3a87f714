import Foundation
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

@Suite struct PostgresSchemaTests {
    static let plugin = SQLiteStore.PluginSchema(
        name: "acme",
        migrations: [
            PluginMigration(
                "1-groups",
                sql: """
                    CREATE TABLE acme_groups (
                        app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                        name TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        blob BLOB,
                        PRIMARY KEY (app_id, name)
                    ) STRICT, WITHOUT ROWID
                    """),
            PluginMigration("2-copy", before: "v8-vendor-columns-leave-the-core", sql: "INSERT INTO nowhere SELECT 1"),
            PluginMigration(
                "3-own", sql: "CREATE INDEX nothing_sqlite ON acme_groups(name)",
                postgres: .sql("CREATE INDEX acme_by_name ON acme_groups(name)")),
        ])

    @Test func aNewDatabaseGetsEveryMigrationOnceEvenWhenNodesStartTogether() async throws {
        try await withTestDatabase { url in
            // Three nodes opening one new database at once: the advisory lock lets one migrate.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        let store = try PostgresStore(url: url, configuration: .init(pluginMigrations: [Self.plugin]))
                        try store.close()
                    }
                }
                try await group.waitForAll()
            }
            let store = try PostgresStore(url: url, configuration: .init(pluginMigrations: [Self.plugin]))
            defer { try? store.close() }
            #expect(try await store.appliedMigrations() == store.migrationNames)
            #expect(store.migrationNames.suffix(3) == ["acme:1-groups", "acme:2-copy", "acme:3-own"])
            let columns = try await store.read { conn in
                try conn.execute(
                    """
                    SELECT column_name, data_type FROM information_schema.columns
                    WHERE table_name = 'acme_groups' ORDER BY column_name
                    """
                ).rows.map { "\($0[0].string ?? ""):\($0[1].string ?? "")" }
            }
            #expect(columns == ["app_id:bigint", "blob:bytea", "created_at:bigint", "name:text"])
            let indexes = try await store.read { conn in
                try conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'acme_groups'").rows.compactMap {
                    $0[0].string
                }
            }
            #expect(indexes.contains("acme_by_name"))
        }
    }

    @Test func theLocationLeavesOutCredentials() {
        #expect(
            PostgresStore.redacted("postgresql://u:secret@db.example:5432/tuisong?sslmode=require")
                == "postgresql://db.example:5432/tuisong")
    }
}
