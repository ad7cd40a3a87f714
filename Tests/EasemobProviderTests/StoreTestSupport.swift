import Foundation
import Synchronization
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

/// A `SharedDatabase` that passes everything to `database` and counts what its quick reads
/// cost: each run of a body and each statement a body sends (a PostgreSQL quick read of more
/// than one statement runs its body twice).
final class QuickReadCounter: SharedDatabase {
    let database: any SharedDatabase
    private let counts = Counts()

    init(_ database: any SharedDatabase) { self.database = database }

    var bodies: Int { counts.value.withLock { $0.bodies } }
    var statements: Int { counts.value.withLock { $0.statements } }

    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await database.write(body)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await database.read(body)
    }

    func quickRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        let counts = counts
        return try await database.quickRead { db in
            counts.value.withLock { $0.bodies += 1 }
            return try body(Counting(db: db, counts: counts))
        }
    }

    var dialect: any SQLDialect { database.dialect }

    private final class Counts: Sendable {
        let value = Mutex<(bodies: Int, statements: Int)>((0, 0))
    }

    private struct Counting: SQLExecutor {
        let db: any SQLExecutor
        let counts: Counts

        func execute(_ sql: String, _ arguments: [SQLValue]) throws {
            counts.value.withLock { $0.statements += 1 }
            try db.execute(sql, arguments)
        }

        func query(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
            counts.value.withLock { $0.statements += 1 }
            return try db.query(sql, arguments)
        }

        var lastInsertedRowID: Int64 { db.lastInsertedRowID }
        var changedRows: Int { db.changedRows }
        var dialect: any SQLDialect { db.dialect }
    }
}
