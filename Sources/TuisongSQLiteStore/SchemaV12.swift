import TuisongSQLStore

extension Schema {
    static let v12Identifier = "v12-idempotency-keys"

    /// The native API's `Idempotency-Key`s: per app, the message the key's first request
    /// created, committed in the same transaction as the message. A key answers its message for
    /// `IdempotencyKey.lifetime` after `created_at` (milliseconds); older rows are ignored and
    /// deleted in bounded sweeps, by `created_at`. Keys go with their app and their message.
    static let v12IdempotencyKeys = """
        CREATE TABLE idempotency_keys (
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (app_id, key)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX idempotency_keys_by_created_at ON idempotency_keys(created_at);
        CREATE INDEX idempotency_keys_by_message ON idempotency_keys(message_id);
        """
}
