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
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.activityColumns) FROM (
                        SELECT \(Self.activityColumns) FROM messages ORDER BY id DESC LIMIT ?)
                    WHERE state = 'sending' OR completed_at >= ?
                    UNION
                    SELECT \(Self.activityColumns) FROM messages
                    WHERE state = 'sending' AND \(Self.pendingIndexTerm)
                    ORDER BY id DESC
                    """,
                arguments: [min(max(scanLimit, 1), 100_000), sinceMilliseconds])
            return try rows.map(Self.activity)
        }
    }

    private static let activityColumns = """
        id, app_id, state, created_at, started_at, completed_at, total, queued, sending, delivered, failed, \
        skipped, held
        """

    private static func activity(_ row: Row) throws -> MessageActivity {
        let stateName: String = row[2]
        guard let state = MessageState(rawValue: stateName) else {
            throw StoreError(.unavailable, "messages.state holds unknown value \(stateName)")
        }
        let started: Int64? = row[4]
        let completed: Int64? = row[5]
        var counts = DeliveryCounts()
        counts.queued = row[7]
        counts.sending = row[8]
        counts.delivered = row[9]
        counts.failed = row[10]
        counts.skipped = row[11]
        counts.held = row[12]
        return MessageActivity(
            id: row[0], appID: row[1], state: state, createdAt: SQLTime.date(row[3]),
            startedAt: started.map(SQLTime.date), completedAt: completed.map(SQLTime.date), total: row[6],
            counts: counts)
    }
}
