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
                    SELECT id FROM (
                        SELECT id, state, completed_at FROM messages ORDER BY id DESC
                        LIMIT \(min(max(scanLimit, 1), 100_000))) newest
                    WHERE state = 'sending' OR completed_at >= \(sinceMilliseconds)
                    UNION
                    SELECT id FROM messages WHERE state = 'sending')
                ORDER BY m.id DESC
                """
            ).rows.map { try Rows.messageActivity(columns: $0) }
        }
    }
}
