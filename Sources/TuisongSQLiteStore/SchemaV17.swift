import TuisongSQLStore

extension Schema {
    static let v17Identifier = "v17-webhooks"

    /// `SharedMigrationSQL.webhooks`: both databases run it (PostgreSQL through `portable`).
    static let v17Webhooks = SharedMigrationSQL.webhooks
}
