import Foundation
import GRDB
import TuisongCore

extension SQLiteStore: ConsoleSessionStore {
    /// `WHERE` clause of the sessions expired at `?1` (now) given `?2` (idle) and `?3`
    /// (absolute), all milliseconds.
    static let expiredSessionCondition = "(last_seen < ?1 - ?2 OR created_at < ?1 - ?3)"

    public func createConsoleSession(_ session: ConsoleSessionRecord, limits: ConsoleSessionLimits) async throws {
        let now = SQLTime.milliseconds(session.createdAt)
        try await write { db in
            try Self.purgeExpiredSessions(db, now: now, limits: limits)
            let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM console_sessions") ?? 0
            if count >= limits.maxSessions {
                try db.execute(
                    sql: """
                        DELETE FROM console_sessions WHERE key IN (
                            SELECT key FROM console_sessions ORDER BY last_seen, key LIMIT ?)
                        """,
                    arguments: [count - limits.maxSessions + 1])
            }
            try db.execute(
                sql: "INSERT INTO console_sessions (key, csrf_token, created_at, last_seen) VALUES (?, ?, ?, ?)",
                arguments: [
                    session.key, session.csrfToken, now, SQLTime.milliseconds(session.lastSeen),
                ])
        }
    }

    public func consoleSession(key: String, now: Date, limits: ConsoleSessionLimits) async throws
        -> ConsoleSessionRecord?
    {
        let found = try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT key, csrf_token, created_at, last_seen FROM console_sessions WHERE key = ?",
                arguments: [key]
            ).map(Self.consoleSessionRecord)
        }
        guard var session = found else { return nil }
        let nowMilliseconds = SQLTime.milliseconds(now)
        if limits.isExpired(createdAt: session.createdAt, lastSeen: session.lastSeen, now: now) {
            try await write { db in
                try db.execute(
                    sql: "DELETE FROM console_sessions WHERE key = ?4 AND \(Self.expiredSessionCondition)",
                    arguments: [
                        nowMilliseconds, Self.milliseconds(limits.idleTimeout),
                        Self.milliseconds(limits.absoluteTimeout), key,
                    ])
            }
            return nil
        }
        if now.timeIntervalSince(session.lastSeen) >= limits.lastSeenResolution {
            try await write { db in
                try db.execute(
                    sql: "UPDATE console_sessions SET last_seen = max(last_seen, ?) WHERE key = ?",
                    arguments: [nowMilliseconds, key])
            }
        }
        session.lastSeen = max(session.lastSeen, now)
        return session
    }

    @discardableResult
    public func deleteConsoleSession(key: String) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM console_sessions WHERE key = ?", arguments: [key])
            return db.changesCount > 0
        }
    }

    @discardableResult
    public func deleteAllConsoleSessions() async throws -> Int {
        try await write { db in
            try db.execute(sql: "DELETE FROM console_sessions")
            return db.changesCount
        }
    }

    @discardableResult
    public func purgeExpiredConsoleSessions(now: Date, limits: ConsoleSessionLimits) async throws -> Int {
        try await write { db in
            try Self.purgeExpiredSessions(db, now: SQLTime.milliseconds(now), limits: limits)
        }
    }

    public func consoleSessionCount() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM console_sessions") ?? 0 }
    }

    @discardableResult
    private static func purgeExpiredSessions(_ db: Database, now: Int64, limits: ConsoleSessionLimits) throws -> Int {
        try db.execute(
            sql: "DELETE FROM console_sessions WHERE \(expiredSessionCondition)",
            arguments: [now, milliseconds(limits.idleTimeout), milliseconds(limits.absoluteTimeout)])
        return db.changesCount
    }

    static func milliseconds(_ interval: TimeInterval) -> Int64 { Int64((interval * 1000).rounded()) }

    private static func consoleSessionRecord(_ row: Row) -> ConsoleSessionRecord {
        ConsoleSessionRecord(
            key: row["key"], csrfToken: row["csrf_token"], createdAt: SQLTime.date(row["created_at"]),
            lastSeen: SQLTime.date(row["last_seen"]))
    }
}
