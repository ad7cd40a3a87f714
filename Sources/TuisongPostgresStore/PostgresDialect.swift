import TuisongCore

/// PostgreSQL's answers to `SQLDialect`: the SQL the store's queries and the plugins' write
/// differently on PostgreSQL.
public struct PostgresDialect: SQLDialect {
    public init() {}

    public var name: String { "postgresql" }

    /// `$1`, `$2`, …: PostgreSQL's numbered parameters.
    public func placeholder(_ position: Int) -> String { "$\(position)" }

    public func jsonText(_ column: String, path: [String]) -> String {
        "(\(column)::jsonb #>> '{\(path.joined(separator: ","))}')"
    }

    public var isNotDistinctFrom: String { "IS NOT DISTINCT FROM" }

    /// The "C" collation, whatever the database's locale.
    public var binaryCollation: String { " COLLATE \"C\"" }

    public var skipLocked: String { " FOR UPDATE SKIP LOCKED" }

    /// Other writers of `table` wait, readers do not; nodes then take turns.
    public func serializingWrites(to table: String) -> String? { "LOCK TABLE \(table) IN SHARE ROW EXCLUSIVE MODE" }

    /// The wall clock now, not the transaction's start: a lease is measured when it is written.
    public var currentTimeMilliseconds: String { "(extract(epoch from clock_timestamp()) * 1000)::bigint" }

    /// Yes: nodes claim slices of a message's audience under leases (`PostgresStore+WorkQueue`).
    public var sharesWorkInSlices: Bool { true }
    public var hasConcurrentWriters: Bool { true }

    /// The row's own count (its retries) plus its slices', which several nodes write apart.
    public func messageCounterExpression(_ counter: String, table: String) -> String {
        "(\(table).\(counter) + coalesce((SELECT sum(s.\(counter)) FROM message_slices s "
            + "WHERE s.message_id = \(table).id), 0))"
    }

    /// The row's own counts plus its slices', the slices summed once per message.
    public func messageCountsExpression(table: String) -> (join: String, columns: String) {
        let slices = "\(table)_slices"
        let sums = Self.messageCounterNames.map { "sum(\($0))::bigint AS \($0)" }.joined(separator: ", ")
        return (
            "LEFT JOIN LATERAL (SELECT \(sums) FROM message_slices WHERE message_id = \(table).id) \(slices) ON true",
            Self.messageCounterNames.map { "\(table).\($0) + coalesce(\(slices).\($0), 0)" }.joined(separator: ", ")
        )
    }

    public func joinedText(_ expression: String, separator: UInt8) -> String {
        "string_agg(\(expression), chr(\(separator)))"
    }

    /// The device tables: right after a large import their statistics are empty until
    /// autovacuum gets to them, and a tag page planned on empty statistics sorted the whole tag
    /// on every page (100 ms a page of a 200,000-device tag against under 1 ms).
    public var refreshingStatistics: String { "ANALYZE devices, device_tags, tags, accounts" }

    /// As pg1 created `messages_pending` (PostgreSQL's `IN` list costs nothing to set up). Since
    /// pg26 PostgreSQL finds scheduled messages on `messages_scheduled` (a condition naming
    /// `state = 'scheduled'` implies its own) and queued or sending ones on
    /// `messages_backlog_by_app`.
    public var pendingMessagesCondition: String { "state IN ('scheduled', 'queued', 'sending')" }

    public func jsonObjectAggregate(key: String, value: String) -> String {
        "coalesce(json_object_agg(\(key), \(value)), '{}')::text"
    }

    /// An array unnested, named `value` as a table and as its one column.
    public func listTable(of element: SQLListElement) -> (before: String, after: String) {
        switch element {
        case .integer: ("unnest(", "::bigint[]) AS value")
        case .text: ("unnest(", "::text[]) AS value")
        }
    }

    /// `{1,2,…}`.
    public func listValue(_ values: [Int64]) -> SQLValue { .text(PostgresArrayLiteral.integers(values)) }

    /// `{"a","b"}`, every element quoted.
    public func listValue(_ values: [String]) -> SQLValue { .text(PostgresArrayLiteral.texts(values)) }

    public func jsonTextAtBoundPath(_ column: String) -> (before: String, after: String) {
        ("(\(column)::jsonb #>> ", "::text[])")
    }

    /// A text array of the keys. Any key can be written; the store's callers still refuse
    /// keys holding `"` (SQLite cannot spell them) so both databases answer alike.
    public func jsonPathValue(_ keys: [String]) -> SQLValue? { .text(PostgresArrayLiteral.texts(keys)) }
}
