import Foundation
import Testing
import TuisongCore
import TuisongPostgresStore
import TuisongSQLiteStore

/// `SQLQuery`: interpolated values become bindings, in order, and each dialect writes its own
/// placeholders; trusted text and nested fragments keep the numbering whole.
@Suite struct SQLQueryTests {
    @Test func valuesBecomeBindingsAndEachDialectWritesItsPlaceholders() {
        let name = "O'Brien; DROP TABLE apps"
        let id: Int64 = 7
        let selector: String? = nil
        let query: SQLQuery = "SELECT * FROM apps WHERE id = \(id) AND name = \(name) AND selector IS \(selector)"
        #expect(query.text(for: SQLiteDialect()) == "SELECT * FROM apps WHERE id = ? AND name = ? AND selector IS ?")
        #expect(
            query.text(for: PostgresDialect()) == "SELECT * FROM apps WHERE id = $1 AND name = $2 AND selector IS $3")
        #expect(query.bindings == [.integer(7), .text(name), .null])
    }

    @Test func rawTextAndNestedFragmentsKeepTheNumbering() {
        let filter: SQLQuery = "app_id = \(Int64(3)) AND token > \("abc")"
        let query: SQLQuery = "SELECT \(raw: "id, token") FROM devices WHERE \(filter) LIMIT \(10)"
        #expect(
            query.text(for: PostgresDialect())
                == "SELECT id, token FROM devices WHERE app_id = $1 AND token > $2 LIMIT $3")
        #expect(query.bindings == [.integer(3), .text("abc"), .integer(10)])
        let joined = query + " OFFSET \(5)"
        #expect(joined.text(for: PostgresDialect()).hasSuffix("LIMIT $3 OFFSET $4"))
        #expect(joined.bindings.count == 4)
    }

    @Test func aLiteralWithoutValuesHasNoBindings() {
        let query: SQLQuery = "DELETE FROM console_sessions"
        #expect(query.text(for: PostgresDialect()) == "DELETE FROM console_sessions")
        #expect(query.bindings.isEmpty)
    }

    /// Each database answers the dialect in its own file; nothing falls back to SQLite's.
    @Test func eachDatabaseSpellsWhatDiffers() {
        let sqlite: any SQLDialect = SQLiteDialect()
        let postgres: any SQLDialect = PostgresDialect()
        #expect(sqlite.isNotDistinctFrom == "IS")
        #expect(postgres.isNotDistinctFrom == "IS NOT DISTINCT FROM")
        #expect(sqlite.binaryCollation == "")
        #expect(postgres.binaryCollation == " COLLATE \"C\"")
        #expect(sqlite.jsonText("labels", "timer_id") == "json_extract(labels, '$.timer_id')")
        #expect(postgres.jsonText("labels", "a", "b") == "(labels::jsonb #>> '{a,b}')")
        #expect(sqlite.serializingWrites(to: "console_sessions") == nil)
        #expect(
            postgres.serializingWrites(to: "console_sessions")
                == "LOCK TABLE console_sessions IN SHARE ROW EXCLUSIVE MODE")
        #expect(sqlite.messageCounter("held") == "messages.held")
        #expect(postgres.messageCounter("held", table: "m").hasPrefix("(m.held + coalesce("))
        #expect(!sqlite.sharesWorkInSlices && postgres.sharesWorkInSlices)
        #expect((sqlite.name, postgres.name) == ("sqlite", "postgresql"))
    }
}
