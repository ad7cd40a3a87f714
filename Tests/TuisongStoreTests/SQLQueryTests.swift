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

    /// `SQLStatement`, run once per row: rendered once, each run binding its values in the order
    /// of the places; a number written twice is bound twice.
    @Test func aStatementRunPerRowBindsItsNumberedParametersInPlaceOrder() {
        let move: SQLStatement =
            "UPDATE messages SET queued = queued - \(parameter: 1), sending = sending + \(parameter: 1) WHERE id = \(parameter: 2)"
        #expect(
            move.text(for: SQLiteDialect())
                == "UPDATE messages SET queued = queued - ?, sending = sending + ? WHERE id = ?")
        #expect(
            move.text(for: PostgresDialect())
                == "UPDATE messages SET queued = queued - $1, sending = sending + $2 WHERE id = $3")
        #expect(move.parameterCount == 2)
        #expect(move.bindings([SQLValue.integer(3), .integer(9)]) == [.integer(3), .integer(3), .integer(9)])
        let swapped: SQLStatement = "SELECT \(parameter: 2), \(raw: "x"), \(parameter: 1)"
        #expect(swapped.text(for: PostgresDialect()) == "SELECT $1, x, $2")
        #expect(swapped.bindings(["a", "b"]) == ["b", "a"])
    }

    /// The same prepared statement run for several rows in one transaction, on either database,
    /// each run with its own values.
    @Test(arguments: Backend.allCases)
    func aPreparedStatementRunsOncePerRow(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let apps = [
                try await makeApp(store, "one"), try await makeApp(store, "two"), try await makeApp(store, "three"),
            ]
            let changed = try await store.sharedDatabase.write { db in
                let rename = db.prepare("UPDATE apps SET name = \(parameter: 1) WHERE id = \(parameter: 2)")
                var changed = 0
                for app in apps { changed += try rename.run([.text("renamed-\(app.name)"), .integer(app.id)]) }
                let read = db.prepare("SELECT name FROM apps WHERE id = \(parameter: 1)")
                return (changed, try apps.map { try read.fetchAll([.integer($0.id)]).first?[0].string })
            }
            #expect(changed.0 == 3)
            #expect(changed.1 == ["renamed-one", "renamed-two", "renamed-three"])
        }
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
        #expect(
            sqlite.messageCounts(table: "m") == ("", "m.queued, m.sending, m.delivered, m.failed, m.skipped, m.held"))
        let counts = postgres.messageCounts(table: "m")
        #expect(counts.join.hasPrefix("LEFT JOIN LATERAL (SELECT sum(queued)::bigint AS queued"))
        #expect(counts.columns.hasPrefix("m.queued + coalesce(m_slices.queued, 0), "))
        #expect(!sqlite.sharesWorkInSlices && postgres.sharesWorkInSlices)
        #expect((sqlite.name, postgres.name) == ("sqlite", "postgresql"))
    }
}
