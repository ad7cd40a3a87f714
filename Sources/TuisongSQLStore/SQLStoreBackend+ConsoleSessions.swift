import Foundation
import TuisongCore

// ConsoleSessionStore, written once: console sessions shared by every node.
extension SQLStoreBackend {
    public func createConsoleSession(_ session: ConsoleSessionRecord, limits: ConsoleSessionLimits) async throws {
        let now = SQLTime.milliseconds(session.createdAt)
        try await sqlWrite { db in
            // Logins are rare: nodes creating sessions at once take turns, so the cap holds.
            if let lock = db.dialect.serializingWrites(to: "console_sessions") { try db.execute(lock) }
            try Self.purgeExpiredSessions(db, now: now, limits: limits)
            let count = Int(try db.fetchOne("SELECT count(*) FROM console_sessions")?[0].int ?? 0)
            if count >= limits.maxSessions {
                try db.run(
                    """
                    DELETE FROM console_sessions WHERE key IN (
                        SELECT key FROM console_sessions ORDER BY last_seen, key LIMIT \(count - limits.maxSessions + 1))
                    """)
            }
            try db.run(
                """
                INSERT INTO console_sessions (key, csrf_token, created_at, last_seen)
                VALUES (\(session.key), \(session.csrfToken), \(now), \(SQLTime.milliseconds(session.lastSeen)))
                """)
        }
    }

    public func consoleSession(key: String, now: Date, limits: ConsoleSessionLimits) async throws
        -> ConsoleSessionRecord?
    {
        let found = try await sqlRead { db in
            try db.fetchOne("SELECT key, csrf_token, created_at, last_seen FROM console_sessions WHERE key = \(key)")
                .map { row in
                    ConsoleSessionRecord(
                        key: row.string(0), csrfToken: row.string(1), createdAt: row.date(2), lastSeen: row.date(3))
                }
        }
        guard var session = found else { return nil }
        let nowMilliseconds = SQLTime.milliseconds(now)
        if limits.isExpired(createdAt: session.createdAt, lastSeen: session.lastSeen, now: now) {
            try await sqlWriteStatement { db in
                try db.run(
                    "DELETE FROM console_sessions WHERE key = \(key) AND \(Self.expired(now: nowMilliseconds, limits))")
            }
            return nil
        }
        if now.timeIntervalSince(session.lastSeen) >= limits.lastSeenResolution {
            try await sqlWriteStatement { db in
                // The larger of the two: a node with a clock behind never moves it back.
                try db.run(
                    """
                    UPDATE console_sessions SET last_seen = \(nowMilliseconds)
                    WHERE key = \(key) AND last_seen < \(nowMilliseconds)
                    """)
            }
        }
        session.lastSeen = max(session.lastSeen, now)
        return session
    }

    @discardableResult
    public func deleteConsoleSession(key: String) async throws -> Bool {
        try await sqlWriteStatement { db in try db.run("DELETE FROM console_sessions WHERE key = \(key)") > 0 }
    }

    @discardableResult
    public func deleteAllConsoleSessions() async throws -> Int {
        try await sqlWriteStatement { db in try db.run("DELETE FROM console_sessions") }
    }

    @discardableResult
    public func purgeExpiredConsoleSessions(now: Date, limits: ConsoleSessionLimits) async throws -> Int {
        try await sqlWriteStatement { db in
            try Self.purgeExpiredSessions(db, now: SQLTime.milliseconds(now), limits: limits)
        }
    }

    public func consoleSessionCount() async throws -> Int {
        try await sqlRead { db in Int(try db.fetchOne("SELECT count(*) FROM console_sessions")?[0].int ?? 0) }
    }

    @discardableResult
    private static func purgeExpiredSessions(_ db: any SQLExecutor, now: Int64, limits: ConsoleSessionLimits)
        throws -> Int
    {
        try db.run("DELETE FROM console_sessions WHERE \(expired(now: now, limits))")
    }

    /// The sessions expired at `now` (milliseconds) under `limits`.
    private static func expired(now: Int64, _ limits: ConsoleSessionLimits) -> SQLQuery {
        let idle = now - SQLDuration.milliseconds(limits.idleTimeout)
        let absolute = now - SQLDuration.milliseconds(limits.absoluteTimeout)
        return "(last_seen < \(idle) OR created_at < \(absolute))"
    }
}
