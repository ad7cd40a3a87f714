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

extension SQLQuery {
    /// The text and parameters of a statement sent in a pipeline (`PostgresConnection.pipeline`).
    var postgresStatement: (String, [PostgresValue]) {
        (text(for: PostgresDialect()), bindings.map(PostgresExecutor.parameter))
    }
}
