import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// The console's reads are written once (`SQLStoreBackend+Console`) but for this one: on
// PostgreSQL a message's counts add its slices' (`message_slices`), which SQLite does not have.
extension SQLiteStore: ConsoleStore {
    public func messageActivity(since: Date, scanLimit: Int) async throws -> [MessageActivity] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await read { db in
            // The newest messages by id (a bounded scan of the primary key), plus every message
            // still sending however old (the messages_pending index).
            try db.fetch(
                """
                SELECT \(raw: Self.activityColumns) FROM (
                    SELECT \(raw: Self.activityColumns) FROM messages ORDER BY id DESC
                    LIMIT \(min(max(scanLimit, 1), 100_000)))
                WHERE state = 'sending' OR completed_at >= \(sinceMilliseconds)
                UNION
                SELECT \(raw: Self.activityColumns) FROM messages
                WHERE state = 'sending' AND \(raw: Self.pendingIndexTerm)
                ORDER BY id DESC
                """
            ) { try Rows.messageActivity(columns: $0) }
        }
    }

    private static let activityColumns = """
        id, app_id, state, created_at, started_at, completed_at, total, queued, sending, delivered, failed, \
        skipped, held
        """
}
