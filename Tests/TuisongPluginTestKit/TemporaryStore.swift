import Foundation
import Logging
import TuisongCore
import TuisongPlugin
import TuisongPostgresTestKit
import TuisongStore

/// A real SQLite file in a directory of its own, migrated with the core migrations and the
/// given providers' `migrations`, as the gateway opens it. `remove()` closes it and deletes
/// the directory.
///
///     let temporary = try TemporaryStore(providers: [BaiduProvider.self], clock: clock)
///     defer { temporary.remove() }
///     let provider = try BaiduProvider(context: temporary.context(gateway: gateway, secrets: sealer))
public final class TemporaryStore: ProviderTestFixture {
    public let directory: URL
    /// The database file.
    public let path: String
    /// The store itself, for what a test arranges or checks beyond the plugin's view.
    public let store: SQLiteStore
    public let providers: [any PushProvider.Type]
    public let clock: any TuisongCore.Clock

    /// A new, empty database (a copy of this process's migrated template, `SQLiteTemplates`).
    public convenience init(providers: [any PushProvider.Type], clock: any TuisongCore.Clock = SystemClock()) throws {
        try self.init(copying: nil, providers: providers, clock: clock)
    }

    /// A copy of `file` (a database an older build wrote), migrated on open; the file itself
    /// is never opened.
    public init(copying file: URL?, providers: [any PushProvider.Type], clock: any TuisongCore.Clock = SystemClock())
        throws
    {
        StandardChannels.declare()
        directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-kit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appending(path: "tuisong.db").path
        if let file {
            try FileManager.default.copyItem(atPath: file.path, toPath: path)
        } else {
            try SQLiteTemplates.copyMigrated(
                plugins: Self.options(providers: providers, clock: clock).pluginMigrations, to: path)
        }
        self.providers = providers
        self.clock = clock
        store = try SQLiteStore(path: path, configuration: Self.options(providers: providers, clock: clock))
    }

    /// The store options the gateway would use for these providers.
    public static func options(providers: [any PushProvider.Type], clock: any TuisongCore.Clock) -> SQLiteStore.Options
    {
        SQLiteStore.Options(
            clock: clock,
            pluginMigrations: providers.map { SQLiteStore.PluginSchema(name: $0.name, migrations: $0.migrations) })
    }

    /// The database as plugins see it.
    public var database: any SharedDatabase { store.sharedDatabase }
    /// The store as plugins see it.
    public var providerStore: any ProviderStore { store }
    /// IM accounts, their devices, app state and badge counters (core tables).
    public var accounts: any AccountStore { store }

    /// A second store on the same file, opened as a restarted gateway would (migrating what
    /// is missing); the caller closes it.
    public func reopen() throws -> SQLiteStore {
        try SQLiteStore(path: path, configuration: Self.options(providers: providers, clock: clock))
    }

    /// Logs only what is critical.
    public static var quietLogger: Logger {
        var logger = Logger(label: "plugin-test")
        logger.logLevel = .critical
        return logger
    }

    public func remove() {
        try? store.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A store with the given providers' migrations on either database, for a fixture that outlives
/// a closure (a provider behind a loopback server): a new SQLite file (a `TemporaryStore`) or a
/// new database in the PostgreSQL test cluster. `remove()` closes it and deletes the file or
/// drops the database. Within one closure, `withPluginStore` does the same.
public final class PluginTestStore: ProviderTestFixture {
    public let backend: PluginStoreBackend
    /// The store itself, for what a test arranges or checks beyond the plugin's view.
    public let store: any GatewayStore
    public let clock: any TuisongCore.Clock
    private let file: TemporaryStore?
    private let cluster: TestDatabase?

    public init(
        _ backend: PluginStoreBackend, providers: [any PushProvider.Type], clock: any TuisongCore.Clock = SystemClock()
    ) throws {
        self.backend = backend
        self.clock = clock
        switch backend {
        case .sqlite:
            let file = try TemporaryStore(providers: providers, clock: clock)
            self.file = file
            cluster = nil
            store = file.store
        case .postgresql:
            let plugins = providers.map { PluginSchema(name: $0.name, migrations: $0.migrations) }
            let cluster = try TestDatabase(template: migratedTemplate(plugins: plugins))
            do {
                store = try PostgresStore(
                    url: cluster.url, configuration: .init(clock: clock, pluginMigrations: plugins, poolSize: 4))
            } catch {
                cluster.drop()
                throw error
            }
            self.cluster = cluster
            file = nil
        }
    }

    /// The database as plugins see it.
    public var database: any SharedDatabase { store.sharedDatabase }

    public func remove() {
        if let file {
            file.remove()
        } else {
            try? store.close()
            cluster?.drop()
        }
    }
}

/// A store a provider's tests run it on (`TemporaryStore`, `PluginTestStore`): what the gateway
/// hands the provider is built the same way on each.
public protocol ProviderTestFixture: Sendable {
    /// The store as the gateway would hand it over.
    var fixtureStore: any GatewayStore { get }
    var clock: any TuisongCore.Clock { get }
}

extension TemporaryStore {
    public var fixtureStore: any GatewayStore { store }
}

extension PluginTestStore {
    public var fixtureStore: any GatewayStore { store }
}

extension ProviderTestFixture {
    /// What the gateway hands a provider, on this store; `compute` nil: a pool of one thread.
    public func context(
        gateway: any PushGateway, secrets: any SecretSealer, configuration: JSONValue? = nil,
        logger: Logger = TemporaryStore.quietLogger, compute: ComputePool? = nil,
        appChanges: AppChangeNotices = AppChangeNotices()
    ) -> ProviderContext {
        let store = fixtureStore
        return ProviderContext(
            store: store, accounts: store, database: store.sharedDatabase, gateway: gateway, secrets: secrets,
            clock: clock, logger: logger, configuration: configuration,
            compute: compute ?? ComputePool(threads: 1, queueLimit: 16), appChanges: appChanges)
    }
}
