import Foundation
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore

/// PostgreSQL keeps no planner statistics of a message's documents (`pg24-message-documents-
/// unanalyzed`, issue #47): `ANALYZE messages`, which the queue's statistics keeper runs as a
/// chat burst grows the table, skips them and still describes the columns statements compare.
@Suite struct MessageStatisticsTests {
    @Test func analyzingMessagesSkipsTheirDocuments() async throws {
        try await WorkQueueTests.withNodes(1) { nodes in
            let store = nodes[0]
            _ = try await WorkQueueTests.tokenMessage(store, tokens: 1)
            let analyzed = try await store.write { conn in
                try conn.execute("ANALYZE messages")
                return try conn.execute("SELECT attname FROM pg_stats WHERE tablename = 'messages'").rows
                    .compactMap { $0[0].string }
            }
            #expect(Set(analyzed).isDisjoint(with: ["audience", "content", "options", "labels", "vendor_context"]))
            let compared: Set = ["id", "app_id", "state", "send_at", "vendor_message_id"]
            #expect(compared.isSubset(of: analyzed), "\(analyzed)")
        }
    }
}
