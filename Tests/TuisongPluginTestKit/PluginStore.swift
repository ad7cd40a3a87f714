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

/// A fresh store on `backend` (a `TemporaryStore` file, or a new database in the PostgreSQL test
/// cluster), migrated with the core migrations and the providers' own as the gateway opens it;
/// closed and removed after `body`.
///
///     try await withPluginStore(backend, providers: [BaiduProvider.self]) { store in
///         let baidu = BaiduStore(database: store.sharedDatabase, store: store, clock: clock)
///     }
public func withPluginStore<T>(
    _ backend: PluginStoreBackend, providers: [any PushProvider.Type], clock: any TuisongCore.Clock = SystemClock(),
    _ body: (any GatewayStore) async throws -> T
) async throws -> T {
    switch backend {
    case .sqlite:
        let temporary = try TemporaryStore(providers: providers, clock: clock)
        defer { temporary.remove() }
        return try await body(temporary.store)
    case .postgresql:
        return try await withTestDatabase { url in
            let store = try PostgresStore(
                url: url,
                configuration: .init(
                    clock: clock,
                    pluginMigrations: providers.map {
                        SQLiteStore.PluginSchema(name: $0.name, migrations: $0.migrations)
                    }))
            defer { try? store.close() }
            return try await body(store)
        }
    }
}
