import Testing

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore

/// A plugin writes `?` placeholders; each database's executor writes them its dialect's way,
/// never inside a quoted string, a quoted identifier or a comment.
@Suite struct SQLPlaceholdersTests {
    static let sql = """
        SELECT ?, 'a?', 'it''s ?', "col?", E'it\\'s ?', ? -- a ? here
        FROM t /* and ? there */ WHERE x = ?
        """

    @Test func postgreSQLNumbersThePlaceholdersOutsideQuotesAndComments() {
        #expect(
            SQLPlaceholders.numbered(Self.sql, for: PostgresDialect()) == """
                SELECT $1, 'a?', 'it''s ?', "col?", E'it\\'s ?', $2 -- a ? here
                FROM t /* and ? there */ WHERE x = $3
                """)
    }

    @Test func sqliteKeepsItsQuestionMarks() {
        #expect(SQLPlaceholders.numbered(Self.sql, for: SQLiteDialect()) == Self.sql)
    }
}
