import TuisongSQLStore

extension Schema {
    /// What the IM vendors share (issue #9): accounts with their app state and badge counter,
    /// the credential selector of devices and credentials, the vendor's description of a
    /// message, per-device payloads of delivery rows, and skip counts by reason.
    ///
    /// The bound account of a device stays `devices.im_account`. `devices.app_state` and
    /// `devices.unread_count` of v1 are not used: app state and badge belong to the account
    /// (since v7 a bound device carries its account's row id and a copy of its app state).
    static let v4Accounts = """
        CREATE TABLE accounts (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            account TEXT NOT NULL,
            -- NULL until the account's app reports itself in the foreground or background
            app_state TEXT CHECK (app_state IN ('foreground', 'background')),
            badge INTEGER NOT NULL DEFAULT 0 CHECK (badge >= 0),
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            UNIQUE (app_id, account)
        ) STRICT;

        -- Tencent busiId, Easemob notifier name: which of the app's credentials reaches it.
        ALTER TABLE devices ADD COLUMN credential_selector TEXT;
        -- Keyset pages of every bound device of an app (Audience.allAccounts) in id order.
        CREATE INDEX devices_bound_by_app ON devices(app_id, id) WHERE im_account IS NOT NULL;

        ALTER TABLE credentials ADD COLUMN selector TEXT;

        ALTER TABLE messages ADD COLUMN vendor_context TEXT
            CHECK (vendor_context IS NULL OR json_valid(vendor_context));

        -- The bytes decided for this device when they differ from messages.payload, so that a
        -- retry resends them; and the device's selector when the delivery was decided.
        ALTER TABLE deliveries ADD COLUMN payload BLOB;
        ALTER TABLE deliveries ADD COLUMN credential_selector TEXT;

        CREATE TABLE message_skips (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            reason TEXT NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (message_id, reason)
        ) STRICT, WITHOUT ROWID;
        """
}
