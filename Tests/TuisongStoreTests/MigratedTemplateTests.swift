import Foundation
import GRDB
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore

/// The PostgreSQL tests' databases are copies of a template migrated once per process
/// (`migratedTemplate`, `TestTemplates`): a copy must be what migrating a new database makes,
/// and each copy a database of its own.
@Suite struct MigratedTemplateTests {
    static let plugins = [
        PluginSchema(
            name: "probe",
            migrations: [PluginMigration("1-rows", sql: "CREATE TABLE probe_rows (id INTEGER PRIMARY KEY)")]
        )
    ]

    @Test func aCopyHoldsEveryMigrationAndIsADatabaseOfItsOwn() async throws {
        let template = try migratedTemplate(plugins: Self.plugins)
        #expect(try migratedTemplate(plugins: Self.plugins) == template, "made once per process")
        #expect(try migratedTemplate() != template, "another schema, another template")

        let first = try TestDatabase(template: template)
        defer { first.drop() }
        let second = try TestDatabase(template: template)
        defer { second.drop() }
        let store = try PostgresStore(url: first.url, configuration: .init(pluginMigrations: Self.plugins, poolSize: 1))
        defer { try? store.close() }
        #expect(try await store.appliedMigrations() == store.migrationNames)
        #expect(store.migrationNames.contains("probe:1-rows"))

        try PostgresConnection(url: first.url).execute("INSERT INTO probe_rows VALUES (1)")
        let counted = try PostgresConnection(url: second.url).execute("SELECT count(*) FROM probe_rows")
        #expect(counted.rows.first?[0].int == 0)
    }
}

/// The SQLite tests' new stores are copies of a file migrated once per process
/// (`SQLiteTemplates`): a copy must hold what migrating a new file makes — every migration
/// applied, the same schema — and each copy be a database of its own.
@Suite struct SQLiteTemplateTests {
    /// Every table, index, view and trigger's SQL, by name.
    static func schema(_ path: String) throws -> [String] {
        let database = try GRDB.DatabaseQueue(path: path)
        defer { try? database.close() }
        return try database.read { (db: GRDB.Database) in
            try String.fetchAll(
                db,
                sql: "SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
        }
    }

    @Test func aCopyIsWhatMigratingANewFileMakesAndADatabaseOfItsOwn() async throws {
        let plugins = MigratedTemplateTests.plugins
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-template-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let migrated = directory.appending(path: "migrated/tuisong.db").path
        try SQLiteStore(path: migrated, configuration: .init(pluginMigrations: plugins)).close()

        let first = directory.appending(path: "first/tuisong.db").path
        let second = directory.appending(path: "second/tuisong.db").path
        try SQLiteTemplates.copyMigrated(plugins: plugins, to: first)
        try SQLiteTemplates.copyMigrated(plugins: plugins, to: second)
        #expect(try Self.schema(first) == Self.schema(migrated))

        let store = try SQLiteStore(path: first, configuration: .init(pluginMigrations: plugins))
        #expect(try await store.appliedMigrations() == store.migrationNames)
        #expect(store.migrationNames.contains("probe:1-rows"))
        try await store.sharedDatabase.write { try $0.execute("INSERT INTO probe_rows VALUES (1)") }
        try store.close()
        let other = try GRDB.DatabaseQueue(path: second)
        defer { try? other.close() }
        let counted = try await other.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM probe_rows") }
        #expect(counted == 0)
    }
}
