import TuisongSQLStore

extension Schema {
    static let v10Identifier = "v10-console-sessions"

    /// Console sessions leave the process's memory for the database, so several nodes share
    /// them and a restart logs nobody out. The key is the hex SHA-256 of the session cookie:
    /// the cookie itself is never stored. Times are milliseconds, as everywhere.
    static let v10ConsoleSessions = SharedMigrationSQL.consoleSessions
}
