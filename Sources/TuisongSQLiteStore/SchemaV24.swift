import TuisongSQLStore

extension Schema {
    static let v24Identifier = "v24-uploaded-credentials-are-channel-credentials"

    /// One credential table for every channel: the uploaded file credentials (`credentials`, the
    /// channel whose credentials serve an environment) move into `channel_credentials`, which
    /// gains what only they had — the environment a credential serves (NULL for a channel whose
    /// credentials serve none), whether it serves both, and when it expires — and keeps their
    /// other public fields in `options` (kind, team and key ids, subject, topics as JSON text),
    /// the way a form's public fields are kept. The sealed secret, its digest, status, selector
    /// and creation time move unchanged.
    ///
    /// `channel_credentials`' CHECK still refused the moved rows' channel (v15), and a column
    /// CHECK cannot be altered: the table is rebuilt, as SQLite documents (it holds a few rows
    /// per app). A moved row keeps its id plus the largest id the table held (0 when it held
    /// none, so a database with uploaded credentials alone keeps every id): the two tables
    /// numbered their rows apart.
    static let v24UploadedCredentialsAreChannelCredentials = """
        CREATE TABLE channel_credentials_v24 (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            channel TEXT NOT NULL CHECK (\(channelShape)),
            -- the vendor selector devices name it by; NULL = the app's default for the channel
            selector TEXT,
            -- the service's name of the sender: a project id, an app id, a team id
            vendor_app_id TEXT NOT NULL,
            -- who signs in: the service account's client_email, the OAuth client id, a key id
            client_id TEXT NOT NULL,
            -- AES-256-GCM sealed secret, encrypted by the gateway
            encrypted_secret BLOB NOT NULL,
            -- settings that are not secret, a JSON object of strings
            options TEXT NOT NULL DEFAULT '{}',
            status TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'failing')),
            status_reason TEXT,
            created_at INTEGER NOT NULL,
            secret_digest TEXT,
            -- the environment it serves, for a channel whose credentials serve one; else NULL
            environment TEXT CHECK (environment IN ('sandbox', 'production')),
            both_environments INTEGER NOT NULL DEFAULT 0 CHECK (both_environments IN (0, 1)),
            expires_at INTEGER
        ) STRICT;
        INSERT INTO channel_credentials_v24 (id, app_id, channel, selector, vendor_app_id, client_id,
            encrypted_secret, options, status, status_reason, created_at, secret_digest)
        SELECT id, app_id, channel, selector, vendor_app_id, client_id,
            encrypted_secret, options, status, status_reason, created_at, secret_digest
        FROM channel_credentials;
        INSERT INTO channel_credentials_v24 (id, app_id, channel, selector, vendor_app_id, client_id,
            encrypted_secret, options, status, status_reason, created_at, secret_digest,
            environment, both_environments, expires_at)
        SELECT id + (SELECT coalesce(max(id), 0) FROM channel_credentials), app_id, 'apns', selector,
            coalesce(team_id, ''), coalesce(key_id, subject, ''), encrypted_secret,
            json_patch('{}', json_object('kind', kind, 'team_id', team_id, 'key_id', key_id, 'subject', subject,
                'topics', topic)),
            status, status_reason, created_at, secret_digest, environment, both_environments, expires_at
        FROM credentials ORDER BY id;
        DROP TABLE channel_credentials;
        DROP TABLE credentials;
        ALTER TABLE channel_credentials_v24 RENAME TO channel_credentials;
        CREATE INDEX channel_credentials_by_app ON channel_credentials(app_id, channel);
        CREATE UNIQUE INDEX channel_credentials_by_digest ON channel_credentials(app_id, secret_digest);
        """
}
