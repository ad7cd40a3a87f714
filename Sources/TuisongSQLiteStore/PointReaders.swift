internal import CSQLiteShims
import Foundation
internal import GRDBSQLite
import Synchronization
import TuisongCore
import TuisongSQLStore

/// Read-only SQLite connections for point lookups (a device by token on every
/// `GET /api/v1/devices/{token}`, an app by API key hash on every native request), run on the
/// calling thread with statements prepared once.
///
/// GRDB's synchronous pool read costs several times the query itself: a semaphore and a
/// dispatch queue to borrow a reader, a second queue to run on it, and a
/// `PRAGMA schema_version` per read to validate its statement cache. Profiling the lookup
/// benchmark put half the server's CPU in that path. Here a lookup takes an idle connection
/// from a lock-protected stack (no queue hop), binds, steps and resets one prepared
/// statement. SQLite re-prepares a statement by itself when the schema changes.
///
/// Every statement is one `SELECT`, so it reads one consistent WAL snapshot and holds the
/// read lock only until `sqlite3_reset`, which always runs before the connection goes back.
///
/// A lookup on the calling thread never waits for a lock: with `waiting: false` SQLite's busy
/// handler is off and SQLITE_BUSY (WAL recovery after another process crashed, a writer in
/// exclusive locking mode) throws `PointReaderBusy` at once; the store then repeats the lookup
/// off the caller's thread, waiting up to the busy timeout (see `SQLiteStore.pointLookUp`).
final class PointReaders: Sendable {
    private struct State {
        var idle: [PointReaderConnection] = []
        var closed = false
    }

    private let path: String
    private let busyTimeoutMilliseconds: Int32
    private let state = Mutex(State())
    private let busyFallbackCount = Atomic<Int>(0)
    /// Idle connections kept beyond this are closed: only as many are ever open as threads
    /// look up at the same moment.
    private static let maximumIdle = 16

    init(path: String, busyTimeout: TimeInterval) {
        self.path = path
        busyTimeoutMilliseconds = Int32(clamping: Int((busyTimeout * 1000).rounded()))
    }

    /// Runs `body` with a connection used by this thread alone until `body` returns; with
    /// `waiting`, SQLite waits for locks up to the busy timeout, otherwise not at all.
    func withConnection<T>(waiting: Bool = false, _ body: (PointReaderConnection) throws -> T) throws -> T {
        let connection = try checkOut()
        defer { checkIn(connection) }
        connection.setBusyTimeout(waiting ? busyTimeoutMilliseconds : 0)
        return try body(connection)
    }

    /// Lookups that found the database locked and were repeated off the calling thread.
    var busyFallbacks: Int { busyFallbackCount.load(ordering: .relaxed) }

    func noteBusyFallback() { busyFallbackCount.add(1, ordering: .relaxed) }

    /// Closes the idle connections; connections in use close when they come back.
    func close() {
        let idle = state.withLock { state -> [PointReaderConnection] in
            state.closed = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        for connection in idle { connection.close() }
    }

    private func checkOut() throws -> PointReaderConnection {
        let reused = try state.withLock { state -> PointReaderConnection? in
            if state.closed { throw StoreError(.unavailable, "the store is closed") }
            return state.idle.popLast()
        }
        if let reused { return reused }
        return try PointReaderConnection(path: path)
    }

    private func checkIn(_ connection: PointReaderConnection) {
        // A quick read whose rollback failed would hand the next caller an old snapshot.
        let reusable = !connection.isInTransaction
        let keep = state.withLock { state -> Bool in
            guard reusable, !state.closed, state.idle.count < Self.maximumIdle else { return false }
            state.idle.append(connection)
            return true
        }
        if !keep { connection.close() }
    }
}

extension SQLPointLookup {
    /// The lookups in SQLite's placeholders, rendered once; each has one prepared statement per
    /// point reader connection.
    static let sqliteStatements = allCases.map { $0.statement(for: SQLiteDialect()) }
}

/// One read-only connection and its prepared statements.
final class PointReaderConnection: @unchecked Sendable {
    // @unchecked Sendable: `PointReaders` hands a connection to one caller at a time (it is
    // either in the idle stack under the lock or checked out by exactly one thread), so the
    // handle and the statement array are never touched by two threads at once.
    private var handle: OpaquePointer?
    private var statements: [OpaquePointer?]
    /// `SharedDatabase.quickRead`'s statements, by text (a plugin's handful of lookups).
    private var statementsByText: [String: OpaquePointer] = [:]
    private var busyTimeoutMilliseconds: Int32 = 0
    /// Past this many texts the kept statements are finalized and the count starts again.
    private static let maximumStatementsByText = 64

    init(path: String) throws {
        statements = Array(repeating: nil, count: SQLPointLookup.allCases.count)
        // NOMUTEX: SQLite's per-connection mutex is redundant under the one-user rule above.
        let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard code == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(opened)
            throw StoreError(.unavailable, "cannot open \(path) for reading: SQLite error \(code): \(message)")
        }
        handle = opened
    }

    /// 0 turns SQLite's busy handler off: a locked database answers SQLITE_BUSY at once.
    func setBusyTimeout(_ milliseconds: Int32) {
        guard milliseconds != busyTimeoutMilliseconds, let handle else { return }
        sqlite3_busy_timeout(handle, milliseconds)
        busyTimeoutMilliseconds = milliseconds
    }

    deinit { close() }

    func close() {
        for statement in statements { sqlite3_finalize(statement) }
        statements = Array(repeating: nil, count: statements.count)
        for statement in statementsByText.values { sqlite3_finalize(statement) }
        statementsByText = [:]
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs `query` with `arguments` (parameter 1 first) bound to its placeholders and decodes its
    /// first row, if any.
    func first<T>(_ query: SQLPointLookup, _ arguments: [SQLValue], decode: (PointRow) throws -> T) throws -> T? {
        let statement = try prepared(query)
        defer {
            // Ends the statement's read transaction and drops the bound copies.
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        let values = SQLPointLookup.sqliteStatements[query.rawValue].bindings(arguments)
        if let (position, code) = try SQLiteBinding.bind(values, to: statement, sql: "\(query)") {
            throw error(code, "binding ?\(position) of \(query)")
        }
        let code = sqlite3_step(statement)
        switch code {
        case SQLITE_ROW:
            return try decode(PointRow(statement: statement))
        case SQLITE_DONE:
            return nil
        case let busy where busy & 0xFF == SQLITE_BUSY:
            throw PointReaderBusy()
        default:
            throw error(code, "running \(query)")
        }
    }

    /// Whether a transaction is open (SQLite's autocommit is off).
    var isInTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    /// Runs `body` inside one deferred read transaction (one WAL snapshot for all its
    /// statements), rolled back afterwards: a read commits nothing.
    func inReadTransaction<T>(_ body: () throws -> T) throws -> T {
        try step(prepared(text: "BEGIN DEFERRED"), "BEGIN")
        defer { _ = try? step(prepared(text: "ROLLBACK"), "ROLLBACK") }
        return try body()
    }

    /// Every row of one statement (a `SELECT`), values bound to its `?` placeholders in order.
    func rows(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
        let statement = try prepared(text: sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        if let (position, code) = try SQLiteBinding.bind(arguments, to: statement, sql: sql) {
            throw error(code, "binding ?\(position) of \(sql)")
        }
        let count = sqlite3_column_count(statement)
        let columns = (0..<count).map { String(cString: sqlite3_column_name(statement, $0)) }
        var rows: [SQLRow] = []
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return rows }
            if code & 0xFF == SQLITE_BUSY { throw PointReaderBusy() }
            guard code == SQLITE_ROW else { throw error(code, "running \(sql)") }
            rows.append(SQLRow(columns: columns, values: (0..<count).map { Self.value(statement, $0) }))
        }
    }

    private static func value(_ statement: OpaquePointer, _ index: Int32) -> SQLValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let bytes = sqlite3_column_blob(statement, index) else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default: return .null
        }
    }

    private func step(_ statement: OpaquePointer, _ doing: String) throws {
        defer { sqlite3_reset(statement) }
        let code = sqlite3_step(statement)
        if code & 0xFF == SQLITE_BUSY { throw PointReaderBusy() }
        guard code == SQLITE_DONE || code == SQLITE_ROW else { throw error(code, doing) }
    }

    private func prepared(text sql: String) throws -> OpaquePointer {
        if let statement = statementsByText[sql] { return statement }
        guard let handle else { throw StoreError(.unavailable, "the store is closed") }
        if statementsByText.count >= Self.maximumStatementsByText {
            for statement in statementsByText.values { sqlite3_finalize(statement) }
            statementsByText = [:]
        }
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        if code & 0xFF == SQLITE_BUSY { throw PointReaderBusy() }
        guard code == SQLITE_OK, let statement else { throw error(code, "preparing \(sql)") }
        statementsByText[sql] = statement
        return statement
    }

    private func prepared(_ query: SQLPointLookup) throws -> OpaquePointer {
        if let statement = statements[query.rawValue] { return statement }
        guard let handle else { throw StoreError(.unavailable, "the store is closed") }
        var statement: OpaquePointer?
        let sql = SQLPointLookup.sqliteStatements[query.rawValue].text(for: SQLiteDialect())
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        // Preparing reads the schema, so a locked database stops it too.
        if code & 0xFF == SQLITE_BUSY { throw PointReaderBusy() }
        guard code == SQLITE_OK, let statement else { throw error(code, "preparing \(query)") }
        statements[query.rawValue] = statement
        return statement
    }

    private func error(_ code: Int32, _ doing: String) -> StoreError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
        return StoreError(.unavailable, "SQLite error \(code) \(doing): \(message)")
    }

}

/// The database was locked and the connection was told not to wait.
struct PointReaderBusy: Error {}

/// The current row of a stepped statement; valid only inside the `decode` closure.
struct PointRow: ColumnValues {
    fileprivate let statement: OpaquePointer

    package func isNull(_ index: Int32) -> Bool { sqlite3_column_type(statement, index) == SQLITE_NULL }

    package func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(statement, index) }

    package func string(_ index: Int32) -> String {
        guard let text = sqlite3_column_text(statement, index) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, index))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }
}

extension SQLiteStore {
    /// Bytes SQLite has allocated in this process (page caches, schemas, prepared statements
    /// of every connection): `tuisong_sqlite_memory_bytes`, and `make bench-memory`. Counted
    /// by the allocator `CSQLiteShims` installs, which lets SQLite run without its memory
    /// statistics and their process-wide mutex; SQLite's own count where it refused it.
    public static var memoryInUse: Int64 {
        tuisong_sqlite_counts_memory() ? tuisong_sqlite_memory_in_use() : sqlite3_memory_used()
    }

    /// Whether SQLite's memory goes through that allocator (its statistics off).
    static var countsMemoryWithoutStatistics: Bool { tuisong_sqlite_counts_memory() }
}
