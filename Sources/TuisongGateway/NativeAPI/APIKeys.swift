import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongCrypto
import TuisongHTTP

/// Native API keys: shown once at creation, stored only as a SHA-256 hash.
public enum APIKey {
    /// A new key: `tsk_` + 43 base64url characters (256 random bits).
    public static func generate() -> String {
        "tsk_" + Base64URL.encode(SecureRandom.bytes(32))
    }

    public static func hash(_ key: String) -> String {
        Hex.encode(Digest.sha256(Array(key.utf8)))
    }
}

/// Resolves `Authorization: Bearer <api_key>` to an app. Resolved keys are cached for a few
/// seconds so a lookup costs one database read, not two; a regenerated or deleted key stops
/// working in this process at once (`forget`) and in others within `ttl`.
final class APIKeyAuthenticator: Sendable {
    private struct Entry {
        var app: App
        var expires: Date
    }

    private let store: any AppStore
    private let clock: any Clock
    private let ttl: TimeInterval
    private let logger: Logger
    private let cache = Mutex<[String: Entry]>([:])
    private static let maxEntries = 10_000

    init(store: any AppStore, clock: any Clock, logger: Logger, ttl: TimeInterval = 5) {
        self.store = store
        self.clock = clock
        self.logger = logger
        self.ttl = ttl
    }

    func forget(app id: Int64) {
        cache.withLock { entries in entries = entries.filter { $0.value.app.id != id } }
    }

    func app(for request: Request) async throws -> App {
        guard let header = request.headers["authorization"], let key = Self.bearerKey(header) else {
            throw NativeAPIError.unauthorized
        }
        guard key.hasPrefix("tsk_"), key.utf8.count < 200 else {
            throw NativeAPIError(401, "unauthorized", "unknown API key")
        }
        // Keyed by the presented key itself: a hit costs one dictionary lookup, not a
        // SHA-256. The plain key lives only in this process's memory, for `ttl`, as it does
        // in every request that carries it; the database keeps only the hash.
        let now = clock.now
        if let cached = cache.withLock({ $0[key] }), cached.expires > now { return cached.app }
        guard let app = try await store.app(apiKeyHash: APIKey.hash(key)) else {
            throw NativeAPIError(401, "unauthorized", "unknown API key")
        }
        cache.withLock { entries in
            if entries.count >= Self.maxEntries { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(app: app, expires: now.addingTimeInterval(ttl))
        }
        return app
    }

    /// The key of `Bearer <key>` (scheme case-insensitive, spaces and tabs around the key
    /// ignored), or nil for any other scheme. Byte-level: Foundation's trimming bridged
    /// through NSString and showed up in the lookup profile.
    static func bearerKey(_ header: String) -> String? {
        let bytes = Array(header.utf8)
        let scheme = Array("bearer".utf8)
        guard bytes.count > scheme.count, bytes[scheme.count] == UInt8(ascii: " ") else { return nil }
        for (index, letter) in scheme.enumerated() where bytes[index] | 0x20 != letter { return nil }
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var start = scheme.count + 1
        var end = bytes.count
        while start < end, isBlank(bytes[start]) { start += 1 }
        while end > start, isBlank(bytes[end - 1]) { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// Authenticates, runs `body`, and renders any error as a native JSON error.
    func withApp(_ request: Request, _ body: (App) async throws -> Response) async -> Response {
        do {
            let app = try await app(for: request)
            return try await body(app)
        } catch let error as NativeAPIError {
            return error.response
        } catch let error as HTTPError {
            return NativeAPIError(httpError: error).response
        } catch let error as BacklogFull {
            var response = NativeAPIError(429, "backlog_full", error.explanation).response
            response.headers.add(name: "Retry-After", value: String(error.retryAfterSeconds))
            return response
        } catch let error as StoreError where error.code == .unavailable {
            logger.warning("store unavailable", metadata: ["error": "\(error)"])
            let kind = error.unavailability ?? .busy
            var response = NativeAPIError(503, kind.rawValue, kind.explanation).response
            response.headers.add(name: "Retry-After", value: String(kind.retryAfterSeconds))
            return response
        } catch {
            logger.error(
                "native API request failed",
                metadata: ["method": "\(request.method.rawValue)", "path": "\(request.path)", "error": "\(error)"])
            return NativeAPIError(500, "internal_error", "internal error").response
        }
    }
}
