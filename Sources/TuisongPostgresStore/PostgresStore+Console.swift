import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// The console's reads are written once (`SQLStoreBackend+Console`) but for this one: a message's
// counts here are its own row's (its retries) plus its slices' (`message_slices`), which SQLite
// does not have.
extension PostgresStore: ConsoleStore {
    public func messageActivity(since: Date, scanLimit: Int) async throws -> [MessageActivity] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await read { conn in
            // The newest messages by id (a bounded scan of the primary key), plus every message
            // still sending however old (the messages_pending index); each with its slices' counts
            // added to its own.
            try conn.run(
                """
                SELECT m.id, m.app_id, m.state, m.created_at, m.started_at, m.completed_at, m.total,
                    m.queued + coalesce(s.queued, 0), m.sending + coalesce(s.sending, 0),
                    m.delivered + coalesce(s.delivered, 0), m.failed + coalesce(s.failed, 0),
                    m.skipped + coalesce(s.skipped, 0), m.held + coalesce(s.held, 0)
                FROM messages m
                LEFT JOIN LATERAL (
                    SELECT sum(queued)::bigint AS queued, sum(sending)::bigint AS sending,
                        sum(delivered)::bigint AS delivered, sum(failed)::bigint AS failed,
                        sum(skipped)::bigint AS skipped, sum(held)::bigint AS held
                    FROM message_slices WHERE message_id = m.id) s ON true
                WHERE m.id IN (
                    SELECT id FROM (SELECT id, state, completed_at FROM messages ORDER BY id DESC LIMIT $1) newest
                    WHERE state = 'sending' OR completed_at >= $2
                    UNION
                    SELECT id FROM messages WHERE state = 'sending')
                ORDER BY m.id DESC
                """, [.int(Int64(min(max(scanLimit, 1), 100_000))), .int(sinceMilliseconds)]
            ).rows.map(Self.activity)
        }
    }

    private static func activity(_ row: PostgresRow) throws -> MessageActivity {
        let stateName = row[2].string ?? ""
        guard let state = MessageState(rawValue: stateName) else {
            throw StoreError(.unavailable, "messages.state holds unknown value \(stateName)")
        }
        var counts = DeliveryCounts()
        counts.queued = Int(row.int64(at: 7))
        counts.sending = Int(row.int64(at: 8))
        counts.delivered = Int(row.int64(at: 9))
        counts.failed = Int(row.int64(at: 10))
        counts.skipped = Int(row.int64(at: 11))
        counts.held = Int(row.int64(at: 12))
        return MessageActivity(
            id: row.int64(at: 0), appID: row.int64(at: 1), state: state, createdAt: SQLTime.date(row.int64(at: 3)),
            startedAt: row[4].int64.map(SQLTime.date), completedAt: row[5].int64.map(SQLTime.date),
            total: row[6].int64.map { Int($0) }, counts: counts)
    }
}
