import TuisongSQLStore

extension Schema {
    static let v9Identifier = "v9-channels"

    /// Android phones: a device's token belongs to a push service (its channel), a delivery
    /// remembers the channel it was decided for (a retry goes the same way), and the Android
    /// services' credentials get a table of their own — they share nothing with an APNs
    /// credential but the app, the selector and the sealing (no environment, topic, team or
    /// certificate expiry).
    ///
    /// The CHECKs name every channel the gateway plans to speak, so a binary that adds one
    /// needs no table rebuild; the Swift enum decides what a binary accepts. Tokens stay
    /// unique per app whatever their channel: tokens of different services never coincide,
    /// and the native API addresses a device by its token alone.
    static let v9Channels = """
        ALTER TABLE devices ADD COLUMN channel TEXT NOT NULL DEFAULT 'apns'
            CHECK (channel IN ('apns', 'fcm', 'huawei', 'honor', 'xiaomi', 'oppo', 'vivo'));
        ALTER TABLE deliveries ADD COLUMN channel TEXT NOT NULL DEFAULT 'apns'
            CHECK (channel IN ('apns', 'fcm', 'huawei', 'honor', 'xiaomi', 'oppo', 'vivo'));
        CREATE TABLE channel_credentials (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            channel TEXT NOT NULL CHECK (channel IN ('fcm', 'huawei', 'honor', 'xiaomi', 'oppo', 'vivo')),
            -- the vendor selector devices name it by; NULL = the app's default for the channel
            selector TEXT,
            -- the service's name of the sender: FCM project id, Huawei or Honor app id
            vendor_app_id TEXT NOT NULL,
            -- who signs in: the service account's client_email, the OAuth client id
            client_id TEXT NOT NULL,
            -- AES-256-GCM sealed service-account key or client secret, encrypted by the gateway
            encrypted_secret BLOB NOT NULL,
            -- settings that are not secret, a JSON object of strings (Huawei's badge class)
            options TEXT NOT NULL DEFAULT '{}',
            status TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'failing')),
            status_reason TEXT,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX channel_credentials_by_app ON channel_credentials(app_id, channel);
        -- Deliveries that succeeded on their first attempt leave no row: their count per
        -- channel lives here (every other outcome is a deliveries row with its channel).
        CREATE TABLE message_channel_deliveries (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            channel TEXT NOT NULL,
            delivered INTEGER NOT NULL,
            PRIMARY KEY (message_id, channel)
        ) STRICT, WITHOUT ROWID;
        """
}
