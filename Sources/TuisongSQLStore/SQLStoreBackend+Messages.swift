import Foundation
import TuisongCore

// Message reads and the idempotency-key sweep, written once. The rest of `MessageStore` stays
// with each backend: creating a message (SQLite's group commit and record cache), progress and
// its counters (one row on SQLite; slices several nodes write apart on PostgreSQL), retries
// and held deliveries (which counters move), and reading a message (PostgreSQL adds its slices'
// counts).
extension SQLStoreBackend {
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
