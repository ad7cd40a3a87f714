import Foundation
import GRDB
import TuisongCore
import TuisongStore

@testable import EasemobProvider

/// A real SQLite file with the gateway's core schema (through `SQLiteStore`) and the Easemob
/// migrations, and a `SharedDatabase` over it on GRDB, for testing `EasemobStore`'s SQL.
final class EasemobTestDatabase: SharedDatabase, @unchecked Sendable {
    // @unchecked: DatabaseQueue serializes every access itself; the other fields are immutable.
    let directory: URL
    let core: SQLiteStore
    let queue: DatabaseQueue
    let app: App

    init() async throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-easemob-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appending(path: "tuisong.db").path
        core = try SQLiteStore(path: path)
        app = try await core.createApp(name: "im", bundleID: "com.example.im", apiKeyHash: UUID().uuidString)
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        queue = try DatabaseQueue(path: path, configuration: configuration)
        try await queue.write { db in
            for migration in EasemobSchema.migrations { try db.execute(sql: migration.sql) }
        }
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await queue.write { db in try body(Executor(db: db)) }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await queue.read { db in try body(Executor(db: db)) }
    }

    private struct Executor: SQLExecutor {
        let db: Database

        func execute(_ sql: String, _ arguments: [SQLValue]) throws {
            try db.execute(sql: sql, arguments: StatementArguments(arguments.map(Self.value)))
        }

        func query(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
            try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments.map(Self.value))).map { row in
                SQLRow(
                    columns: Array(row.columnNames),
                    values: row.databaseValues.map { value in
                        switch value.storage {
                        case .null: .null
                        case .int64(let v): .integer(v)
                        case .double(let v): .real(v)
                        case .string(let v): .text(v)
                        case .blob(let v): .blob(Array(v))
                        }
                    })
            }
        }

        var lastInsertedRowID: Int64 { db.lastInsertedRowID }
        var changedRows: Int { db.changesCount }

        static func value(_ value: SQLValue) -> (any DatabaseValueConvertible)? {
            switch value {
            case .null: nil
            case .integer(let v): v
            case .real(let v): v
            case .text(let v): v
            case .blob(let v): Data(v)
            }
        }
    }
}
