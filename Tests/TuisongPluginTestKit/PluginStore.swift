import Foundation
import TuisongCore
import TuisongPlugin
import TuisongPostgresTestKit
import TuisongStore

/// The databases a plugin's SQL runs on; a store-level suite runs on each
/// (`@Test(arguments: PluginStoreBackend.allCases)`).
public enum PluginStoreBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgresql

    public var description: String { rawValue }
}

/// A fresh store on `backend` (a new SQLite file in a directory of its own, or a new PostgreSQL
/// database in the test cluster), migrated with the core migrations and the providers' own as the
/// gateway opens it; closed and removed after `body`.
///
///     try await withPluginStore(backend, providers: [BaiduProvider.self]) { store in
///         let baidu = BaiduStore(database: store.sharedDatabase, store: store, clock: clock)
///     }
public func withPluginStore<T>(
    _ backend: PluginStoreBackend, providers: [any PushProvider.Type], clock: any TuisongCore.Clock = SystemClock(),
    _ body: (any GatewayStore) async throws -> T
) async throws -> T {
    try await withTestStore(
        backend, clock: clock, plugins: providers.map { PluginSchema(name: $0.name, migrations: $0.migrations) },
        body)
}

/// A fresh store on `backend` migrated with the core migrations then `plugins`: the one way every
/// test target opens a store on either database (store suites, the delivery engine's, each
/// plugin's). Each is new: the SQLite file a copy of this process's migrated template
/// (`SQLiteTemplates`), the PostgreSQL database one of its template database.
public func withTestStore<T>(
    _ backend: PluginStoreBackend, clock: any TuisongCore.Clock = SystemClock(), plugins: [PluginSchema] = [],
    poolSize: Int = 8, _ body: (any GatewayStore) async throws -> T
) async throws -> T {
    StandardChannels.declare()
    switch backend {
    case .sqlite:
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-kit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appending(path: "nested/tuisong.db").path
        try SQLiteTemplates.copyMigrated(plugins: plugins, to: path)
        let store = try SQLiteStore(path: path, configuration: .init(clock: clock, pluginMigrations: plugins))
        defer { try? store.close() }
        return try await body(store)
    case .postgresql:
        return try await withTestDatabase(template: try migratedTemplate(plugins: plugins)) { url in
            let store = try PostgresStore(
                url: url, configuration: .init(clock: clock, pluginMigrations: plugins, poolSize: poolSize))
            defer { try? store.close() }
            return try await body(store)
        }
    }
}

/// A template database in the PostgreSQL test cluster holding the core schema and `plugins`'
/// migrations as a `PostgresStore` leaves them: a test database copied from it opens without
/// migrating (`TestTemplates`, `TestDatabase(template:)`).
public func migratedTemplate(plugins: [PluginSchema] = []) throws -> String {
    try TestTemplates.database(key: String(reflecting: plugins.map { ($0.name, $0.migrations) })) { url in
        try PostgresStore(url: url, configuration: .init(pluginMigrations: plugins, poolSize: 1)).close()
    }
}
