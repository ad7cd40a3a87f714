import Foundation
import TuisongSQLStore

extension PostgresSchema {
    /// SQLite's `v10-console-sessions`: console sessions shared by every node.
    static let consoleSessions = portable(SharedMigrationSQL.consoleSessions)
}
