import Foundation
import TuisongCore
import TuisongPluginTestKit
import TuisongStore

@testable import EasemobProvider

/// A database with the core schema and the Easemob migrations and one app, for testing
/// `EasemobStore`'s SQL: a real SQLite file (the plugin kit's `TemporaryStore`, removed with
/// this object) or, through `on(_:_:)`, a database in the PostgreSQL test cluster.
final class EasemobTestDatabase: Sendable {
    let core: any GatewayStore
    let app: App
    private let temporary: TemporaryStore?

    /// On a new SQLite file.
    convenience init() async throws {
        let temporary = try TemporaryStore(providers: [EasemobProvider.self])
        try await self.init(core: temporary.store, temporary: temporary)
    }

    private init(core: any GatewayStore, temporary: TemporaryStore?) async throws {
        self.core = core
        self.temporary = temporary
        app = try await core.createApp(name: "im", bundleID: "com.example.im", apiKeyHash: UUID().uuidString)
    }

    deinit {
        temporary?.remove()
    }

    /// Runs `body` with a new database on `backend`.
    static func on<T>(_ backend: PluginStoreBackend, _ body: (EasemobTestDatabase) async throws -> T) async throws -> T
    {
        switch backend {
        case .sqlite:
            return try await body(EasemobTestDatabase())
        case .postgresql:
            return try await withPluginStore(.postgresql, providers: [EasemobProvider.self]) { core in
                try await body(EasemobTestDatabase(core: core, temporary: nil))
            }
        }
    }

    var database: any SharedDatabase { core.sharedDatabase }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await database.read(body)
    }
}
