import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// Releasing held deliveries, PostgreSQL's way: they move their slice's counters
// (`deliveries.slice`), which SQLite does not have. The three `releaseHeldDeliveries` around it
// are written once (`SQLStoreBackend+Messages`), as are the audience pages
// (`SQLStoreBackend+Audience`).
extension PostgresStore {
    // MARK: deliveries

    /// Held rows of the app's messages matching `condition` go back to `queued`, due now, with
    /// the counters moved along: those of the slice row each delivery belongs to
    /// (`deliveries.slice`), or the message row's for a message that has no such slice row
    /// (slice 0 of a message never sliced). SQLite keeps them on the message's row only.
    public func sqlReleaseHeld(appID: Int64, matching condition: SQLQuery, now: Date) async throws -> Int {
        let nowMs = SQLTime.milliseconds(now)
        return try await write { conn in
            // One statement moves the rows and says how many per (message, slice).
            let moved = try PostgresExecutor(conn, prepares: true).fetchAll(
                """
                WITH released AS (
                    UPDATE deliveries d SET state = 'queued', next_attempt_at = \(nowMs), updated_at = \(nowMs)
                    FROM messages m
                    WHERE m.id = d.message_id AND m.app_id = \(appID) AND d.state = 'held' AND \(condition)
                    RETURNING d.message_id, d.slice)
                SELECT message_id, slice, count(*) FROM released GROUP BY message_id, slice ORDER BY message_id, slice
                """)
            var total = 0
            for row in moved {
                let (messageID, slice, n) = (row.int64(0), row.int64(1), row.int64(2))
                let onSlice = try conn.run(
                    """
                    UPDATE message_slices SET held = held - \(n), queued = queued + \(n)
                    WHERE message_id = \(messageID) AND slice = \(slice)
                    """)
                if (onSlice.affectedRows ?? 0) == 0 {
                    try conn.run(
                        "UPDATE messages SET held = held - \(n), queued = queued + \(n) WHERE id = \(messageID)")
                }
                total += Int(n)
            }
            return total
        }
    }
}
