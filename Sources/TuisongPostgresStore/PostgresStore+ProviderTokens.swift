import Foundation
import TuisongSQLStore

extension PostgresSchema {
    /// SQLite's `v11-provider-tokens`: one shared provider token per (team id, key id).
    static let providerTokens = portable(SharedMigrationSQL.providerTokens)
}
