import Foundation
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore

/// How PostgreSQL keeps `messages` for a chat load (issue #47): no planner statistics of a
/// message's documents (`pg24`), and scheduled messages alone indexed by their send time (`pg26`).
@Suite struct PostgresMessageTableTests {
    /// `ANALYZE messages`, which the queue's statistics keeper runs as a chat burst grows the
    /// table, skips the documents and still describes the columns statements compare.
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

    /// Scheduled messages are found by their send time on an index of their own; a message
    /// queued or sending (every chat line) writes no entry there (`pg26-scheduled-messages`).
    @Test func onlyScheduledMessagesAreIndexedByTheirSendTime() async throws {
        try await WorkQueueTests.withNodes(1) { nodes in
            let store = nodes[0]
            let line = try await WorkQueueTests.tokenMessage(store, tokens: 1)
            let later = try await store.createMessage(
                PushJob(
                    appID: line.appID, vendor: "native", audience: .tokens([String(repeating: "b", count: 64)]),
                    content: PushContent(), options: PushOptions(), sendAt: Date().addingTimeInterval(3600)),
                state: .scheduled)
            let (indexes, entries) = try await store.write { conn in
                try conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
                let indexes = try conn.execute(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'messages' ORDER BY indexname"
                ).rows.map { ($0[0].string ?? "", $0[1].string ?? "") }
                // The index's one leaf page (1; 0 is its metapage).
                let entries = try conn.execute("SELECT count(*) FROM bt_page_items('messages_scheduled', 1)")
                    .rows[0][0].int64
                return (indexes, entries)
            }
            #expect(!indexes.map(\.0).contains("messages_pending"))
            let scheduled = indexes.first { $0.0 == "messages_scheduled" }?.1 ?? ""
            #expect(scheduled.hasSuffix("(send_at) WHERE (state = 'scheduled'::text)"), "\(scheduled)")
            #expect(entries == 1, "the scheduled message \(later.id) only, not the queued \(line.id)")
        }
    }
}
