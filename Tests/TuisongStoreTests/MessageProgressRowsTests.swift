import Foundation
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore

/// On PostgreSQL a message's slices and per-service counts carry no foreign key to it (each new
/// row's check cost the server a lookup and a lock: `pg25-message-progress-unchecked`, issue
/// #47); they still go with their message, by a trigger, whenever messages are deleted.
@Suite struct MessageProgressRowsTests {
    @Test func aDeletedAppsMessagesTakeTheirSlicesAndCountsWithThem() async throws {
        try await WorkQueueTests.withNodes(1) { nodes in
            let store = nodes[0]
            let kept = try await WorkQueueTests.tokenMessage(store, tokens: 1)
            let gone = try await WorkQueueTests.tokenMessage(store, tokens: 3)
            let claims = try await store.claimWork(now: Date(), limit: 10, sliceLimit: 4, running: [])
            #expect(Set(claims.map(\.record.id)) == [kept.id, gone.id])
            try await store.write { conn in
                try conn.execute(
                    """
                    INSERT INTO message_channel_deliveries (message_id, slice, channel, delivered)
                    VALUES (\(kept.id), 0, 'apns', 1), (\(gone.id), 0, 'apns', 2), (\(gone.id), 0, 'fcm', 1)
                    """)
            }

            #expect(try await store.deleteApp(id: gone.appID))
            let left = try await store.read { conn in
                (
                    slices: try conn.execute("SELECT DISTINCT message_id FROM message_slices").rows.map { $0[0].int64 },
                    counts: try conn.execute("SELECT DISTINCT message_id FROM message_channel_deliveries").rows
                        .map { $0[0].int64 },
                    keys: try conn.execute(
                        """
                        SELECT count(*) FROM pg_constraint WHERE contype = 'f'
                            AND conrelid IN ('message_slices'::regclass, 'message_channel_deliveries'::regclass)
                        """
                    ).rows[0][0].int64
                )
            }
            #expect(left.slices == [kept.id], "the deleted app's message took its slice with it")
            #expect(left.counts == [kept.id], "and its per-service counts")
            #expect(left.keys == 0, "no foreign key checks each new row")

            // A message deleted by itself, as an operator's statement would: the same.
            try await store.write { conn in try conn.execute("DELETE FROM messages WHERE id = \(kept.id)") }
            let none = try await store.read { conn in
                try conn.execute(
                    """
                    SELECT (SELECT count(*) FROM message_slices) + (SELECT count(*) FROM message_channel_deliveries)
                    """
                ).rows[0][0].int64
            }
            #expect(none == 0)
        }
    }
}
