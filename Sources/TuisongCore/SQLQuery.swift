import Foundation

/// A SQL statement built by string interpolation: each interpolated value becomes a binding,
/// never text, and the dialect writes each placeholder (`?` for SQLite, `$1`, `$2`, … for
/// PostgreSQL), so a query is written once for both databases and nobody numbers placeholders
/// by hand.
///
///     let row = try db.fetchOne("SELECT name FROM apps WHERE id = \(id) AND name = \(name)")
///
/// Trusted SQL text (a column list, a dialect's expression, a clause chosen by the caller) goes
/// in with `raw:`; a fragment built the same way nests with its bindings:
///
///     let filter: SQLQuery = "app_id = \(appID)"
///     try db.fetchAll("SELECT \(raw: columns) FROM devices WHERE \(filter) ORDER BY id")
public struct SQLQuery: Sendable, Hashable, ExpressibleByStringInterpolation {
    /// The text between bindings: `segments.count == bindings.count + 1`.
    public private(set) var segments: [String]
    public private(set) var bindings: [SQLValue]

    public init(stringLiteral value: String) {
        segments = [value]
        bindings = []
    }

    public init(stringInterpolation: StringInterpolation) {
        segments = stringInterpolation.segments
        bindings = stringInterpolation.bindings
    }

    /// Trusted text with no binding.
    public init(raw text: String) { self.init(stringLiteral: text) }

    /// The statement's text in `dialect`, one placeholder per binding.
    public func text(for dialect: any SQLDialect) -> String {
        var text = segments[0]
        for position in segments.indices.dropFirst() {
            text += dialect.placeholder(position)
            text += segments[position]
        }
        return text
    }

    /// `self` followed by `other` (bindings in order).
    public static func + (lhs: SQLQuery, rhs: SQLQuery) -> SQLQuery {
        var result = lhs
        result.segments[result.segments.count - 1] += rhs.segments[0]
        result.segments += rhs.segments.dropFirst()
        result.bindings += rhs.bindings
        return result
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var segments: [String] = [""]
        var bindings: [SQLValue] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            segments.reserveCapacity(interpolationCount + 1)
            bindings.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            segments[segments.count - 1] += literal
        }

        /// A binding.
        public mutating func appendInterpolation(_ value: SQLValue) {
            bindings.append(value)
            segments.append("")
        }

        /// A text binding (NULL for nil).
        public mutating func appendInterpolation(_ value: String?) { appendInterpolation(SQLValue(value)) }
        /// An integer binding (NULL for nil).
        public mutating func appendInterpolation(_ value: Int64?) { appendInterpolation(SQLValue(value)) }
        /// An integer binding (NULL for nil).
        public mutating func appendInterpolation(_ value: Int?) { appendInterpolation(SQLValue(value)) }
        /// A blob binding.
        public mutating func appendInterpolation(_ value: [UInt8]) { appendInterpolation(SQLValue.blob(value)) }
        /// A real binding.
        public mutating func appendInterpolation(_ value: Double) { appendInterpolation(SQLValue.real(value)) }

        /// Trusted SQL text, written as is (column lists, a dialect's expression): never a
        /// value that came from a caller.
        public mutating func appendInterpolation(raw text: String) { appendLiteral(text) }

        /// A fragment with its own bindings.
        public mutating func appendInterpolation(_ fragment: SQLQuery) {
            segments[segments.count - 1] += fragment.segments[0]
            segments += fragment.segments.dropFirst()
            bindings += fragment.bindings
        }
    }
}

extension SQLExecutor {
    /// Runs `query`; returns the rows it changed.
    @discardableResult
    public func run(_ query: SQLQuery) throws -> Int {
        try execute(query.text(for: dialect), query.bindings)
        return changedRows
    }

    public func fetchAll(_ query: SQLQuery) throws -> [SQLRow] {
        try self.query(query.text(for: dialect), query.bindings)
    }

    public func fetchOne(_ query: SQLQuery) throws -> SQLRow? {
        try fetchAll(query).first
    }
}
