import TuisongSQLStore

extension Schema {
    static let v18Identifier = "v18-receipt-credentials"

    /// Receipt settings of their own per app: the callback user name and key an operator enters
    /// in a service's receipt configuration (the key sealed by the gateway), which earlier
    /// builds derived from the master key; `apps.derived_callback_credentials` marks the apps
    /// that existed then, whose first stored credential of a service is the derived one (an
    /// operator may have registered it). `apps.app_receipts`: the app posts its own receipts.
    static let v18ReceiptCredentials = """
        ALTER TABLE apps ADD COLUMN app_receipts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE apps ADD COLUMN derived_callback_credentials INTEGER NOT NULL DEFAULT 0;
        UPDATE apps SET derived_callback_credentials = 1;
        CREATE TABLE receipt_callback_credentials (
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            channel TEXT NOT NULL,
            user_name TEXT NOT NULL,
            encrypted_key BLOB NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (app_id, channel)
        ) STRICT, WITHOUT ROWID;
        """
}
