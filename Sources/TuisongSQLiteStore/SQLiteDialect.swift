import TuisongCore

/// SQLite's answers to `SQLDialect`: the SQL the store's queries and the plugins' write
/// differently on SQLite.
public struct SQLiteDialect: SQLDialect {
    public init() {}

    public var name: String { "sqlite" }

    public var pendingMessagesCondition: String { Schema.pendingMessagesCondition }

    /// `?` for every binding: SQLite numbers them in order.
    public func placeholder(_ position: Int) -> String { "?" }

    public func jsonText(_ column: String, path: [String]) -> String {
        "json_extract(\(column), '$.\(path.joined(separator: "."))')"
    }

    public var isNotDistinctFrom: String { "IS" }

    /// Nothing: SQLite's default collation is binary.
    public var binaryCollation: String { "" }

    /// Nothing: the one writer connection never meets another writer's row locks.
    public var skipLocked: String { "" }

    /// None: the one writer connection serialises every write already.
    public func serializingWrites(to table: String) -> String? { nil }

    /// From the Julian day (`unixepoch('subsec')` needs SQLite 3.42).
    public var currentTimeMilliseconds: String { "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)" }

    /// No: one dispatcher per file sends a message whole, and counts its outcomes on its row.
    public var sharesWorkInSlices: Bool { false }
    public var hasConcurrentWriters: Bool { false }

    /// The message row's own column: one writer keeps every count there.
    public func messageCounterExpression(_ counter: String, table: String) -> String { "\(table).\(counter)" }

    /// The row's own columns, nothing joined.
    public func messageCountsExpression(table: String) -> (join: String, columns: String) {
        ("", Self.messageCounterNames.map { "\(table).\($0)" }.joined(separator: ", "))
    }

    public func joinedText(_ expression: String, separator: UInt8) -> String {
        "group_concat(\(expression), char(\(separator)))"
    }

    /// What SQLite's planner needs after a large change, and no more.
    public var refreshingStatistics: String { "PRAGMA optimize" }

    public func jsonObjectAggregate(key: String, value: String) -> String {
        "json_group_object(\(key), \(value))"
    }

    /// A JSON array walked by `json_each`, whose `value` column is each element.
    public func listTable(of element: SQLListElement) -> (before: String, after: String) { ("json_each(", ")") }

    /// `[1,2,…]`.
    public func listValue(_ values: [Int64]) -> SQLValue {
        .text("[" + values.map(String.init).joined(separator: ",") + "]")
    }

    /// `["a","b"]`.
    public func listValue(_ values: [String]) -> SQLValue { .text(JSONValue.serializedArray(values)) }

    public func jsonTextAtBoundPath(_ column: String) -> (before: String, after: String) {
        ("json_extract(\(column), ", ")")
    }

    /// `$."vendor"."key"`: quoted labels, so a key is taken literally; SQLite has no escape
    /// inside them, so a key holding `"` cannot be written.
    public func jsonPathValue(_ keys: [String]) -> SQLValue? {
        guard !keys.contains(where: { $0.contains("\"") }) else { return nil }
        return .text("$" + keys.map { ".\"\($0)\"" }.joined())
    }
}
