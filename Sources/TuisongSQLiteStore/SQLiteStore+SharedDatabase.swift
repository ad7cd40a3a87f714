import Foundation
import GRDB
internal import GRDBSQLite
import TuisongCore
import TuisongSQLStore

/// `SharedDatabase` on the store's GRDB pool: a plugin's `write` is one immediate
/// transaction on the writer connection (serialized with every other write of the gateway),
/// a `read` one deferred transaction on a reader (one WAL snapshot). SQLite's errors come back
/// as `StoreError` (`PluginDatabaseErrors`).
public struct SQLiteSharedDatabase: SharedDatabase {
    let store: SQLiteStore

    public var dialect: any SQLDialect { SQLiteDialect() }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        defer { store.checkpointer.noteCommit() }
        return try await store.health.noting {
            try await PluginDatabaseErrors.mapping(DatabaseError.self, by: ErrorMapping.storeError) {
                try await store.pool.write { db in try body(GRDBExecutor(db: db)) }
            }
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await PluginDatabaseErrors.mapping(DatabaseError.self, by: ErrorMapping.storeError) {
            try await store.pool.read { db in try body(GRDBExecutor(db: db)) }
        }
    }
}

extension SQLiteStore {
    /// The database as plugins see it (`ProviderContext.database`).
    public var sharedDatabase: any SharedDatabase { SQLiteSharedDatabase(store: self) }
}

/// One GRDB connection, inside the transaction `SQLiteSharedDatabase` opened.
final class GRDBExecutor: SQLExecutor, SQLRowVisitor {
    let db: Database
    private(set) var changedRows = 0

    var dialect: any SQLDialect { SQLiteDialect() }

    init(db: Database) {
        self.db = db
    }

    func execute(_ sql: String, _ arguments: [SQLValue]) throws {
        if arguments.isEmpty {
            // May hold several statements (`;`-separated), like a migration.
            try db.execute(sql: sql)
        } else if let statement = try Self.reusable(sql, db) {
            try Self.bind(arguments, to: statement)
            try statement.execute()
        } else {
            try db.execute(sql: sql, arguments: Self.arguments(arguments))
        }
        changedRows = db.changesCount
    }

    /// Each row read off GRDB's cursor in place. SQLite plans a kept statement when it runs it
    /// (with its values where they matter), so every statement may be kept.
    func forEachRow(
        _ sql: String, _ arguments: [SQLValue], plannedEachRun: Bool, _ body: (any ColumnValues) throws -> Void
    ) throws {
        let statement = try Self.reusable(sql, db) ?? db.makeStatement(sql: sql)
        let cursor = try Row.fetchCursor(statement, arguments: Self.arguments(arguments))
        while let row = try cursor.next() { try body(row) }
    }

    func query(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
        let statement = try Self.reusable(sql, db) ?? db.makeStatement(sql: sql)
        // One list of column names shared by every row, and the values read from the cursor's
        // row in place: no `Row` copied and no names array made per row (a receipt POST's upsert
        // returns a row per receipt).
        let columns = statement.columnNames
        let cursor = try Row.fetchCursor(statement, arguments: Self.arguments(arguments))
        var rows: [SQLRow] = []
        while let row = try cursor.next() {
            rows.append(SQLRow(columns: columns, values: row.databaseValues.map(Self.value)))
        }
        // `changedRows` stays what the last `execute` changed (the protocol's promise): SQLite's
        // count is not reset by a SELECT, so reading it here would report a stale number.
        return rows
    }

    var lastInsertedRowID: Int64 { db.lastInsertedRowID }

    /// The connection's prepared statement for a short single statement, compiled once: a
    /// plugin running one INSERT per row (a badge per account of a 1,000-device page) otherwise
    /// has SQLite parse and GRDB authorize the same text a thousand times, the larger part of
    /// the per-recipient path's write time. Long texts are kept only when they carry
    /// `SQLList.marker`: an `SQLList`, whose padded lengths give a handful of texts, or a list
    /// bound as one parameter (`SQLDialect.list`), one text; other long texts are usually IN
    /// lists whose length varies with the page, and caching each length would only fill the
    /// cache.
    static func reusable(_ sql: String, _ db: Database) throws -> Statement? {
        guard !sql.utf8.contains(UInt8(ascii: ";")) else { return nil }
        guard sql.utf8.count <= 512 || sql.contains(SQLList.marker) else { return nil }
        return try db.cachedStatement(sql: sql)
    }

    /// Binds `values` to the statement's placeholders straight through SQLite, which GRDB then
    /// runs as bound. `StatementArguments` converts each value through an existential and a
    /// generic initializer the runtime instantiates per call: 4.5 % of the gateway's CPU during
    /// a push with a receipt per device, whose upserts bind 1,024 values a statement.
    static func bind(_ values: [SQLValue], to statement: Statement) throws {
        // Resets the statement and clears its bindings; GRDB then takes them as valid and bound.
        statement.setUncheckedArguments(StatementArguments())
        if let (position, code) = try SQLiteBinding.bind(values, to: statement.sqliteStatement, sql: statement.sql) {
            throw StoreError(.unavailable, "binding ?\(position) of \(statement.sql): SQLite error \(code)")
        }
    }

    /// Built from optional existentials on purpose: GRDB's initializer for a sequence of a
    /// concrete value type maps it with a key path, which the runtime instantiates on every call
    /// (unspecialized across modules) — ~2 % of the CPU of an accepted chat message, every
    /// query paying it.
    static func arguments(_ values: [SQLValue]) -> StatementArguments {
        var converted: [(any DatabaseValueConvertible)?] = []
        converted.reserveCapacity(values.count)
        for value in values {
            switch value {
            case .null: converted.append(nil)
            case .integer(let v): converted.append(v)
            case .real(let v): converted.append(v)
            case .text(let v): converted.append(v)
            case .blob(let v): converted.append(Data(v))
            }
        }
        return StatementArguments(converted)
    }

    static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: .null
        case .int64(let v): .integer(v)
        case .double(let v): .real(v)
        case .string(let v): .text(v)
        case .blob(let v): .blob(Array(v))
        }
    }
}

extension SQLiteSharedDatabase {
    /// On a point reader, on the calling thread, in one read transaction; a locked database
    /// (the reader does not wait here) sends the closure to `read`, which waits off this thread.
    public func quickRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        do {
            return try store.pointReaders.withConnection { connection in
                try connection.inReadTransaction { try body(PointReaderExecutor(connection: connection)) }
            }
        } catch is PointReaderBusy {
            store.pointReaders.noteBusyFallback()
            return try await read(body)
        }
    }
}

/// A point reader's connection as a read's `SQLExecutor`: queries only.
final class PointReaderExecutor: SQLExecutor {
    let connection: PointReaderConnection

    init(connection: PointReaderConnection) {
        self.connection = connection
    }

    var dialect: any SQLDialect { SQLiteDialect() }

    func execute(_ sql: String, _ arguments: [SQLValue]) throws {
        throw StoreError(.unavailable, "a quick read cannot write: \(sql)")
    }

    func query(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
        try connection.rows(sql, arguments)
    }

    var lastInsertedRowID: Int64 { 0 }
    var changedRows: Int { 0 }
}
