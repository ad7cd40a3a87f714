import TuisongCore

/// The core migrations whose text both databases run: SQLite as it is, PostgreSQL the same
/// text or, where it declares tables, through `PostgresSchema.portable` (64-bit integers, BYTEA,
/// no STRICT or WITHOUT ROWID), which gives back the text PostgreSQL always ran. Each backend
/// records it under its own identifier. Never edit one: an applied migration does not run
/// again, so a changed text would leave old and new databases apart.
package enum SharedMigrationSQL {
    /// SQLite's `v10-console-sessions`.
    /// Console sessions leave the process's memory for the database, so several nodes share
    /// them and a restart logs nobody out. The key is the hex SHA-256 of the session cookie:
    /// the cookie itself is never stored. Times are milliseconds, as everywhere.
    package static let consoleSessions = """
        CREATE TABLE console_sessions (
            key TEXT PRIMARY KEY,
            csrf_token TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            last_seen INTEGER NOT NULL
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX console_sessions_by_last_seen ON console_sessions(last_seen);
        """

    /// SQLite's `v11-provider-tokens`.
    /// The APNs provider token of each (team id, key id), shared by every node signing with the
    /// key, so the token changes once per refresh for the whole gateway (APNs answers
    /// TooManyProviderTokenUpdates otherwise). `issued_at` is the token's `iat`, milliseconds.
    package static let providerTokens = """
        CREATE TABLE provider_tokens (
            team_id TEXT NOT NULL,
            key_id TEXT NOT NULL,
            token TEXT NOT NULL,
            issued_at INTEGER NOT NULL,
            PRIMARY KEY (team_id, key_id)
        ) STRICT, WITHOUT ROWID;
        """

    /// SQLite's `v12-idempotency-keys`.
    /// The native API's `Idempotency-Key`s: per app, the message the key's first request
    /// created, committed in the same transaction as the message. A key answers its message for
    /// `IdempotencyKey.lifetime` after `created_at` (milliseconds); older rows are ignored and
    /// deleted in bounded sweeps, by `created_at`. Keys go with their app and their message.
    package static let idempotencyKeys = """
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

    /// SQLite's `v14-held-deliveries-expire`.
    /// A held delivery (no credential for its service, a refused one) waits until its message
    /// expires: its `next_attempt_at` is that moment, and the retry worker fails the rows whose
    /// moment has passed, found through this index (held rows are few; the table is large).
    package static let heldDeliveriesExpire = """
        CREATE INDEX deliveries_held_until ON deliveries(next_attempt_at) WHERE state = 'held';
        """

    /// SQLite's `v19-credentials-both-environments-digests`.
    /// A credential may serve both APNs environments (`both_environments`: a `.p8` key, whose
    /// tokens Apple takes in sandbox and production alike, or a universal certificate); the
    /// `.p8` keys already stored do. `secret_digest` is a keyed digest of an upload (never the
    /// secret), unique per app, so a repeated upload finds the first instead of adding a second.
    package static let credentialsBothEnvironmentsDigests = """
        ALTER TABLE credentials ADD COLUMN both_environments INTEGER NOT NULL DEFAULT 0
            CHECK (both_environments IN (0, 1));
        UPDATE credentials SET both_environments = 1 WHERE kind = 'p8';
        ALTER TABLE credentials ADD COLUMN secret_digest TEXT;
        CREATE UNIQUE INDEX credentials_by_digest ON credentials(app_id, secret_digest);
        ALTER TABLE channel_credentials ADD COLUMN secret_digest TEXT;
        CREATE UNIQUE INDEX channel_credentials_by_digest ON channel_credentials(app_id, secret_digest);
        """

    /// SQLite's `v22-delivery-service-message-id`.
    /// A delivery's message id on its push service (APNs's `apns-id`, an FCM message name, a
    /// Huawei request id, …) is one column whatever the service: `apns_id`, named when APNs was
    /// the only one, becomes `service_message_id`. A rename keeps every row's value as it was.
    package static let deliveryServiceMessageID = """
        ALTER TABLE deliveries RENAME COLUMN apns_id TO service_message_id;
        """
}
