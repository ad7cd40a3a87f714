import Foundation
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore

/// On PostgreSQL an IM chat line's badge count rewrites its account's row in place (a HOT
/// update: no new index entries), even on a page of accounts imported in bulk: the table's pages
/// keep room for it (`pg23-badges-counted-in-place`, issue #47). Read from the page itself
/// (`pageinspect`).
@Suite struct BadgeCountsInPlaceTests {
    @Test func aBadgeCountRewritesItsAccountOnItsOwnPageAfterABulkImport() async throws {
        try await WorkQueueTests.withNodes(1) { nodes in
            let store = nodes[0]
            let appID = try await store.createApp(name: "im", bundleID: "com.example.im", apiKeyHash: "k").id
            // More accounts than a page holds, in one statement, as an import writes them: the
            // first page is as full as the table lets an insert make it.
            let ids = try await store.write { conn in
                try conn.execute(
                    """
                    INSERT INTO accounts (app_id, account, created_at, updated_at)
                    SELECT \(appID), 'user' || n, 0, 0 FROM generate_series(1, 400) AS n
                    """)
                return try conn.execute(
                    "SELECT id FROM accounts WHERE account IN ('user1', 'user2', 'user3') ORDER BY id"
                ).rows.map { $0[0].int64 ?? 0 }
            }
            func message() async throws -> Int64 {
                let job = PushJob(
                    appID: appID, vendor: "tencent", audience: .allAccounts, content: PushContent(),
                    options: PushOptions())
                let id = try await store.createMessage(job, state: .queued).id
                #expect(try await store.startMessage(id: id, total: nil, at: Date()))
                return id
            }
            // A Tencent line's grant (two pages together, as the engine batches them) and an
            // Easemob line's increment.
            let (m1, m2) = (try await message(), try await message())
            let granted = try await store.grantBadges([
                BadgeGrantRequest(appID: appID, messageID: m1, accounts: [AccountKey(id: ids[0], name: "user1")]),
                BadgeGrantRequest(appID: appID, messageID: m2, accounts: [AccountKey(id: ids[1], name: "user2")]),
            ])
            #expect(granted == [["user1": 1], ["user2": 1]])
            #expect(try await store.incrementBadges(appID: appID, accounts: ["user3"]) == ["user3": 1])

            let (heapOnly, pages) = try await store.write { conn in
                try conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
                let heapOnly = try conn.execute(
                    """
                    SELECT count(*) FROM heap_page_items(get_raw_page('accounts', 0))
                    WHERE t_infomask2 IS NOT NULL AND (t_infomask2::int & 32768) <> 0
                    """
                ).rows[0][0].int64
                let pages = try conn.execute("SELECT pg_relation_size('accounts') / current_setting('block_size')::int")
                    .rows[0][0].int64
                return (heapOnly, pages)
            }
            #expect(pages ?? 0 > 1, "the import filled more than one page")
            #expect(heapOnly == 3, "the three counts' new versions are heap-only, on the first page")
            let options = try await store.read { conn in
                try conn.execute("SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'accounts'")
                    .rows.first?[0].string
            }
            #expect(options?.split(separator: ",").contains("fillfactor=80") == true, "\(options ?? "")")
        }
    }
}
