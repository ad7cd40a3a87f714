import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

/// `SharedDatabase` on the PostgreSQL store's pool: a plugin's `write` is one transaction
/// (READ COMMITTED, as every write of the store), a `read` one REPEATABLE READ, READ ONLY
/// transaction: one snapshot, like SQLite's deferred read transaction.
///
/// Plugins write `?` placeholders (`SQLDialect` says so); the executor numbers them (`$1`, `$2`,
/// …) outside quoted strings, identifiers and comments. Values map as `.integer` ↔ `int8`,
/// `.real` ↔ `float8`, `.text` ↔ text, `.blob` ↔ `bytea`; a boolean result (a comparison,
/// `EXISTS`) comes back as `.integer` 0 or 1, as SQLite gives it. A `numeric` result (`sum` of
/// an integer column) comes back as `.text`: cast it (`sum(n)::bigint`) to read an integer.
///
/// PostgreSQL's errors come back as `StoreError` (`PluginDatabaseErrors`). Unlike SQLite, a
/// statement that fails inside `write` aborts the transaction: the closure should let the error
/// propagate (catching it and going on makes the commit fail).
public struct PostgresSharedDatabase: SharedDatabase {
    let store: PostgresStore

    public var dialect: any SQLDialect { PostgresDialect() }

    public var statementsAreRoundTrips: Bool { true }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        // A plugin's write that finds the disk full or the server gone is told to `/healthz` as
        // the core's own writes are (the plugin's own errors are not trouble).
        try await store.health.noting(timedBy: store.writeObserver) {
            try await PluginDatabaseErrors.mapping(PostgresError.self, by: PostgresStore.storeError) {
                try await store.pool.transaction { conn in try body(PostgresExecutor(conn)) }
            }
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await PluginDatabaseErrors.mapping(PostgresError.self, by: PostgresStore.storeError) {
            try await store.pool.withConnection { conn in
                // Sent with the body's first statement: a plugin's lookup (two per IM chat line)
                // costs two round trips, not three (issue #47).
                conn.deferBegin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                do {
                    let result = try body(PostgresExecutor(conn))
                    if !conn.endDeferredBegin() { try conn.execute("COMMIT") }
                    return result
                } catch {
                    if !conn.endDeferredBegin(), conn.isConnected { _ = try? conn.execute("ROLLBACK") }
                    throw error
                }
            }
        }
    }

    /// A body of one statement (every plugin's lookup on the per-message path) costs one round
    /// trip: the statement goes in a read-only transaction of its own, BEGIN and COMMIT in the
    /// same pipeline (a `read` costs two: BEGIN with the statement, then COMMIT). One
    /// statement is one snapshot; a second one could not share it, so it is refused and the
    /// body runs again as a `read` (`quickRead`'s closure may run twice). Writes are refused, as
    /// on SQLite's point readers.
    public func quickRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        let answered: T? = try await PluginDatabaseErrors.mapping(PostgresError.self, by: PostgresStore.storeError) {
            try await store.pool.withConnection { conn -> T? in
                let executor = PostgresExecutor(conn, oneStatementRead: true)
                do {
                    let result = try body(executor)
                    return executor.refusedSecondStatement ? nil : result
                } catch {
                    // Whatever the body made of the refusal, it runs again as a read.
                    if executor.refusedSecondStatement { return nil }
                    throw error
                }
            }
        }
        if let answered { return answered }
        return try await read(body)
    }
}

extension PostgresStore {
    /// The database as plugins see it (`ProviderContext.database`).
    public var sharedDatabase: any SharedDatabase { PostgresSharedDatabase(store: self) }
}

/// One pooled connection, inside the transaction `PostgresSharedDatabase` opened.
final class PostgresExecutor: SQLExecutor, SQLRowVisitor {
    let conn: PostgresConnection
    /// The store's own queries (`SQLStoreBackend`): each statement kept prepared on its
    /// connection (types inferred by the server, as the store's hand-written statements are);
    /// a plugin's are sent with their values' types and not kept (see `run`).
    let prepares: Bool
    /// `PostgresSharedDatabase.quickRead`'s: one query, in a read-only transaction of its own.
    let oneStatementRead: Bool
    /// A `oneStatementRead` executor was asked for a second statement and refused it.
    private(set) var refusedSecondStatement = false
    private var statementsRun = 0
    private(set) var changedRows = 0
    /// Whether the last `execute` inserted rows: `lastInsertedRowID` asks the server then.
    private var inserted = false
    private var lastRowID: Int64 = 0

    init(_ conn: PostgresConnection, prepares: Bool = false, oneStatementRead: Bool = false) {
        self.conn = conn
        self.prepares = prepares
        self.oneStatementRead = oneStatementRead
    }

    /// What begins a `oneStatementRead` executor's statement: one statement is one snapshot at
    /// any isolation level.
    static let oneStatementBegin = "BEGIN READ ONLY"

    var dialect: any SQLDialect { PostgresDialect() }

    func execute(_ sql: String, _ arguments: [SQLValue]) throws {
        if oneStatementRead { throw StoreError(.unavailable, "a quick read cannot write: \(sql)") }
        let result: PostgresResult
        if arguments.isEmpty && !Self.hasPlaceholder(sql) {
            // May hold several statements (`;`-separated), like a migration.
            result = try conn.execute(sql)
        } else {
            result = try run(sql, arguments)
        }
        changedRows = result.affectedRows ?? 0
        inserted = result.commandTag.hasPrefix("INSERT") && changedRows > 0
    }

    /// Each row of the result as libpq answered it, no `SQLRow` made. Planned each run: sent as
    /// an unnamed statement, which the server plans for these values.
    func forEachRow(
        _ sql: String, _ arguments: [SQLValue], plannedEachRun: Bool, _ body: (any ColumnValues) throws -> Void
    ) throws {
        let result: PostgresResult
        if !plannedEachRun {
            result = try run(sql, arguments)
        } else if oneStatementRead {
            try countOneStatement()
            result = try conn.execute(
                Self.numbered(sql), arguments.map(Self.parameter), inTransactionOfItsOwn: Self.oneStatementBegin)
        } else {
            result = try conn.execute(Self.numbered(sql), arguments.map(Self.parameter))
        }
        for row in result.rows { try body(row) }
    }

    func query(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
        // `changedRows` stays what the last `execute` changed (the protocol's promise).
        let result = try run(sql, arguments)
        return result.rows.map { row in SQLRow(columns: row.columns, values: row.values.map(Self.value)) }
    }

    /// The identity value the last `execute` that inserted rows generated (PostgreSQL's
    /// `lastval()`: the sequence most recently advanced in this session); 0 when there is none
    /// (a table keyed by its own values has no row id).
    var lastInsertedRowID: Int64 {
        guard inserted else { return lastRowID }
        inserted = false
        // A savepoint: `lastval()` fails when no sequence was used, which must not abort the
        // plugin's transaction.
        do {
            try conn.execute("SAVEPOINT tuisong_lastval")
            do {
                lastRowID = try conn.execute("SELECT lastval()").rows.first?[0].int64 ?? 0
                try conn.execute("RELEASE SAVEPOINT tuisong_lastval")
            } catch {
                lastRowID = 0
                try conn.execute("ROLLBACK TO SAVEPOINT tuisong_lastval")
                try conn.execute("RELEASE SAVEPOINT tuisong_lastval")
            }
        } catch {
            lastRowID = 0
        }
        return lastRowID
    }

    /// One statement with its `?`s numbered, sent with its parameters' types (`int8`, `float8`,
    /// `bytea`; text untyped), so `SELECT ? AS n` answers an integer as SQLite does. Kept
    /// prepared under those types (one statement per text and types, `runTyped`): parsed and
    /// planned on every run, a plugin's lookups cost the server 0.1–0.3 ms each, two or three
    /// per IM chat line (issue #47).
    private func run(_ sql: String, _ arguments: [SQLValue]) throws -> PostgresResult {
        if prepares { return try conn.run(sql, arguments.map(Self.parameter)) }
        guard oneStatementRead else { return try conn.runTyped(Self.numbered(sql), arguments.map(Self.parameter)) }
        try countOneStatement()
        return try conn.runTyped(
            Self.numbered(sql), arguments.map(Self.parameter), inTransactionOfItsOwn: Self.oneStatementBegin)
    }

    /// Refuses a `oneStatementRead` executor's second statement (`PostgresSharedDatabase.quickRead`
    /// then runs the body as a `read`).
    private func countOneStatement() throws {
        statementsRun += 1
        guard statementsRun > 1 else { return }
        refusedSecondStatement = true
        throw StoreError(.unavailable, "a quick read of more than one statement runs again as a read")
    }

    static func parameter(_ value: SQLValue) -> PostgresValue {
        switch value {
        case .null: .null
        case .integer(let v): .int(v)
        case .real(let v): .double(v)
        case .text(let v): .text(v)
        case .blob(let v): .bytes(v)
        }
    }

    static func value(_ value: PostgresValue) -> SQLValue {
        switch value {
        case .null: .null
        case .int(let v): .integer(v)
        case .double(let v): .real(v)
        case .text(let v): .text(v)
        case .bytes(let v): .blob(v)
        case .bool(let v): .integer(v ? 1 : 0)
        }
    }

    static func hasPlaceholder(_ sql: String) -> Bool { numbered(sql) != sql }

    /// `sql` with each `?` outside quotes and comments numbered `$1`, `$2`, … (`SQLPlaceholders`).
    static func numbered(_ sql: String) -> String { SQLPlaceholders.numbered(sql, for: PostgresDialect()) }
}
