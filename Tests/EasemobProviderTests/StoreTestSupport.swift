import Foundation
import TuisongCore
import TuisongPluginTestKit
import TuisongStore

@testable import EasemobProvider

/// A real SQLite file with the core schema and the Easemob migrations (the plugin kit's
/// `TemporaryStore`) and one app, for testing `EasemobStore`'s SQL.
final class EasemobTestDatabase: Sendable {
    let temporary: TemporaryStore
    let app: App

    init() async throws {
        temporary = try TemporaryStore(providers: [EasemobProvider.self])
        app = try await temporary.store.createApp(name: "im", bundleID: "com.example.im", apiKeyHash: UUID().uuidString)
    }

    deinit {
        temporary.remove()
    }

    var database: any SharedDatabase { temporary.database }
    var core: SQLiteStore { temporary.store }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await database.read(body)
    }
}
