import Foundation
import Synchronization
import TuisongCore
import TuisongCrypto
import TuisongHTTP

/// One logged-in console.
struct AdminSession: Sendable {
    /// Sent back on every mutation as `X-CSRF-Token`; the cookie alone never suffices.
    let csrfToken: String
    let createdAt: Date
    var lastSeen: Date
}

/// Console sessions, kept in the database (`ConsoleSessionStore`), so a console request may
/// land on any node of the gateway and a restart logs nobody out. The cookie carries 256
/// random bits; only their SHA-256 is stored, so neither the table nor a heap dump hands out
/// live sessions. The last request of a session is written at most once a minute (a quarter
/// of the idle timeout if shorter), so a session may end up to that much before its idle
/// timeout of true quiet.
final class AdminSessions: Sendable {
    static let cookieName = "tuisong_session"
    /// Sessions end after this long without a request…
    let idleTimeout: TimeInterval
    /// …and after this long in any case.
    let absoluteTimeout: TimeInterval
    static let maxSessions = 256

    private let store: any ConsoleSessionStore
    private let clock: any Clock
    let limits: ConsoleSessionLimits
    /// Sessions this node found live, by key: only for `knownSession(for:)`, which must answer
    /// without the database (the router's error responder is synchronous).
    private let recent = Mutex<[String: AdminSession]>([:])

    init(
        store: any ConsoleSessionStore, clock: any Clock, idleTimeout: TimeInterval = 2 * 3600,
        absoluteTimeout: TimeInterval = 12 * 3600
    ) {
        self.store = store
        self.clock = clock
        self.idleTimeout = idleTimeout
        self.absoluteTimeout = absoluteTimeout
        self.limits = ConsoleSessionLimits(
            idleTimeout: idleTimeout, absoluteTimeout: absoluteTimeout, maxSessions: Self.maxSessions)
    }

    /// Starts a session; returns the cookie value (secret) and the session.
    func create() async throws -> (cookie: String, session: AdminSession) {
        let cookie = Base64URL.encode(SecureRandom.bytes(32))
        let now = clock.now
        let session = AdminSession(
            csrfToken: Base64URL.encode(SecureRandom.bytes(32)), createdAt: now, lastSeen: now)
        let key = Self.key(cookie)
        try await store.createConsoleSession(
            ConsoleSessionRecord(key: key, csrfToken: session.csrfToken, createdAt: now, lastSeen: now),
            limits: limits)
        remember(key, session)
        return (cookie, session)
    }

    /// The live session the request's cookie names, refreshed; nil without one.
    func session(for request: Request) async throws -> AdminSession? {
        guard let cookie = Self.cookie(in: request) else { return nil }
        let key = Self.key(cookie)
        guard let record = try await store.consoleSession(key: key, now: clock.now, limits: limits) else {
            _ = recent.withLock { $0.removeValue(forKey: key) }
            return nil
        }
        let session = AdminSession(csrfToken: record.csrfToken, createdAt: record.createdAt, lastSeen: record.lastSeen)
        remember(key, session)
        return session
    }

    /// Whether the request's cookie names a session this node found live and that has not
    /// timed out since, without asking the database. For answers that cannot wait for it (the
    /// router's error responder); a session only other nodes have seen counts as unknown.
    func knownSession(for request: Request) -> Bool {
        guard let cookie = Self.cookie(in: request) else { return false }
        let key = Self.key(cookie)
        let now = clock.now
        return recent.withLock { recent in
            guard let session = recent[key] else { return false }
            return !limits.isExpired(createdAt: session.createdAt, lastSeen: session.lastSeen, now: now)
        }
    }

    func end(for request: Request) async throws {
        guard let cookie = Self.cookie(in: request) else { return }
        let key = Self.key(cookie)
        _ = recent.withLock { $0.removeValue(forKey: key) }
        try await store.deleteConsoleSession(key: key)
    }

    /// Ends every session, on every node (for a password change).
    func endAll() async throws {
        recent.withLock { $0.removeAll() }
        try await store.deleteAllConsoleSessions()
    }

    /// Sessions stored, expired ones not yet purged included.
    func count() async throws -> Int { try await store.consoleSessionCount() }

    private func remember(_ key: String, _ session: AdminSession) {
        let now = clock.now
        recent.withLock { recent in
            if recent[key] == nil, recent.count >= Self.maxSessions {
                recent = recent.filter {
                    !limits.isExpired(createdAt: $0.value.createdAt, lastSeen: $0.value.lastSeen, now: now)
                }
                if recent.count >= Self.maxSessions { recent.removeAll() }
            }
            recent[key] = session
        }
    }

    private static func key(_ cookie: String) -> String {
        Hex.encode(Digest.sha256(Array(cookie.utf8)))
    }

    /// The session cookie's value from any `Cookie` header, or nil.
    static func cookie(in request: Request) -> String? {
        for header in request.headers.values(for: "Cookie") {
            for pair in header.split(separator: ";") {
                let trimmed = pair.trimmingCharacters(in: .whitespaces)
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                if trimmed[..<equals] == cookieName {
                    let value = String(trimmed[trimmed.index(after: equals)...])
                    // Ours are 43 base64url characters; anything else is not worth hashing.
                    guard value.utf8.count == 43 else { return nil }
                    return value
                }
            }
        }
        return nil
    }

    /// `Set-Cookie` for a new session: invisible to scripts, never sent cross-site, only to
    /// the admin API, and only over TLS when the console is served over TLS.
    func setCookie(_ value: String, secure: Bool) -> String {
        var cookie =
            "\(Self.cookieName)=\(value); Path=/admin/api; HttpOnly; SameSite=Strict; Max-Age=\(Int(absoluteTimeout))"
        if secure { cookie += "; Secure" }
        return cookie
    }

    func clearCookie(secure: Bool) -> String {
        var cookie = "\(Self.cookieName)=; Path=/admin/api; HttpOnly; SameSite=Strict; Max-Age=0"
        if secure { cookie += "; Secure" }
        return cookie
    }

    /// Constant-time comparison of the CSRF header with the session's token.
    static func csrfMatches(_ request: Request, _ session: AdminSession) -> Bool {
        guard let given = request.headers["X-CSRF-Token"] else { return false }
        let a = Array(given.utf8)
        let b = Array(session.csrfToken.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
