import TuisongSQLStore

extension Schema {
    static let v10Identifier = "v10-console-sessions"

    /// Console sessions leave the process's memory for the database, so several nodes share
    /// them and a restart logs nobody out. The key is the hex SHA-256 of the session cookie:
    /// the cookie itself is never stored. Times are milliseconds, as everywhere.
    static let v10ConsoleSessions = """
        CREATE TABLE console_sessions (
            key TEXT PRIMARY KEY,
            csrf_token TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            last_seen INTEGER NOT NULL
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX console_sessions_by_last_seen ON console_sessions(last_seen);
        """
}
