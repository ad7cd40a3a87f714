/// A statement run once per row of a loop (a counter per message, an outcome per delivery): its
/// text is rendered once for the database and each run binds only that row's values, so a loop
/// over a thousand rows neither renders its text nor looks its prepared statement up a thousand
/// times. The values are numbered parameters, each number written wherever the text needs it:
///
///     let moveToSending: SQLStatement = """
///         UPDATE messages SET queued = queued - \(parameter: 1), sending = sending + \(parameter: 1)
///         WHERE id = \(parameter: 2)
///         """
///     let move = db.prepare(moveToSending)  // rendered once
///     for (id, n) in claimed { try move.run([.integer(n), .integer(id)]) }
///
/// A statement run once is an `SQLQuery`, its values interpolated where they go.
public struct SQLStatement: Sendable, Hashable, ExpressibleByStringInterpolation {
    /// The text between parameters: `segments.count == slots.count + 1`.
    public let segments: [String]
    /// The parameter number (1, 2, …) of each place, in the order of the text.
    public let slots: [Int]
    /// How many values a run binds: every number from 1 to this one appears.
    public let parameterCount: Int
    /// Whether each number is written once, in order: a run binds its values as they come.
    private let bindsInOrder: Bool

    public init(stringLiteral value: String) {
        segments = [value]
        slots = []
        parameterCount = 0
        bindsInOrder = true
    }

    public init(stringInterpolation: StringInterpolation) {
        segments = stringInterpolation.segments
        slots = stringInterpolation.slots
        parameterCount = slots.max() ?? 0
        bindsInOrder = slots.enumerated().allSatisfy { $0.element == $0.offset + 1 }
        precondition(Set(slots) == Set((0..<parameterCount).map { $0 + 1 }), "parameters numbered 1…n, none skipped")
    }

    /// The text in `dialect`, one placeholder per place (a number written twice is bound twice).
    public func text(for dialect: any SQLDialect) -> String {
        var text = segments[0]
        for position in segments.indices.dropFirst() {
            text += dialect.placeholder(position)
            text += segments[position]
        }
        return text
    }

    /// A run's `values` (parameter 1 first) in the order of the places; the values themselves
    /// when each number is written once, in order.
    public func bindings<Value>(_ values: [Value]) -> [Value] {
        precondition(values.count == parameterCount, "\(parameterCount) values wanted, \(values.count) given")
        if bindsInOrder { return values }
        return slots.map { values[$0 - 1] }
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var segments: [String] = [""]
        var slots: [Int] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            segments.reserveCapacity(interpolationCount + 1)
            slots.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            segments[segments.count - 1] += literal
        }

        /// The place of parameter `number` (1, 2, …).
        public mutating func appendInterpolation(parameter number: Int) {
            precondition(number >= 1, "parameters are numbered from 1")
            slots.append(number)
            segments.append("")
        }

        /// Trusted SQL text, written as is (a column list, a table name chosen by the caller).
        public mutating func appendInterpolation(raw text: String) { appendLiteral(text) }
    }
}

/// An `SQLStatement` rendered for one executor, run with each row's values. Valid only inside
/// the closure its executor was handed to.
public struct SQLPreparedStatement {
    let executor: any SQLExecutor
    let text: String
    let statement: SQLStatement

    /// Runs the statement with `values` (parameter 1 first); returns the rows it changed.
    @discardableResult
    public func run(_ values: [SQLValue]) throws -> Int {
        try executor.execute(text, statement.bindings(values))
        return executor.changedRows
    }

    /// The rows the statement returns with `values`.
    public func fetchAll(_ values: [SQLValue]) throws -> [SQLRow] {
        try executor.query(text, statement.bindings(values))
    }
}

extension SQLExecutor {
    /// `statement` rendered once for this executor's dialect, to run once per row.
    public func prepare(_ statement: SQLStatement) -> SQLPreparedStatement {
        SQLPreparedStatement(executor: self, text: statement.text(for: dialect), statement: statement)
    }
}
