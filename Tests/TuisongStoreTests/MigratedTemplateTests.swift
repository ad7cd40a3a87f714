import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore

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
