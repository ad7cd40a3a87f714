import TuisongSQLStore

extension Schema {
    static let v19Identifier = "v19-credentials-both-environments-digests"

    /// A credential may serve both APNs environments (`both_environments`: a `.p8` key, whose
    /// tokens Apple takes in sandbox and production alike, or a universal certificate); the
    /// `.p8` keys already stored do. `secret_digest` is a keyed digest of an upload (never the
    /// secret), unique per app, so a repeated upload finds the first instead of adding a second.
    static let v19CredentialsBothEnvironmentsDigests = """
        ALTER TABLE credentials ADD COLUMN both_environments INTEGER NOT NULL DEFAULT 0
            CHECK (both_environments IN (0, 1));
        UPDATE credentials SET both_environments = 1 WHERE kind = 'p8';
        ALTER TABLE credentials ADD COLUMN secret_digest TEXT;
        CREATE UNIQUE INDEX credentials_by_digest ON credentials(app_id, secret_digest);
        ALTER TABLE channel_credentials ADD COLUMN secret_digest TEXT;
        CREATE UNIQUE INDEX channel_credentials_by_digest ON channel_credentials(app_id, secret_digest);
        """
}
