import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// The backend's own statements are `SQLQuery`s too, values bound by interpolation, run here on
// the GRDB connection the store holds. A statement is prepared once per connection (as
// `GRDBExecutor` keeps them) and its rows are read off GRDB's cursor in place.
extension Database {
    /// `query`'s statement, prepared once per connection when its text is one of a few (short,
    /// or holding an `SQLList`), and its arguments.
    func statement(_ query: SQLQuery) throws -> (statement: Statement, arguments: StatementArguments) {
        let sql = query.text(for: SQLiteDialect())
        let statement = try GRDBExecutor.reusable(sql, self) ?? makeStatement(sql: sql)
        return (statement, GRDBExecutor.arguments(query.bindings))
    }

    /// Runs `query` (a write); returns the rows it changed.
    @discardableResult
    func run(_ query: SQLQuery) throws -> Int {
        let (statement, arguments) = try statement(query)
        try statement.execute(arguments: arguments)
        return changesCount
    }

    /// `statement` in SQLite's placeholders, prepared once on this connection (GRDB's cached
    /// statement, looked up once per loop), to run with each row's values (`SQLStatement`).
    func prepare(_ statement: SQLStatement) throws -> GRDBPreparedStatement {
        GRDBPreparedStatement(
            prepared: try cachedStatement(sql: statement.text(for: SQLiteDialect())), statement: statement)
    }

    /// `query`'s rows, each read off the cursor by `read` (no `Row` copied).
    func fetch<T>(_ query: SQLQuery, _ read: (Row) throws -> T) throws -> [T] {
        let (statement, arguments) = try statement(query)
        let cursor = try Row.fetchCursor(statement, arguments: arguments)
        var values: [T] = []
        while let row = try cursor.next() { values.append(try read(row)) }
        return values
    }
}

/// An `SQLStatement` prepared on one connection, run once per row. Valid only inside the
/// closure that was handed the connection.
struct GRDBPreparedStatement {
    let prepared: Statement
    let statement: SQLStatement

    /// Runs the statement with `values` (parameter 1 first).
    func run(_ values: [(any DatabaseValueConvertible)?]) throws {
        try prepared.execute(arguments: StatementArguments(statement.bindings(values)))
    }
}
