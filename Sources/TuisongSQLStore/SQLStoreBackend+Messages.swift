import Foundation
import TuisongCore

// Message reads and the idempotency-key sweep, written once. The rest of `MessageStore` stays
// with each backend: creating a message (SQLite's group commit and record cache), progress and
// its counters (one row on SQLite; slices several nodes write apart on PostgreSQL), retries
// and held deliveries (which counters move), and reading a message (PostgreSQL adds its slices'
// counts).
extension SQLStoreBackend {
    /// Answers when the database does; used by `/healthz`.
    public func ping() async throws {
        try await sqlRead { db in _ = try db.fetchAll("SELECT 1") }
    }

    /// Deliveries by channel and state, plus what the services confirmed per channel. A token
    /// no device registered has no known service: counted under none.
    public func channelCounts(messageID: Int64) async throws -> [PushChannel: DeliveryCounts] {
        try await sqlRead { db in
            var counts: [PushChannel: DeliveryCounts] = [:]
            // Summed: PostgreSQL keeps a row per slice.
            for row in try db.fetchAll(
                """
                SELECT channel, CAST(sum(delivered) AS BIGINT) FROM message_channel_deliveries
                WHERE message_id = \(messageID) GROUP BY channel
                """)
            {
                guard let channel = PushChannel(rawValue: row.string(0)) else { continue }
                counts[channel, default: DeliveryCounts()].delivered += Int(row.int64(1))
            }
            for row in try db.fetchAll(
                """
                SELECT channel, state, count(*) FROM deliveries
                WHERE message_id = \(messageID) AND (reason IS NULL OR reason <> 'UnknownDevice') GROUP BY channel, state
                """)
            {
                guard let channel = PushChannel(rawValue: row.string(0)),
                    let state = DeliveryState(rawValue: row.string(1))
                else { continue }
                counts[channel, default: DeliveryCounts()][state] += Int(row.int64(2))
            }
            return counts
        }
    }

    public func pendingDeliveries(messageID: Int64) async throws -> [PendingDeliveries] {
        try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT state, reason, count(*), min(next_attempt_at) FROM deliveries
                WHERE message_id = \(messageID) AND state IN ('queued', 'sending', 'held') GROUP BY state, reason
                ORDER BY state, reason
                """
            ).compactMap { row in
                guard let state = DeliveryState(rawValue: row.string(0)) else { return nil }
                return PendingDeliveries(
                    state: state, reason: row.optionalString(1), count: Int(row.int64(2)), until: row.optionalDate(3))
            }
        }
    }

    /// Retry rows waiting (`queued`) and rows held for want of a working credential.
    public func deliveryBacklog() async throws -> (retryQueued: Int, held: Int) {
        try await sqlRead { db in
            var retryQueued = 0
            var held = 0
            for row in try db.fetchAll(
                "SELECT state, count(*) FROM deliveries WHERE state IN ('queued', 'held') GROUP BY state")
            {
                if row.string(0) == "queued" { retryQueued = Int(row.int64(1)) } else { held = Int(row.int64(1)) }
            }
            return (retryQueued, held)
        }
    }

    public func deliveries(messageID: Int64, state: DeliveryState?, cursor: String?, limit: Int) async throws
        -> Page<DeliveryRecord>
    {
        let afterID = try cursor.map(Cursor.decode) ?? 0
        let limit = min(max(limit, 1), 1000)
        return try await sqlRead { db in
            var query: SQLQuery =
                "SELECT \(raw: Rows.deliveryColumns) FROM deliveries WHERE message_id = \(messageID) AND id > \(afterID)"
            if let state { query = query + " AND state = \(state.rawValue)" }
            var records = try db.fetchAll(query + " ORDER BY id LIMIT \(limit + 1)").map {
                try Rows.delivery(columns: $0)
            }
            var next: String?
            if records.count > limit {
                records.removeLast()
                next = records.last.map { Cursor.encode($0.id) }
            }
            return Page(items: records, nextCursor: next)
        }
    }

    public func forgetIdempotencyKeys(before: Date, limit: Int) async throws -> Int {
        try await sqlWrite { db in
            // SKIP LOCKED on PostgreSQL: nodes sweeping at once take different rows instead of
            // waiting on each other, and a key being taken over by a new message right now is
            // left alone.
            try db.run(
                """
                DELETE FROM idempotency_keys WHERE (app_id, key) IN (
                    SELECT app_id, key FROM idempotency_keys WHERE created_at < \(SQLTime.milliseconds(before))
                    ORDER BY created_at LIMIT \(max(limit, 0))\(raw: db.dialect.skipLocked))
                """)
        }
    }
}
