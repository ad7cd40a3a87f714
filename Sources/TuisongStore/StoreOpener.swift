import Foundation
import Logging
import TuisongCore
import TuisongPostgresStore
import TuisongSQLStore
import TuisongSQLiteStore

/// Which database a `database.url` names.
public enum StoreBackend: Sendable, Equatable {
    /// An SQLite file (the embedded default).
    case sqlite(path: String)
    /// A PostgreSQL server, as a libpq URL (`postgresql://user:password@host:port/db?…`).
    case postgresql(url: String)
}

/// Opens the gateway's store from a URL: `postgresql://…` or `postgres://…` is PostgreSQL;
/// a plain path, or one written `sqlite:PATH` / `file:PATH` (`sqlite:///abs/path` too), is an
/// SQLite file.
///
/// ```swift
/// let store = try StoreOpener.open(url: "postgresql://tuisong@db/tuisong", options: .init(poolSize: 16))
/// defer { try? store.close() }
/// ```
public enum StoreOpener {
    /// What both stores are opened with; each takes the options that apply to it.
    public struct Options: Sendable {
        public var clock: any TuisongCore.Clock
        /// The plugins' migrations (every provider the binary knows, mounted or not).
        public var pluginMigrations: [PluginSchema]
        /// SQLite: fsync on every commit (`database.synchronous_full`).
        public var synchronousFull: Bool
        /// PostgreSQL: connections in this process's pool (`database.pool_size`).
        public var poolSize: Int
        /// PostgreSQL: how long claimed work stays this node's without a renewal
        /// (`cluster.lease_seconds`).
        public var leaseDuration: Duration
        /// PostgreSQL: audience positions per slice of a message (`cluster.slice_size`).
        public var sliceSize: Int
        /// PostgreSQL: the least time between two claims while claims find work but not a full
        /// batch (`cluster.claim_pace_ms`).
        public var claimPace: Duration
        /// Told how long each write transaction took.
        public var writeObserver: (@Sendable (Duration) -> Void)?
        public var logger: Logger

        public init(
            clock: any TuisongCore.Clock = SystemClock(), pluginMigrations: [PluginSchema] = [],
            synchronousFull: Bool = false, poolSize: Int = 8, leaseDuration: Duration = .seconds(30),
            sliceSize: Int = 20_000, claimPace: Duration = PostgresStore.Options.defaultClaimPace,
            writeObserver: (@Sendable (Duration) -> Void)? = nil,
            logger: Logger = Logger(label: "tuisong.store")
        ) {
            self.clock = clock
            self.pluginMigrations = pluginMigrations
            self.synchronousFull = synchronousFull
            self.poolSize = poolSize
            self.leaseDuration = leaseDuration
            self.sliceSize = sliceSize
            self.claimPace = claimPace
            self.writeObserver = writeObserver
            self.logger = logger
        }
    }

    /// A URL whose scheme names no database this build opens.
    public struct UnsupportedURL: Error, Sendable, Equatable, CustomStringConvertible {
        /// The URL with any password removed.
        public var url: String
        public var reason: String
        public var description: String { "\(url): \(reason)" }
    }

    /// Which database `url` names.
    ///
    /// - Throws: `UnsupportedURL` for an empty URL, another scheme (`mysql://…`) or a
    ///   PostgreSQL URL without a host or database part.
    public static func backend(for url: String) throws(UnsupportedURL) -> StoreBackend {
        let trimmed = url.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw UnsupportedURL(url: "", reason: "empty database URL") }
        let lowered = trimmed.lowercased()
        for scheme in ["postgresql://", "postgres://"] where lowered.hasPrefix(scheme) {
            guard trimmed.count > scheme.count else {
                throw UnsupportedURL(url: redacted(trimmed), reason: "a PostgreSQL URL needs a host or a database")
            }
            return .postgresql(url: trimmed)
        }
        for prefix in ["sqlite:", "file:"] where lowered.hasPrefix(prefix) {
            var path = String(trimmed.dropFirst(prefix.count))
            // sqlite:///var/lib/tuisong.db (an empty authority) = /var/lib/tuisong.db
            if path.hasPrefix("//") { path.removeFirst(2) }
            guard !path.isEmpty else { throw UnsupportedURL(url: trimmed, reason: "no file path after \(prefix)") }
            return .sqlite(path: path)
        }
        if let schemeEnd = trimmed.range(of: "://") {
            let scheme = trimmed[..<schemeEnd.lowerBound]
            if !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) {
                throw UnsupportedURL(
                    url: redacted(trimmed),
                    reason: "unsupported scheme \"\(scheme)\" (postgresql://…, postgres://…, or an SQLite file path)")
            }
        }
        return .sqlite(path: trimmed)
    }

    /// Whether the database `url` names is there already: an SQLite file that exists, a
    /// PostgreSQL database holding Tuisong's tables. Creates and changes nothing, where `open`
    /// would create the file or the tables.
    ///
    /// - Throws: `UnsupportedURL`, or `StoreError(.unavailable, …)` when PostgreSQL cannot be reached.
    public static func exists(url: String) throws -> Bool {
        switch try backend(for: url) {
        case .sqlite(let path): FileManager.default.fileExists(atPath: path)
        case .postgresql(let url): try PostgresStore.hasSchema(url: url)
        }
    }

    /// Opens (creating or migrating) the database `url` names.
    ///
    /// - Throws: `UnsupportedURL` (see `backend(for:)`), or the store's `StoreError` when the
    ///   database cannot be opened or migrated.
    public static func open(url: String, options: Options = .init()) throws -> any GatewayStore {
        switch try backend(for: url) {
        case .sqlite(let path):
            var sqlite = SQLiteStore.Options(
                synchronousFull: options.synchronousFull, clock: options.clock,
                pluginMigrations: options.pluginMigrations)
            sqlite.writeObserver = options.writeObserver
            return try SQLiteStore(path: path, configuration: sqlite)
        case .postgresql(let url):
            var postgres = PostgresStore.Options(
                clock: options.clock, pluginMigrations: options.pluginMigrations, poolSize: options.poolSize,
                leaseDuration: options.leaseDuration, sliceSize: options.sliceSize,
                claimPace: options.claimPace, logger: options.logger)
            postgres.writeObserver = options.writeObserver
            return try PostgresStore(url: url, configuration: postgres)
        }
    }

    /// `url` safe to log or show: a PostgreSQL URL without its user, password and query
    /// (`postgresql://db.example:5432/tuisong`); a path as it is.
    public static func redacted(_ url: String) -> String {
        PostgresStore.redacted(url)
    }

    /// `url` with only its password (in the user part or a `password=` parameter) replaced by
    /// `********`: what `check-config` shows, keeping the user and options an operator checks.
    public static func maskingPassword(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        var result = String(url[..<schemeEnd.upperBound])
        var rest = String(url[schemeEnd.upperBound...])
        var query: String?
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = String(rest[..<mark])
        }
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                rest = String(userInfo[..<colon]) + ":********" + String(rest[at...])
            }
        }
        result += rest
        if let query {
            let parameters = query.split(separator: "&", omittingEmptySubsequences: false).map { parameter in
                parameter.lowercased().hasPrefix("password=") ? "password=********" : String(parameter)
            }
            result += "?" + parameters.joined(separator: "&")
        }
        return result
    }
}
