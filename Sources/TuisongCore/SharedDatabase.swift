import Foundation

/// A value bound to or read from a SQL statement.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    public var int: Int64? { if case .integer(let v) = self { v } else { nil } }
    public var string: String? { if case .text(let v) = self { v } else { nil } }
    public var bytes: [UInt8]? {
        switch self {
        case .blob(let v): v
        case .text(let v): Array(v.utf8)
        default: nil
        }
    }
    public var double: Double? {
        switch self {
        case .real(let v): v
        case .integer(let v): Double(v)
        default: nil
        }
    }
    public var isNull: Bool { self == .null }
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(_ value: String?) { self = value.map(SQLValue.text) ?? .null }
    public init(_ value: Int64?) { self = value.map(SQLValue.integer) ?? .null }
    public init(_ value: Int?) { self = value.map { SQLValue.integer(Int64($0)) } ?? .null }
}

/// One result row, by column name (as the query spelled it) or position.
public struct SQLRow: Sendable, Hashable {
    public var columns: [String]
    public var values: [SQLValue]

    public init(columns: [String], values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    public subscript(column: String) -> SQLValue {
        guard let index = columns.firstIndex(of: column) else { return .null }
        return values[index]
    }

    public subscript(index: Int) -> SQLValue { values[index] }
}

/// A list of values for `IN (…)`, cut into chunks whose lengths are powers of two (the last
/// value repeated, which changes nothing for `IN`). A statement is kept prepared on its
/// connection when its text is short (up to 512 bytes) or holds such a list: a per-page lookup
/// then has a handful of texts (1, 2, 4 … `maximumLength` values), each parsed once per
/// connection, instead of one text per page length parsed on every call.
public struct SQLList: Sendable, Hashable {
    /// What `marks` starts with; `SQLExecutor` implementations look for it.
    public static let marker = "/* list */ "
    /// Values per chunk at most: far below every SQL engine's parameter limit.
    public static let maximumLength = 512

    /// `/* list */ ?, ?, …`: one placeholder per value, to put inside `IN (…)`.
    public let marks: String
    public let values: [SQLValue]

    /// The distinct values (first occurrence kept), in padded chunks; none for an empty list.
    public static func chunks(_ values: [SQLValue]) -> [SQLList] {
        var seen = Set<SQLValue>()
        let unique = values.filter { seen.insert($0).inserted }
        return unique.chunks(ofCount: maximumLength).map { slice in
            var chunk = Array(slice)
            var length = 1
            while length < chunk.count { length *= 2 }
            chunk += Array(repeating: chunk[chunk.count - 1], count: length - chunk.count)
            return SQLList(marks: marker + placeholders(length), values: chunk)
        }
    }

    /// `?, ?, …`: `count` placeholders for `IN (…)`, the one way every query writes them. No
    /// value gives `NULL`, so `x IN (NULL)` matches nothing, in SQLite and PostgreSQL alike
    /// (`IN ()` is SQLite's alone; a lone `?` would bind nothing).
    ///
    ///     "WHERE id IN (\(SQLList.placeholders(ids.count)))"
    public static func placeholders(_ count: Int) -> String {
        count == 0 ? "NULL" : Array(repeating: "?", count: count).joined(separator: ", ")
    }

    public static func chunks(_ values: [String]) -> [SQLList] { chunks(values.map(SQLValue.text)) }
}

/// Runs statements inside one transaction (`SharedDatabase.write`) or one read snapshot
/// (`read`). Valid only inside the closure it was handed to; never keep it.
public protocol SQLExecutor {
    func execute(_ sql: String, _ arguments: [SQLValue]) throws
    func query(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow]
    /// The rowid of the last row inserted through this executor.
    var lastInsertedRowID: Int64 { get }
    /// Rows changed by the last `execute`.
    var changedRows: Int { get }
    /// The database's dialect: how an `SQLQuery` writes its placeholders here, and the few
    /// expressions that differ.
    var dialect: any SQLDialect { get }
}

extension SQLExecutor {
    public func execute(_ sql: String) throws { try execute(sql, []) }
    public func query(_ sql: String) throws -> [SQLRow] { try query(sql, []) }
    public func queryOne(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLRow? {
        try query(sql, arguments).first
    }
}

/// The gateway's database as a plugin sees it: portable SQL (no SQLite-only functions, so a
/// PostgreSQL backend can follow) on the plugin's own tables, prefixed with the plugin's name
/// (`acme_groups`), plus reads of the core tables it was told about (`devices`, `accounts`).
/// Writes are serialized and atomic: the closure is one transaction, rolled back if it throws.
public protocol SharedDatabase: Sendable {
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// A `read` of a few rows found by index (an account, a profile item, a page of receivers'
    /// settings), on the per-message path: where the database allows it, run on the calling
    /// thread, without the hop to a reader's queue and back that a `read` costs (SQLite's point
    /// readers); on PostgreSQL a body of one statement costs one round trip, not two. Only for
    /// small, indexed reads: the caller's thread is held while it runs. The closure may run
    /// twice (once here, once as a `read` when SQLite is locked or a PostgreSQL body sends a
    /// second statement), so it must only read; it sees one snapshot either way.
    func quickRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// Which SQL the database speaks, for the few expressions that differ (`SQLDialect`).
    var dialect: any SQLDialect { get }
    /// Whether every statement is a round trip to a database server (PostgreSQL), whose fixed
    /// cost outweighs a small read: many chat messages' lookups are then worth sending together
    /// (`NameReadsTogether`). False where a read runs in the process (SQLite).
    var statementsAreRoundTrips: Bool { get }
}

extension SharedDatabase {
    public func quickRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await read(body)
    }

    public var statementsAreRoundTrips: Bool { false }
}

/// The SQL that differs between the store's databases, answered by each database's dialect
/// (`SQLiteDialect`, `PostgresDialect`, one small file in each backend's module) so a query
/// stays one text, the store's and the plugins'. Every member must be answered: there is no
/// default dialect, so a new database cannot silently speak another's SQL.
///
/// An `SQLQuery` asks its executor's dialect for each placeholder; SQL written by hand for
/// `SQLExecutor.execute` uses `?`, which every executor accepts (PostgreSQL's numbers them).
public protocol SQLDialect: Sendable {
    /// The database's name, as the store reports it (`GatewayStore.backendName`): `sqlite`,
    /// `postgresql`.
    var name: String { get }

    /// The placeholder of the binding at `position` (1, 2, …): SQLite's `?`, PostgreSQL's `$1`.
    func placeholder(_ position: Int) -> String

    /// The text at `path` (object keys) in the JSON document in `column`, or NULL:
    /// `json_extract(labels, '$.timer_id')`, `(labels::jsonb #>> '{timer_id}')`. Called through
    /// `jsonText(_:_:)`, which checks the keys.
    func jsonText(_ column: String, path: [String]) -> String

    /// `lhs IS rhs` for values that may be NULL (NULL matches NULL): SQLite's `IS`, PostgreSQL's
    /// `IS NOT DISTINCT FROM`.
    var isNotDistinctFrom: String { get }

    /// What follows a text column in `ORDER BY` so both databases sort by code point (SQLite's
    /// binary collation, nothing to write; PostgreSQL's ` COLLATE "C"`, whatever the database's
    /// locale).
    var binaryCollation: String { get }

    /// What ends a `SELECT … FOR UPDATE` that concurrent writers should share out rather than
    /// wait on (PostgreSQL's ` FOR UPDATE SKIP LOCKED`); nothing on SQLite, whose one writer
    /// never meets another's row locks.
    var skipLocked: String { get }

    /// A statement that makes writers adding rows to `table` take turns until the transaction
    /// ends (PostgreSQL: `LOCK TABLE … IN SHARE ROW EXCLUSIVE MODE`), so a count read before an
    /// insert still holds at commit; nil on SQLite, whose one writer already serialises them.
    func serializingWrites(to table: String) -> String?

    /// The database's own clock in milliseconds since 1970, as an expression: what leases are
    /// compared against, so nodes whose clocks disagree still agree on whose lease ended.
    var currentTimeMilliseconds: String { get }

    /// Whether several nodes share the work in leased slices (PostgreSQL): delivery rows then
    /// carry their `slice` and a lease (`owner`, `lease_until`), outcomes are counted per slice
    /// (`message_slices`, `message_skips.slice`), and writers lock the rows they change in one
    /// order. SQLite's one dispatcher per file has none of these.
    var sharesWorkInSlices: Bool { get }

    /// Whether writers run side by side and wait on each other's row locks (PostgreSQL), so
    /// two transactions taking the same rows each in the other's order deadlock; SQLite's one writer
    /// takes its turn whole.
    var hasConcurrentWriters: Bool { get }

    /// A message's count of deliveries in one state in a query over the core `messages` table
    /// (named `table` there), as the store keeps it: the row's column on SQLite; on PostgreSQL
    /// the row's own count (its retries) plus its slices' (`message_slices`), which several
    /// nodes write apart. Called through `messageCounter(_:table:)`, which checks the names.
    func messageCounterExpression(_ counter: String, table: String) -> String

    /// All six counts of a message (queued, sending, delivered, failed, skipped, held) in a
    /// query over the core `messages` table (named `table` there) that reads them for many rows:
    /// `join` goes right after `FROM messages <table>`, `columns` are the six BIGINT expressions
    /// in that order, comma-separated. SQLite: the row's columns, nothing joined; PostgreSQL:
    /// the row's own counts plus its slices' summed in one pass per message (a lateral join),
    /// where six `messageCounter`s would each sum the slices again. Called through
    /// `messageCounts(table:)`, which checks the name.
    func messageCountsExpression(table: String) -> (join: String, columns: String)

    /// `expression` over a group's rows, joined by the character `separator` (a control
    /// character, code point below 32), NULL for no rows: SQLite's `group_concat(…, char(31))`,
    /// PostgreSQL's `string_agg(…, chr(31))`.
    func joinedText(_ expression: String, separator: UInt8) -> String

    /// The statement that brings the query planner's statistics up to date after a large
    /// change (an import): SQLite's `PRAGMA optimize`, PostgreSQL's `ANALYZE` of the device
    /// tables, whose statistics are empty until autovacuum gets to them.
    var refreshingStatistics: String { get }

    /// The condition of the `messages_pending` partial index (a message scheduled, queued or
    /// sending), spelled exactly as the index spells it: SQLite uses a partial index only for a
    /// query whose WHERE clause contains its condition, and PostgreSQL walked the primary key
    /// through the whole history without it. SQLite writes it as `=` comparisons joined by OR:
    /// an `IN` list of three or more values builds a temporary table each time it runs, and the
    /// index's condition runs on every write of a message (SQLite's v27).
    var pendingMessagesCondition: String { get }

    /// A JSON object of `key` (text) to `value` over a group's rows, as text, `{}` for no rows:
    /// SQLite's `json_group_object`, PostgreSQL's `json_object_agg`.
    func jsonObjectAggregate(key: String, value: String) -> String

    /// A table of one column, `value`, holding the elements of a list bound as one parameter
    /// (`listValue`): the text before and after that parameter. SQLite walks a JSON array
    /// (`json_each(?)`), PostgreSQL unnests an array (`unnest($1::bigint[]) AS value`). The
    /// statement's text stays one whatever the list's length, so it stays prepared.
    func listTable(of element: SQLListElement) -> (before: String, after: String)
    /// Integers bound as one parameter of `listTable(of: .integer)`.
    func listValue(_ values: [Int64]) -> SQLValue
    /// Texts bound as one parameter of `listTable(of: .text)`.
    func listValue(_ values: [String]) -> SQLValue

    /// The text at a path of object keys bound as one parameter (`jsonPathValue`) in the JSON
    /// document in `column`, or NULL: the text before and after that parameter. SQLite's
    /// `json_extract(column, ?)`, PostgreSQL's `(column::jsonb #>> $1::text[])`.
    func jsonTextAtBoundPath(_ column: String) -> (before: String, after: String)
    /// The path `keys` as `jsonTextAtBoundPath` binds it, or nil when this database cannot
    /// spell one of the keys (SQLite's quoted path labels take no `"`).
    func jsonPathValue(_ keys: [String]) -> SQLValue?
}

/// What a list bound as one parameter holds (`SQLDialect.listTable(of:)`).
public enum SQLListElement: Sendable {
    case integer
    case text
}

extension SQLDialect {
    /// `jsonText(column, path:)` for keys that are the caller's constants (letters, digits,
    /// `_`), never user input.
    public func jsonText(_ column: String, _ path: String...) -> String {
        precondition(path.allSatisfy { $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } })
        return jsonText(column, path: path)
    }

    /// A message's count of deliveries in one state (`queued`, `sending`, `delivered`, `failed`,
    /// `skipped`, `held`): `messageCounterExpression`, the names checked.
    public func messageCounter(_ counter: String, table: String = "messages") -> String {
        precondition(
            ["queued", "sending", "delivered", "failed", "skipped", "held"].contains(counter)
                && table.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" })
        return messageCounterExpression(counter, table: table)
    }

    /// The names of a message's six counts, in the order `messageCounts(table:)` gives them.
    public static var messageCounterNames: [String] { ["queued", "sending", "delivered", "failed", "skipped", "held"] }

    /// A message's six counts read in one pass: `messageCountsExpression`, the name checked.
    public func messageCounts(table: String) -> (join: String, columns: String) {
        precondition(table.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" })
        return messageCountsExpression(table: table)
    }
}

/// One step of a plugin's schema. Applied once, in declaration order, when the gateway opens
/// the database (and by `tuisong migrate`); recorded under `<plugin name>:<identifier>` so it
/// never runs twice. Never edit a released migration: add the next one.
///
/// A plugin's migrations run after the core ones, unless one names a core migration it must
/// precede (`before`): a core migration that removes a core column the plugin copies into a
/// table of its own first. That migration, and the plugin's migrations declared before it, then
/// run just before the named core migration. On a database where the named core migration has
/// already run (the plugin was not registered then), there is nothing left to copy: the
/// migration is recorded without running its SQL.
public struct PluginMigration: Sendable, Hashable {
    /// What a migration runs on PostgreSQL.
    public enum PostgresStep: Sendable, Hashable {
        /// `sql`, with SQLite's type names mapped (`INTEGER` → `BIGINT`, `BLOB` → `BYTEA`,
        /// `STRICT` and `WITHOUT ROWID` dropped): what portable DDL needs.
        case portable
        /// Statements of its own (an expression index on a JSON path, a table that SQLite's
        /// history created elsewhere).
        case sql(String)
        /// Nothing: a step of SQLite's history that a new PostgreSQL database never needs
        /// (copying data out of a core column PostgreSQL never had). Still recorded.
        case skip
    }

    public var identifier: String
    /// One or more statements separated by `;`.
    public var sql: String
    /// The identifier of the core migration this one must run before, or nil (after them all).
    public var before: String?
    /// The step on PostgreSQL.
    public var postgres: PostgresStep

    public init(
        _ identifier: String, before coreMigration: String? = nil, sql: String, postgres: PostgresStep = .portable
    ) {
        self.identifier = identifier
        self.sql = sql
        self.before = coreMigration
        self.postgres = postgres
    }
}
