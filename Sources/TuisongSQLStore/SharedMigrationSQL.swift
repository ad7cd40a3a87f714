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

    /// SQLite's `v16-delivery-receipts`.
    /// Delivery receipts (回执) from the services and from apps: one row per (message, token)
    /// that has a receipt, apart from `deliveries` (a push delivered on its first attempt has
    /// no delivery row, and a receipt may come before the send's flush commits), and the
    /// counts per message, channel and outcome (`arrived`, `clicked`, or a reason) that a
    /// status reads without scanning the receipts.
    package static let deliveryReceipts = """
        CREATE TABLE delivery_receipts (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            token TEXT NOT NULL,
            channel TEXT NOT NULL,
            arrived_at INTEGER,
            clicked_at INTEGER,
            -- why the service did not show it (notifications_disabled, replaced, …)
            reason TEXT,
            PRIMARY KEY (message_id, token)
        ) STRICT, WITHOUT ROWID;
        CREATE TABLE message_receipt_counts (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            channel TEXT NOT NULL,
            outcome TEXT NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (message_id, channel, outcome)
        ) STRICT, WITHOUT ROWID;
        """

    /// SQLite's `v17-webhooks`.
    /// Webhook endpoints (per app; the secret sealed by the gateway, the one before a rotation
    /// kept until `previous_secret_until`), the outbox of events to send them (one row per event
    /// and endpoint, written in the transaction of the change that caused it, claimed under a
    /// lease by `lease_owner` until `lease_until`; `event_key` makes an event that must be sent
    /// once, a message's completion, unique per endpoint) and each endpoint's recent attempts.
    /// `events` is a JSON array of event names. Times are milliseconds.
    package static let webhooks = """
        CREATE TABLE webhook_endpoints (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            url TEXT NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            events TEXT NOT NULL,
            encrypted_secret BLOB NOT NULL,
            encrypted_previous_secret BLOB,
            previous_secret_until INTEGER,
            disabled_at INTEGER,
            disabled_reason TEXT,
            failing_since INTEGER,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX webhook_endpoints_by_app ON webhook_endpoints(app_id);
        CREATE TABLE webhook_outbox (
            id INTEGER PRIMARY KEY,
            endpoint_id INTEGER NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            event_id TEXT NOT NULL,
            event_key TEXT NOT NULL,
            type TEXT NOT NULL,
            body TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            lease_owner TEXT,
            lease_until INTEGER,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            UNIQUE (endpoint_id, event_key)
        ) STRICT;
        CREATE INDEX webhook_outbox_due ON webhook_outbox(endpoint_id, next_attempt_at) WHERE state = 'pending';
        CREATE INDEX webhook_outbox_finished ON webhook_outbox(updated_at) WHERE state <> 'pending';
        CREATE TABLE webhook_attempts (
            id INTEGER PRIMARY KEY,
            endpoint_id INTEGER NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
            outbox_id INTEGER NOT NULL,
            event_id TEXT NOT NULL,
            type TEXT NOT NULL,
            attempted_at INTEGER NOT NULL,
            status INTEGER,
            latency_ms INTEGER NOT NULL,
            response TEXT NOT NULL
        ) STRICT;
        CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts(endpoint_id, id);
        """

    /// SQLite's `v25-receipt-service-requests`.
    /// The requests the services that sign their receipts accepted, by the service's id of each
    /// (Huawei's `requestId`): one row per request (up to 1,000 devices), written with the flush
    /// of its outcomes, so a receipt status without Tuisong's tag finds its message by the
    /// request and its delivery by the token. Deleted with the message, so kept as long as it.
    package static let receiptServiceRequests = """
        CREATE TABLE receipt_service_requests (
            channel TEXT NOT NULL,
            request_id TEXT NOT NULL,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (channel, request_id)
        ) STRICT;
        CREATE INDEX receipt_service_requests_message ON receipt_service_requests(message_id);
        """

    /// The receipt inbox's statuses summed per app without reading its rows: every status poll
    /// asks how many statuses wait (`waitingReceiptStatuses`), and with only `app_id` indexed
    /// each waiting POST's row (a page of its 250 KB body) was read to sum them, a few thousand
    /// pages a poll during a 1M-device push. The index on `app_id` alone is replaced, this one
    /// leading with it (the cascade from `apps` uses it as before).
    package static let receiptInboxStatusesByApp = """
        DROP INDEX receipt_inbox_app;
        CREATE INDEX receipt_inbox_app_statuses ON receipt_inbox(app_id, statuses);
        """
}
