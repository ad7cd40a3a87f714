import Foundation
import GRDB
import Testing
import TuisongCore
import TuisongSQLStore

@testable import TuisongSQLiteStore

/// Statements whose lists are bound as one parameter keep one text whatever the list (and one
/// more for a list of one value), so the connection keeps them prepared however long they are.
@Suite("Statements kept prepared")
struct KeptStatementTests {
    @Test("A long statement with a list bound as one parameter is kept prepared, one for every longer list")
    func boundListStatementIsKept() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let dialect = SQLiteDialect()
        func text(_ accounts: [String]) -> String {
            let query: SQLQuery = """
                SELECT d.id, d.token, d.environment, d.updated_at, d.credential_selector, d.channel, d.im_account,
                    d.locale, d.app_state, d.account_id
                FROM \(dialect.list(accounts)) CROSS JOIN devices d
                WHERE d.app_id = \(Int64(1)) AND d.im_account = value AND d.id > \(Int64(0))
                    AND d.invalidated_at IS NULL
                ORDER BY d.id LIMIT \(Int64(100))
                /* \(raw: String(repeating: "past 512 bytes, as a page with more columns would be, ", count: 5)) */
                """
            return query.text(for: dialect)
        }
        let one = text(["bob", "carol", "dave"])
        #expect(one.utf8.count > 512)
        #expect(one == text(["erin", "frank"]))
        let another = text(["grace", "heidi", "ivan", "judy"])
        // A list of one value has a text of its own, the same for every value.
        let single = text(["alice"])
        let singleAgain = text(["mallory"])
        #expect(single != one)
        #expect(single == singleAgain)
        let keptSingle = try await fixture.store.pool.read { db in
            let first = try GRDBExecutor.reusable(single, db)
            let second = try GRDBExecutor.reusable(singleAgain, db)
            return first != nil && first === second
        }
        #expect(keptSingle)
        let kept = try await fixture.store.pool.read { db in
            let first = try GRDBExecutor.reusable(one, db)
            let second = try GRDBExecutor.reusable(another, db)
            return first != nil && first === second
        }
        #expect(kept)
        // An IN list written out value by value has a text per length: not kept.
        let written = one + " /* " + String(repeating: "?, ", count: 10) + " */"
        let notKept = try await fixture.store.pool.read { db in
            try GRDBExecutor.reusable(written.replacingOccurrences(of: SQLList.marker, with: ""), db) == nil
        }
        #expect(notKept)
    }
}
