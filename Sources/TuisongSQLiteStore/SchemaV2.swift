import TuisongSQLStore

extension Schema {
    /// Settings, messages, per-reason failure counts and delivery rows.
    ///
    /// A message row carries its persisted progress: `cursor` (audience position up to which
    /// every entry has an outcome) and per-state counters. Delivered-first-time entries are
    /// only counted; `deliveries` holds a row for every entry that failed, is retried, held
    /// or skipped, so a 200,000-device push writes rows only for its problems.
    static let v2 = """
        CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) STRICT;

        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            vendor TEXT NOT NULL,
            vendor_message_id TEXT,
            audience TEXT NOT NULL CHECK (json_valid(audience)),
            notification TEXT NOT NULL CHECK (json_valid(notification)),
            options TEXT NOT NULL CHECK (json_valid(options)),
            -- the APNs payload, rendered once at submission
            payload BLOB NOT NULL,
            labels TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(labels)),
            state TEXT NOT NULL
                CHECK (state IN ('scheduled', 'queued', 'sending', 'completed', 'cancelled')),
            send_at INTEGER,
            created_at INTEGER NOT NULL,
            started_at INTEGER,
            completed_at INTEGER,
            total INTEGER,
            cursor INTEGER NOT NULL DEFAULT 0,
            queued INTEGER NOT NULL DEFAULT 0,
            sending INTEGER NOT NULL DEFAULT 0,
            delivered INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0,
            skipped INTEGER NOT NULL DEFAULT 0,
            held INTEGER NOT NULL DEFAULT 0
        ) STRICT;
        CREATE INDEX messages_by_app ON messages(app_id, id);
        CREATE INDEX messages_pending ON messages(state, send_at)
            WHERE state IN ('scheduled', 'queued', 'sending');
        CREATE UNIQUE INDEX messages_by_vendor_id ON messages(app_id, vendor, vendor_message_id)
            WHERE vendor_message_id IS NOT NULL;

        CREATE TABLE message_failures (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            reason TEXT NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (message_id, reason)
        ) STRICT, WITHOUT ROWID;

        CREATE TABLE deliveries (
            id INTEGER PRIMARY KEY,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            device_id INTEGER REFERENCES devices(id) ON DELETE SET NULL,
            token TEXT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            state TEXT NOT NULL
                CHECK (state IN ('queued', 'sending', 'delivered', 'failed', 'skipped', 'held')),
            reason TEXT,
            apns_id TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER,
            updated_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX deliveries_by_message ON deliveries(message_id, state, id);
        CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state = 'queued';
        CREATE INDEX deliveries_in_flight ON deliveries(id) WHERE state = 'sending';
        CREATE INDEX deliveries_by_device ON deliveries(device_id) WHERE device_id IS NOT NULL;
        """
}
