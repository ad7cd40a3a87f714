import Foundation
import TuisongCore
import TuisongPostgres

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

extension PostgresStore: ConsoleSessionStore {
    /// The sessions expired at `$1` (now) given `$2` (idle) and `$3` (absolute), milliseconds.
    private static let expiredSessionCondition =
        "(last_seen < $1::bigint - $2::bigint OR created_at < $1::bigint - $3::bigint)"

    public func createConsoleSession(_ session: ConsoleSessionRecord, limits: ConsoleSessionLimits) async throws {
        let now = SQLTime.milliseconds(session.createdAt)
        try await write { conn in
            // Logins are rare: nodes creating sessions at once take turns, so the cap holds.
            try conn.execute("LOCK TABLE console_sessions IN SHARE ROW EXCLUSIVE MODE")
            try Self.purgeExpiredSessions(conn, now: now, limits: limits)
            let count = Int(try conn.run("SELECT count(*) FROM console_sessions").rows.first?[0].int64 ?? 0)
            if count >= limits.maxSessions {
                try conn.run(
                    """
                    DELETE FROM console_sessions WHERE key IN (
                        SELECT key FROM console_sessions ORDER BY last_seen, key LIMIT $1)
                    """, [.int(Int64(count - limits.maxSessions + 1))])
            }
            try conn.run(
                "INSERT INTO console_sessions (key, csrf_token, created_at, last_seen) VALUES ($1, $2, $3, $4)",
                [.text(session.key), .text(session.csrfToken), .int(now), .int(SQLTime.milliseconds(session.lastSeen))])
        }
    }

    public func consoleSession(key: String, now: Date, limits: ConsoleSessionLimits) async throws
        -> ConsoleSessionRecord?
    {
        let nowMilliseconds = SQLTime.milliseconds(now)
        // Statements of their own on one connection: usually just the SELECT.
        return try await read { conn -> ConsoleSessionRecord? in
            guard
                let row = try conn.run(
                    "SELECT key, csrf_token, created_at, last_seen FROM console_sessions WHERE key = $1", [.text(key)]
                ).rows.first
            else { return nil }
            var session = ConsoleSessionRecord(
                key: row.string("key"), csrfToken: row.string("csrf_token"), createdAt: row.date("created_at"),
                lastSeen: row.date("last_seen"))
            if limits.isExpired(createdAt: session.createdAt, lastSeen: session.lastSeen, now: now) {
                try conn.run(
                    "DELETE FROM console_sessions WHERE key = $4 AND \(Self.expiredSessionCondition)",
                    [
                        .int(nowMilliseconds), .int(SQLiteStore.milliseconds(limits.idleTimeout)),
                        .int(SQLiteStore.milliseconds(limits.absoluteTimeout)), .text(key),
                    ])
                return nil
            }
            if now.timeIntervalSince(session.lastSeen) >= limits.lastSeenResolution {
                try conn.run(
                    "UPDATE console_sessions SET last_seen = GREATEST(last_seen, $1) WHERE key = $2",
                    [.int(nowMilliseconds), .text(key)])
            }
            session.lastSeen = max(session.lastSeen, now)
            return session
        }
    }

    @discardableResult
    public func deleteConsoleSession(key: String) async throws -> Bool {
        try await write { conn in
            (try conn.run("DELETE FROM console_sessions WHERE key = $1", [.text(key)]).affectedRows ?? 0) > 0
        }
    }

    @discardableResult
    public func deleteAllConsoleSessions() async throws -> Int {
        try await write { conn in try conn.run("DELETE FROM console_sessions").affectedRows ?? 0 }
    }

    @discardableResult
    public func purgeExpiredConsoleSessions(now: Date, limits: ConsoleSessionLimits) async throws -> Int {
        try await write { conn in
            try Self.purgeExpiredSessions(conn, now: SQLTime.milliseconds(now), limits: limits)
        }
    }

    public func consoleSessionCount() async throws -> Int {
        try await read { conn in
            Int(try conn.run("SELECT count(*) FROM console_sessions").rows.first?[0].int64 ?? 0)
        }
    }

    @discardableResult
    private static func purgeExpiredSessions(_ conn: PostgresConnection, now: Int64, limits: ConsoleSessionLimits)
        throws -> Int
    {
        try conn.run(
            "DELETE FROM console_sessions WHERE \(expiredSessionCondition)",
            [
                .int(now), .int(SQLiteStore.milliseconds(limits.idleTimeout)),
                .int(SQLiteStore.milliseconds(limits.absoluteTimeout)),
            ]
        ).affectedRows ?? 0
    }
}
