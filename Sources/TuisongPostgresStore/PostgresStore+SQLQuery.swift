import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// The backend's own statements are `SQLQuery`s too, values bound by interpolation: run here on
// a connection the store holds, prepared once per connection as every store statement is.
extension PostgresConnection {
    /// Runs `query`, its text in PostgreSQL's placeholders (`$1`, `$2`, …) and kept prepared on
    /// this connection under a name derived from the text (`run(_:_:)`).
    @discardableResult
    func run(_ query: SQLQuery) throws -> PostgresResult {
        try run(query.text(for: PostgresDialect()), query.bindings.map(PostgresExecutor.parameter))
    }
}

extension SQLQuery.StringInterpolation {
    /// A driver value as a binding: an array literal for `unnest($1::bigint[])`
    /// (`PostgresArray`), a boolean for a `$1::bool` (sent as `1` or `0`, which PostgreSQL reads
    /// as a boolean where the statement wants one).
    mutating func appendInterpolation(_ value: PostgresValue) {
        appendInterpolation(PostgresExecutor.value(value))
    }
}

extension PostgresConnection {
    /// Runs `query` without keeping it prepared: a statement run once in a while (a bulk
    /// import's, on its temporary tables).
    @discardableResult
    func runUnprepared(_ query: SQLQuery) throws -> PostgresResult {
        try execute(query.text(for: PostgresDialect()), query.bindings.map(PostgresExecutor.parameter))
    }
}

extension PostgresConnection {
    /// Runs `query` prepared, as `run(_:)` does, planned once per connection: in a transaction of
    /// its own that sets `plan_cache_mode = force_generic_plan` (`SET LOCAL`), in one round trip.
    /// For a statement run many times a second whose plan does not depend on its values, and
    /// whose planning costs more than its run: left to itself, PostgreSQL planned the work
    /// queue's claim again on every other call, ~0.8 ms each, half the server's time for it at
    /// 1,500 chat lines a second (issue #47). A plan is made again when the statistics of a
    /// table it reads change (`QueueStatisticsKeeper`), so it follows the tables' growth.
    @discardableResult
    func runWithGenericPlan(_ query: SQLQuery) throws -> PostgresResult {
        let sql = query.text(for: PostgresDialect())
        let name = StatementNames.name(for: sql)
        try prepare(name: name, sql: sql)
        return try executePrepared(
            name: name, query.bindings.map(PostgresExecutor.parameter), inTransactionOfItsOwn: "BEGIN",
            settings: ["SET LOCAL plan_cache_mode = force_generic_plan"])
    }
}

extension PostgresConnection {
    /// `statement` in PostgreSQL's placeholders, to run with each row's values
    /// (`SQLStatement`): its text is rendered and its prepared name found once per loop, and it
    /// is prepared on this connection at its first run (an empty loop costs no round trip).
    func prepare(_ statement: SQLStatement) -> PostgresPreparedStatement {
        let sql = statement.text(for: PostgresDialect())
        return PostgresPreparedStatement(
            connection: self, name: StatementNames.name(for: sql), sql: sql, statement: statement)
    }
}

/// An `SQLStatement` on one connection, run once per row. Valid only inside the closure that
/// was handed the connection.
final class PostgresPreparedStatement {
    let connection: PostgresConnection
    let name: String
    let sql: String
    let statement: SQLStatement
    private var isPrepared = false

    init(connection: PostgresConnection, name: String, sql: String, statement: SQLStatement) {
        self.connection = connection
        self.name = name
        self.sql = sql
        self.statement = statement
    }

    /// Runs the statement with `values` (parameter 1 first).
    @discardableResult
    func run(_ values: [PostgresValue]) throws -> PostgresResult {
        if !isPrepared {
            try connection.prepare(name: name, sql: sql)
            isPrepared = true
        }
        return try connection.executePrepared(name: name, statement.bindings(values))
    }
}

@available(*, unavailable)
extension PostgresPreparedStatement: Sendable {}

extension SQLQuery {
    /// The text and parameters of a statement sent in a pipeline (`PostgresConnection.pipeline`).
    var postgresStatement: (String, [PostgresValue]) {
        (text(for: PostgresDialect()), bindings.map(PostgresExecutor.parameter))
    }
}
