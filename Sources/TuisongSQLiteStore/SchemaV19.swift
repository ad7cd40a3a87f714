import TuisongSQLStore

extension Schema {
    static let v19Identifier = "v19-credentials-both-environments-digests"

    /// A credential may serve both APNs environments (`both_environments`: a `.p8` key, whose
    /// tokens Apple takes in sandbox and production alike, or a universal certificate); the
    /// `.p8` keys already stored do. `secret_digest` is a keyed digest of an upload (never the
    /// secret), unique per app, so a repeated upload finds the first instead of adding a second.
    static let v19CredentialsBothEnvironmentsDigests = SharedMigrationSQL.credentialsBothEnvironmentsDigests
}
