import Foundation
import TuisongCore

/// What a database backend (`SQLiteStore`, `PostgresStore`) hands the queries written once for
/// both: an executor inside a read or a write, and the store's clock. The queries are defaults
/// of this protocol's extensions (`SQLStoreBackend+*.swift`), each one `SQLQuery` whose dialect
/// writes the placeholders; a backend writes by hand only what really differs between the
/// databases (the work queue and its leases, progress and slice counters, badge batching, the
/// audience page hot path, bulk import, the change feed, migrations), and its file says why.
public protocol SQLStoreBackend: Sendable {
    /// `body` on one snapshot (SQLite: a deferred transaction; PostgreSQL: on one pooled
    /// connection, each statement its own).
    func sqlRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// `sqlRead` for a few rows found by index on the per-message path, on the calling thread
    /// where the backend can (`SharedDatabase.quickRead`); `sqlRead` by default.
    func sqlQuickRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// `body` in one transaction: committed when it returns, rolled back when it throws.
    func sqlWrite<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// A small write that may share its transaction with others arriving at the same moment
    /// (SQLite: group commit, each under a savepoint of its own, so it commits or fails alone;
    /// PostgreSQL: a transaction of its own, as `sqlWrite`).
    func sqlGroupWrite<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// Whether `sqlGroupWrite` shares a commit with the other writes of the moment (SQLite). Where
    /// it does not (PostgreSQL: BEGIN and COMMIT each a round trip), a small write of several
    /// statements is sent as one statement instead where it can be (a data-modifying `WITH`,
    /// which SQLite has not), through `sqlWriteStatement`.
    var sqlGroupsWrites: Bool { get }
    /// A write that is one statement, atomic by itself (PostgreSQL: without BEGIN and COMMIT,
    /// one round trip; SQLite: as `sqlWrite`).
    @discardableResult
    func sqlWriteStatement<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// Now, in the store's milliseconds (`SQLTime`), from its clock.
    var nowMilliseconds: Int64 { get }

    /// `SELECT … FROM messages m` (no WHERE) in the columns `Rows.message` reads, each message's
    /// counts and per-reason counts as JSON objects included; the shared message reads add
    /// their WHERE. The backends count outcomes in different rows (SQLite: the message's;
    /// PostgreSQL: the message's plus its slices'), so each writes its own.
    var sqlMessageSelect: String { get }
    /// The message a row of `sqlMessageSelect` is: `Rows.message` with this backend's cursor
    /// (SQLite: the message's column; PostgreSQL: its first slice's).
    func sqlMessageRecord(_ row: SQLRow) throws -> MessageRecord
    /// Held deliveries of `appID`'s messages that match `condition` (on the deliveries' own
    /// columns, unqualified) go back to `queued`, due now, with the counters moved along
    /// (SQLite: the message's; PostgreSQL: the slice's each delivery belongs to). Returns how
    /// many. The three `releaseHeldDeliveries` are written once over it.
    func sqlReleaseHeld(appID: Int64, matching condition: SQLQuery, now: Date) async throws -> Int
    /// The row `lookup` finds with `arguments` (parameter 1 first), decoded by `decode` while it
    /// is current, or nil: SQLite runs it on a point reader (on the calling thread, no
    /// transaction, the statement prepared once per connection), PostgreSQL on a pooled
    /// connection that keeps the statement prepared.
    func sqlPointLookUp<T: Sendable>(
        _ lookup: SQLPointLookup, _ arguments: [SQLValue], decode: @escaping @Sendable (any ColumnValues) throws -> T
    ) async throws -> T?
    /// Registers one device inside the caller's write (`executor` is the one `sqlWrite` handed
    /// it) with the backend's own device upsert and tag replacement, as `registerDevice` writes
    /// them (SQLite: a lookup then the upsert, on the one writer; PostgreSQL: an upsert whose
    /// `xmax` says whether it inserted). Returns the device's id.
    func sqlRegister(_ executor: any SQLExecutor, appID: Int64, _ registration: DeviceRegistration, now: Int64) throws
        -> Int64
    /// The outbox writes of this store's webhook events, with its cached subscriptions.
    var webhookOutbox: WebhookOutbox { get }
    /// The lease a retry this store claims carries (PostgreSQL: its node id, the lease's
    /// length), so an outcome lands only while the row is still this store's and a dead node's
    /// retries are claimed again once it ended; nil where retries are not leased (SQLite: the
    /// file's one dispatcher claims them all).
    var sqlRetryLease: SQLRetryLease? { get }
    /// Whether this store claims and requeues retries now: SQLite's only while it is the file's
    /// dispatcher (taking the role if it is free); PostgreSQL's always, under leases.
    func sqlTakesRetries() -> Bool
    /// Every migration this store applies, in order: the core's, then the plugins' as
    /// `<plugin>:<identifier>`.
    var migrationNames: [String] { get }
    /// The table whose `identifier` column names each applied migration: GRDB's
    /// `grdb_migrations` on SQLite, `schema_migrations` on PostgreSQL.
    var sqlMigrationTable: String { get }
}

/// A leased retry's owner and how long the lease lasts (`SQLStoreBackend.sqlRetryLease`).
public struct SQLRetryLease: Sendable {
    public var owner: String
    public var milliseconds: Int64

    public init(owner: String, milliseconds: Int64) {
        self.owner = owner
        self.milliseconds = milliseconds
    }
}

extension SQLStoreBackend {
    public func sqlQuickRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await sqlRead(body)
    }
}

extension SQLRow: ColumnValues {
    public func isNull(_ index: Int32) -> Bool { values[Int(index)].isNull }
    public func int64(_ index: Int32) -> Int64 { values[Int(index)].int ?? 0 }
    public func string(_ index: Int32) -> String { values[Int(index)].string ?? "" }
    /// The column's bytes (a blob, or a text's UTF-8), empty for NULL.
    package func bytes(_ index: Int32) -> [UInt8] { values[Int(index)].bytes ?? [] }
    package func date(_ index: Int32) -> Date { SQLTime.date(int64(index)) }
    package func optionalDate(_ index: Int32) -> Date? { optionalInt64(index).map(SQLTime.date) }
}

extension Rows {
    /// The one row `query` returns (an `INSERT … RETURNING`), or `.unavailable`.
    package static func returned(_ db: any SQLExecutor, _ query: SQLQuery, _ what: String) throws -> SQLRow {
        guard let row = try db.fetchOne(query) else {
            throw StoreError(.unavailable, "\(what) … RETURNING returned no row")
        }
        return row
    }
}

/// Milliseconds of a time interval, rounded, as the store keeps durations.
package enum SQLDuration {
    package static func milliseconds(_ interval: TimeInterval) -> Int64 { Int64((interval * 1000).rounded()) }
}

extension SQLQuery {
    /// The values of `list` as bindings, `SQLList.marker` first (the executors keep such a
    /// statement prepared: a handful of padded lengths), to put inside `IN (…)`.
    package static func list(_ list: SQLList) -> SQLQuery {
        var query = SQLQuery(raw: SQLList.marker)
        for (index, value) in list.values.enumerated() {
            let item: SQLQuery = index == 0 ? "\(value)" : ", \(value)"
            query = query + item
        }
        return query
    }
}

extension SQLStoreBackend {
    /// A small write that is one statement, atomic by itself: grouped with the other writes of
    /// the moment where writes are grouped (`sqlGroupWrite`, SQLite), sent alone without BEGIN
    /// and COMMIT where each write commits alone (`sqlWriteStatement`, PostgreSQL).
    package func sqlGroupWriteStatement<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T)
        async throws -> T
    {
        sqlGroupsWrites ? try await sqlGroupWrite(body) : try await sqlWriteStatement(body)
    }
}

extension SQLStoreBackend where Self: GatewayStore {
    /// The planner's statistics brought up to date (`SQLDialect.refreshingStatistics`), after an
    /// import.
    public func refreshStatistics() async throws {
        try await sqlWriteStatement { db in try db.execute(db.dialect.refreshingStatistics) }
    }

    /// The dialect's name (`sqlite`, `postgresql`): one answer for logs, metrics and the SQL.
    public var backendName: String { sharedDatabase.dialect.name }

    /// The migrations applied to the open database that this store knows, in the order they
    /// apply (a name another binary applied and this one does not know is left out).
    public func appliedMigrations() async throws -> [String] {
        let known = migrationNames
        let table = sqlMigrationTable
        let applied = try await sqlRead { db in
            Set(try db.fetchAll("SELECT identifier FROM \(raw: table)").compactMap { $0[0].string })
        }
        return known.filter(applied.contains)
    }
}

extension SQLDialect {
    /// `ids` as a table of one column, `value`, bound as one parameter (`listTable`): the
    /// statement's text is one whatever the list's length, so it is marked (`SQLList.marker`)
    /// for the executors to keep prepared however long it is (a chat message's account page
    /// was compiled and authorized per message).
    ///
    /// One value is a one-row table of its own (`singleValueTable`), a second text: a chat
    /// message's page is a list of one, and PostgreSQL plans `IN (SELECT value FROM
    /// unnest($2))` afresh on every run — a kept plan assumes a longer array and costs more
    /// than a fresh one — 0.3 ms of the server's time per message (issue #47); a single value
    /// reduces to `= $2`, planned once per connection.
    package func list(_ ids: [Int64]) -> SQLQuery {
        if ids.count == 1 { return singleValueTable(.integer(ids[0]), type: "BIGINT") }
        let table = listTable(of: .integer)
        return "\(raw: SQLList.marker)\(raw: table.before)\(listValue(ids))\(raw: table.after)"
    }

    /// `texts` as a table of one column, `value`, bound as one parameter (`listTable`), marked
    /// as `list(_ ids:)` is; one value as its own table, as there.
    package func list(_ texts: [String]) -> SQLQuery {
        if texts.count == 1 { return singleValueTable(.text(texts[0]), type: "TEXT") }
        let table = listTable(of: .text)
        return "\(raw: SQLList.marker)\(raw: table.before)\(listValue(texts))\(raw: table.after)"
    }

    /// `(SELECT CAST(? AS type) AS value) AS value`: what `list` reads one value from, in both
    /// dialects.
    private func singleValueTable(_ value: SQLValue, type: String) -> SQLQuery {
        "\(raw: SQLList.marker)(SELECT CAST(\(value) AS \(raw: type)) AS value) AS value"
    }
}

/// An executor that hands a query's rows to a closure where they lie (GRDB's cursor row,
/// libpq's result row), none copied into an `SQLRow`: what the store's loops over many rows
/// read through (`forEachRow`).
package protocol SQLRowVisitor: SQLExecutor {
    /// `plannedEachRun`: the statement is planned for these values, not kept with a plan made
    /// for any (PostgreSQL's prepared statements; SQLite plans a kept statement as it is run).
    func forEachRow(
        _ sql: String, _ arguments: [SQLValue], plannedEachRun: Bool, _ body: (any ColumnValues) throws -> Void)
        throws
}

extension SQLExecutor {
    /// Each row of `query`, read in place where the executor can (`SQLRowVisitor`).
    /// `plannedEachRun`: planned for its values each time, where a plan kept for any values
    /// would be a poor one (an audience page's cursor decides how much of a tag is left).
    package func forEachRow(
        _ query: SQLQuery, plannedEachRun: Bool = false, _ body: (any ColumnValues) throws -> Void
    ) throws {
        let sql = query.text(for: dialect)
        if let visitor = self as? any SQLRowVisitor {
            try visitor.forEachRow(sql, query.bindings, plannedEachRun: plannedEachRun, body)
        } else {
            for row in try self.query(sql, query.bindings) { try body(row) }
        }
    }
}
