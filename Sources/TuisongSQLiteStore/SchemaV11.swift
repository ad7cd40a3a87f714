import TuisongSQLStore

extension Schema {
    static let v11Identifier = "v11-provider-tokens"

    /// The APNs provider token of each (team id, key id), shared by every node signing with the
    /// key, so the token changes once per refresh for the whole gateway (APNs answers
    /// TooManyProviderTokenUpdates otherwise). `issued_at` is the token's `iat`, milliseconds.
    static let v11ProviderTokens = SharedMigrationSQL.providerTokens
}
