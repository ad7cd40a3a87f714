import Foundation
import GRDB
import TuisongCore

@testable import TencentProvider

/// A real SQLite file with the plugin's migrations, behind `SharedDatabase`, for testing
/// `TencentStore` on its own.
final class SQLiteSharedDatabase: SharedDatabase {
    let queue: DatabaseQueue
    let path: String

    init(migrations: [PluginMigration] = TencentSchema.migrations) throws {
        path = FileManager.default.temporaryDirectory.appending(path: "tencent-store-\(UUID().uuidString).db").path
        queue = try DatabaseQueue(path: path)
        try queue.write { db in
            for migration in migrations { try db.execute(sql: migration.sql) }
        }
    }

    deinit {
        try? queue.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await queue.write { db in try body(Executor(db: db)) }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await queue.read { db in try body(Executor(db: db)) }
    }

    struct Executor: SQLExecutor {
        let db: Database

        func execute(_ sql: String, _ arguments: [SQLValue]) throws {
            try db.execute(sql: sql, arguments: Self.arguments(arguments))
        }

        func query(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
            try Row.fetchAll(db, sql: sql, arguments: Self.arguments(arguments)).map { row in
                SQLRow(
                    columns: Array(row.columnNames),
                    values: row.databaseValues.map { value in
                        switch value.storage {
                        case .null: .null
                        case .int64(let number): .integer(number)
                        case .double(let number): .real(number)
                        case .string(let text): .text(text)
                        case .blob(let data): .blob(Array(data))
                        }
                    })
            }
        }

        var lastInsertedRowID: Int64 { db.lastInsertedRowID }
        var changedRows: Int { db.changesCount }

        static func arguments(_ values: [SQLValue]) -> StatementArguments {
            StatementArguments(
                values.map { value -> (any DatabaseValueConvertible)? in
                    switch value {
                    case .null: nil
                    case .integer(let number): number
                    case .real(let number): number
                    case .text(let text): text
                    case .blob(let bytes): Data(bytes)
                    }
                })
        }
    }
}
