import GRDB
import TuisongSQLStore

extension SQLiteStore {
    /// Delivery rows waiting for a retry (`queued` with a next attempt) and rows held for want
    /// of a working credential, for the gateway's gauges. The retry count reads the partial
    /// index of due deliveries; the held count scans the deliveries table.
    public func deliveryBacklog() async throws -> (retryQueued: Int, held: Int) {
        try await readOneStatement { db in
            var retryQueued = 0
            var held = 0
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT state, count(*) AS n FROM deliveries WHERE state IN ('queued', 'held') GROUP BY state")
            for row in rows {
                let state: String = row["state"]
                let count: Int = row["n"]
                if state == "queued" { retryQueued = count } else { held = count }
            }
            return (retryQueued, held)
        }
    }
}
