import Foundation
import TuisongCore
import TuisongPostgres

extension PostgresSchema {
    /// SQLite's `v12-idempotency-keys`: per app, the message an `Idempotency-Key` created.
    static let idempotencyKeys = """
        CREATE TABLE idempotency_keys (
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            created_at BIGINT NOT NULL,
            PRIMARY KEY (app_id, key)
        );
        CREATE INDEX idempotency_keys_by_created_at ON idempotency_keys(created_at);
        CREATE INDEX idempotency_keys_by_message ON idempotency_keys(message_id);
        """
}

extension PostgresStore {
    public func forgetIdempotencyKeys(before: Date, limit: Int) async throws -> Int {
        try await write { conn in
            // SKIP LOCKED: nodes sweeping at once take different rows instead of waiting on each
            // other, and a key being taken over by a new message right now is left alone.
            try conn.run(
                """
                DELETE FROM idempotency_keys WHERE (app_id, key) IN (
                    SELECT app_id, key FROM idempotency_keys WHERE created_at < $1
                    ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
                """, [.int(SQLTime.milliseconds(before)), .int(Int64(max(limit, 0)))]
            ).affectedRows ?? 0
        }
    }

    public func message(appID: Int64, idempotencyKey: String) async throws -> MessageRecord? {
        let cutoff = nowMilliseconds - Int64(IdempotencyKey.lifetime * 1000)
        return try await read { conn in
            try conn.run(
                """
                \(Self.messageSelect) WHERE m.id = (
                    SELECT message_id FROM idempotency_keys WHERE app_id = $1 AND key = $2 AND created_at > $3)
                """, [.int(appID), .text(idempotencyKey), .int(cutoff)]
            ).rows.first.map(Self.messageRecord)
        }
    }
}
