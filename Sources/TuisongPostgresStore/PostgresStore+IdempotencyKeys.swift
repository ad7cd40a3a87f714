import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

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

// The message an idempotency key names, in one statement with this backend's message select
// (its slices' counts added); the sweep is written once (`SQLStoreBackend+Messages`).
extension PostgresStore {
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
