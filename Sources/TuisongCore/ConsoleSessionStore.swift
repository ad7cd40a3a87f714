import Foundation

/// One logged-in console as the database keeps it. The cookie itself is never stored: `key` is
/// the hex SHA-256 of the cookie, so reading the table hands out no live session.
public struct ConsoleSessionRecord: Sendable, Hashable {
    /// Hex SHA-256 of the session cookie.
    public var key: String
    /// Sent back on every mutation as `X-CSRF-Token`; the cookie alone never suffices.
    public var csrfToken: String
    public var createdAt: Date
    /// The last request recorded for the session (written at most every `lastSeenResolution`).
    public var lastSeen: Date

    public init(key: String, csrfToken: String, createdAt: Date, lastSeen: Date) {
        self.key = key
        self.csrfToken = csrfToken
        self.createdAt = createdAt
        self.lastSeen = lastSeen
    }
}

/// The rules sessions live by, the same on every node.
public struct ConsoleSessionLimits: Sendable, Hashable {
    /// A session ends after this long without a recorded request…
    public var idleTimeout: TimeInterval
    /// …and this long after it was created in any case.
    public var absoluteTimeout: TimeInterval
    /// At most this many sessions at once: a new one ends the least recently seen.
    public var maxSessions: Int
    /// A lookup writes `lastSeen` only when the stored one is at least this old, so a busy
    /// console does not write a row per request. The idle timeout counts from the recorded
    /// `lastSeen`, so a session may end up to this much before `idleTimeout` of true quiet.
    public var lastSeenResolution: TimeInterval

    /// `lastSeenResolution` defaults to a minute, or a quarter of the idle timeout if shorter.
    public init(
        idleTimeout: TimeInterval, absoluteTimeout: TimeInterval, maxSessions: Int,
        lastSeenResolution: TimeInterval? = nil
    ) {
        self.idleTimeout = idleTimeout
        self.absoluteTimeout = absoluteTimeout
        self.maxSessions = max(1, maxSessions)
        self.lastSeenResolution = max(0, lastSeenResolution ?? min(60, idleTimeout / 4))
    }

    /// Whether a session created at `createdAt` and last seen at `lastSeen` has ended at `now`.
    public func isExpired(createdAt: Date, lastSeen: Date, now: Date) -> Bool {
        now.timeIntervalSince(lastSeen) > idleTimeout || now.timeIntervalSince(createdAt) > absoluteTimeout
    }
}

/// Console sessions in the database, so a console request may land on any node of the gateway
/// and a restart logs nobody out.
public protocol ConsoleSessionStore: Sendable {
    /// Stores a new session. Expired sessions are purged first; when `limits.maxSessions` or
    /// more remain, the least recently seen ones end to make room. A key already stored
    /// throws `.conflict`.
    func createConsoleSession(_ session: ConsoleSessionRecord, limits: ConsoleSessionLimits) async throws
    /// The live session stored under `key`, its `lastSeen` moved to `now` (written to the
    /// database only when the stored one is `limits.lastSeenResolution` old or older). An
    /// expired session is deleted and nil returned; nil for an unknown key.
    func consoleSession(key: String, now: Date, limits: ConsoleSessionLimits) async throws -> ConsoleSessionRecord?
    /// Ends one session; false when there was none.
    @discardableResult
    func deleteConsoleSession(key: String) async throws -> Bool
    /// Ends every session (the password changed); returns how many there were.
    @discardableResult
    func deleteAllConsoleSessions() async throws -> Int
    /// Deletes the sessions expired at `now`; returns how many.
    @discardableResult
    func purgeExpiredConsoleSessions(now: Date, limits: ConsoleSessionLimits) async throws -> Int
    /// How many sessions are stored (expired ones not yet purged included).
    func consoleSessionCount() async throws -> Int
}
