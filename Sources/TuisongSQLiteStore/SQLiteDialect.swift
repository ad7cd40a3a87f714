import TuisongCore

/// SQLite's answers to `SQLDialect`: the SQL the store's queries and the plugins' write
/// differently on SQLite.
public struct SQLiteDialect: SQLDialect {
    public init() {}

    public var name: String { "sqlite" }

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

    /// No: one dispatcher per file sends a message whole, and counts its outcomes on its row.
    public var sharesWorkInSlices: Bool { false }
    public var hasConcurrentWriters: Bool { false }

    /// The message row's own column: one writer keeps every count there.
    public func messageCounterExpression(_ counter: String, table: String) -> String { "\(table).\(counter)" }

    /// The row's own columns, nothing joined.
    public func messageCountsExpression(table: String) -> (join: String, columns: String) {
        ("", Self.messageCounterNames.map { "\(table).\($0)" }.joined(separator: ", "))
    }
}
