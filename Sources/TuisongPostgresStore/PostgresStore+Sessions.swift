import Foundation
import TuisongSQLStore

extension PostgresSchema {
    /// SQLite's `v10-console-sessions`: console sessions shared by every node.
    static let consoleSessions = """
        CREATE TABLE console_sessions (
            key TEXT PRIMARY KEY,
            csrf_token TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            last_seen BIGINT NOT NULL
        );
        CREATE INDEX console_sessions_by_last_seen ON console_sessions(last_seen);
        """
}
