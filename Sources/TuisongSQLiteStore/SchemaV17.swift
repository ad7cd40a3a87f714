import TuisongSQLStore

extension Schema {
    static let v17Identifier = "v17-webhooks"

    /// Webhook endpoints (per app; the secret sealed by the gateway, the one before a rotation
    /// kept until `previous_secret_until`), the outbox of events to send them (one row per event
    /// and endpoint, written in the transaction of the change that caused it, claimed under a
    /// lease by `lease_owner` until `lease_until`; `event_key` makes an event that must be sent
    /// once, a message's completion, unique per endpoint) and each endpoint's recent attempts.
    /// `events` is a JSON array of event names. Times are milliseconds.
    static let v17Webhooks = """
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
}
