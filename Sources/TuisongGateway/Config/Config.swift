import Foundation
import TuisongCore
import TuisongLookAlikes
import TuisongStore
import TuisongTransportKit

/// The gateway's effective configuration: the embedded default (`config/tuisong.json`),
/// overlaid by an optional file, overlaid by `TUISONG_<PATH>` environment variables.
///
/// Every leaf key of the default has an environment name: its dotted path upper-cased with
/// dots as underscores, e.g. `listen.port` → `TUISONG_LISTEN_PORT`,
/// `listen.max_body_bytes` → `TUISONG_LISTEN_MAX_BODY_BYTES`.
public struct GatewayConfig: Sendable, Equatable {
    public struct Listen: Sendable, Equatable {
        public var host: String
        public var port: Int
        /// 0 = one MHD thread per core.
        public var threads: Int
        public var connectionTimeoutSeconds: Int
        public var requestTimeoutSeconds: Int
        public var maxBodyBytes: Int
        public var maxHeaderBytes: Int
        /// Seconds from a request's first line to its last body byte, however steadily sent.
        public var receiveTimeoutSeconds: Int
        public var maxConnections: Int
        /// Connections one client address may hold at once.
        public var maxConnectionsPerAddress: Int
    }
    /// How the front door reads requests.
    public struct HTTP: Sendable, Equatable {
        /// `refuse` (a body sent with `Transfer-Encoding: chunked` is answered 411) or `accept`
        /// (taken with libmicrohttpd's own leniency): docs/security.md.
        public var chunkedRequests: String

        public static let chunkedRequestChoices = ["refuse", "accept"]
    }
    public struct Database: Sendable, Equatable {
        /// `postgresql://…` / `postgres://…` (PostgreSQL, several nodes on one database) or an
        /// SQLite file path (`sqlite:` / `file:` prefixes accepted). Empty: `path`. May carry a
        /// password: never logged; `check-config` masks it.
        public var url: String
        /// The SQLite file, the older spelling of `url`: used only when `url` is empty. Local
        /// mode (`LocalMode`) keeps its throwaway keys in this file's directory when the
        /// database is PostgreSQL.
        public var path: String
        /// SQLite: fsync on every commit (survives power loss, slower); off = WAL NORMAL
        /// (survives kill -9).
        public var synchronousFull: Bool
        /// PostgreSQL: connections this node keeps to the database.
        public var poolSize: Int

        /// What the store opens: `url` when set, otherwise `path` (`url` wins).
        public var effectiveURL: String { url.isEmpty ? path : url }

        /// The database `effectiveURL` names (validated when the config is loaded).
        public var backend: StoreBackend {
            (try? StoreOpener.backend(for: effectiveURL)) ?? .sqlite(path: effectiveURL)
        }

        /// The SQLite file, nil on PostgreSQL.
        public var sqlitePath: String? {
            if case .sqlite(let path) = backend { return path }
            return nil
        }

        /// Where the database is, safe to log (a PostgreSQL URL without user, password or query).
        public var location: String { StoreOpener.redacted(effectiveURL) }

        /// The directory of Tuisong's own files beside the database (local mode's keys): the
        /// SQLite file's, or `path`'s on PostgreSQL.
        public var directory: String {
            let directory = ((sqlitePath ?? path) as NSString).deletingLastPathComponent
            return directory.isEmpty ? "." : directory
        }
    }
    /// Several nodes on one PostgreSQL database (ignored on SQLite, which has one dispatcher).
    public struct Cluster: Sendable, Equatable {
        /// How long work a node claimed stays its own without a renewal: a dead node's work
        /// is taken over after this long at most.
        public var leaseSeconds: Int
        /// Audience positions per slice of a message: what one node sends before others can help.
        public var sliceSize: Int
        /// The least time between two claims of a node while its claims find work but not a full
        /// batch (milliseconds; 0: none).
        public var claimPaceMilliseconds: Int = 50
    }
    public struct Security: Sendable, Equatable {
        public var masterKeyFile: String
        /// Base64 32-byte key; when set it wins over the key file. Secret.
        public var masterKey: String
        public var initialAdminPasswordFile: String
    }
    public struct Web: Sendable, Equatable {
        public var root: String
        /// The URL operators reach the console at, printed on start; derived from `listen` if empty.
        public var publicURL: String
    }
    /// Delivery receipts (docs/receipts.md).
    public struct Receipts: Sendable, Equatable {
        /// The base URL the push services reach the gateway at (`https://push.example.com`):
        /// receipts come to `<it>/receipts/{channel}/{app id}`. Empty: no send asks for receipts.
        public var publicURL: String
        /// `receipts.app_rate_per_address`: the app's own receipts (`POST /api/v1/receipts`, no
        /// API key) one client address may post per second, in bursts of up to ten seconds'
        /// worth; 0 = no bound.
        public var appRatePerAddress: Double
        /// `receipts.app_rate_per_app`: an app's own receipts recorded per second (verified ones
        /// only, so forged tokens spend nothing of it), likewise; 0 = no bound.
        public var appRatePerApp: Double
        /// `receipts.digest_max_lag_seconds`: how long the services' receipts may wait to be
        /// recorded while pushes are being sent (the digest waits for sending to end until
        /// then).
        public var digestMaxLagSeconds: Double
    }
    public struct Log: Sendable, Equatable {
        public var level: String
        /// `text` (swift-log's stream format) or `json` (one object per line).
        public var format: String
    }
    public struct Metrics: Sendable, Equatable {
        /// Serve `GET /metrics` (Prometheus text format).
        public var enabled: Bool
        /// `host:port` for a separate metrics listener; empty = on the main listener.
        public var listen: String
        /// When set, a scrape must send `Authorization: Bearer <token>`. Secret.
        public var bearerToken: String
    }
    /// Local mode: the bundled look-alike of every service started in-process, every
    /// transport pointed at it, so a push can be seen end to end with no account anywhere. Its
    /// keys are `<section>.local_mock` and `<section>.local_mock_port` of the section the port's
    /// default look-alike declares (`LookAlikeRegistry.legacyNames`), where operators have
    /// always had them; the rest of that section is its transport's, declared by it
    /// (`TransportDeclaration.configPath`).
    public struct LocalMode: Sendable, Equatable {
        public var enabled: Bool
        /// The look-alike's port; 0 = any free one.
        public var port: Int

        /// The config keys, as documented (docs/config.md).
        static let enabledKey = LookAlikeRegistry.standard.legacyNames.localModeSection + ".local_mock"
        static let portKey = LookAlikeRegistry.standard.legacyNames.localModeSection + ".local_mock_port"
    }
    /// The push services' settings (`transports.*`): one section per transport the registry
    /// declares (`transports.<name>.*`, its keys and defaults from its declaration, read
    /// generically: a new transport needs no field here), and what their HTTP clients share.
    /// In local mode (`LocalMode`) every service is the bundled look-alike instead.
    public struct Transports: Sendable, Equatable {
        /// The transports this config was typed for (`TransportRegistry.standard` unless a test
        /// adds one).
        public var registry: TransportRegistry
        /// The look-alikes local mode runs (`LookAlikeRegistry.standard` unless a test adds one):
        /// a transport whose channel has one is pointed at it, the others at their URLs.
        public var lookAlikes: LookAlikeRegistry = .standard
        /// Each transport's section, typed by its declared keys.
        public var sections: [PushChannel: TransportSection]
        /// A PEM bundle of extra CAs to trust (a test's look-alike); empty = the system's.
        public var caFile: String
        public var connectionsPerHost: Int
        public var connectTimeoutSeconds: Int
        public var requestTimeoutSeconds: Int
        /// Requests handed to a service's HTTP client at once; the rest wait their turn.
        public var maxInFlight: Int
        /// Tokens per request to a service that takes many (the most any takes is 1,000).
        public var tokensPerRequest: Int

        /// A transport's section (empty when the registry has no such transport).
        public func section(_ channel: PushChannel) -> TransportSection { sections[channel] ?? TransportSection() }

        public static func == (lhs: Transports, rhs: Transports) -> Bool {
            lhs.registry.channels == rhs.registry.channels && lhs.sections == rhs.sections && lhs.caFile == rhs.caFile
                && lhs.connectionsPerHost == rhs.connectionsPerHost
                && lhs.connectTimeoutSeconds == rhs.connectTimeoutSeconds
                && lhs.requestTimeoutSeconds == rhs.requestTimeoutSeconds && lhs.maxInFlight == rhs.maxInFlight
                && lhs.tokensPerRequest == rhs.tokensPerRequest
        }
    }
    public struct Delivery: Sendable, Equatable {
        public var workers: Int
        public var pageSize: Int
        public var maxAttempts: Int
        public var retryBaseSeconds: Double
        public var retryMaxSeconds: Double
        /// `delivery.max_backlog_per_app`: an app's messages queued or sending at which its
        /// pushes are answered 429 (0: no bound).
        public var maxBacklogPerApp: Int
    }

    public var listen: Listen
    public var http: HTTP
    public var database: Database
    public var cluster: Cluster
    public var security: Security
    public var web: Web
    public var receipts: Receipts
    public var log: Log
    public var metrics: Metrics
    public var providers: [String]
    public var localMode: LocalMode
    public var transports: Transports
    public var delivery: Delivery
    /// Events to app servers (`webhooks.*`, docs/webhooks.md).
    public struct Webhooks: Sendable, Equatable {
        /// Endpoints may resolve to loopback, private, link-local and metadata addresses, and use
        /// plain `http`: true in the local-mode default, false in deploy/tuisong.json.
        public var allowPrivateNetworks: Bool
        public var timeoutSeconds: Int
        /// Requests in flight to one endpoint from this node.
        public var concurrencyPerEndpoint: Int
        /// How long a node holds the outbox rows it claimed: a killed node's rows are sent by
        /// another after this.
        public var leaseSeconds: Int
    }
    public var webhooks: Webhooks
    /// Each vendor provider's own section (`"acme": {...}`), handed to the provider as is.
    public var providerSections: [String: JSONValue]
    /// The merged tree this was typed from, for `check-config`.
    public var effectiveTree: JSONValue

    /// Keys whose values are secrets: masked by `check-config`, never logged.
    public static let secretKeys: Set<String> = ["security.master_key", "metrics.bearer_token"]

    /// Keys that are URLs which may carry a password: `check-config` shows them with the
    /// password masked, errors and logs without user, password or query.
    public static let urlKeys: Set<String> = ["database.url"]
}

extension JSONValue {
    /// The JSON type's name, for configuration errors.
    var typeName: String {
        switch self {
        case .object: "object"
        case .array: "array"
        case .string: "string"
        case .int: "integer"
        case .double: "number"
        case .bool: "boolean"
        case .null: "null"
        }
    }
}

/// A configuration problem, naming the key and the offending value.
public struct ConfigError: Error, Sendable, CustomStringConvertible, Equatable {
    public var key: String
    public var message: String

    public init(_ key: String, _ message: String) {
        self.key = key
        self.message = message
    }

    public var description: String {
        key.isEmpty ? "config: \(message)" : "config: \(key): \(message)"
    }
}

extension GatewayConfig {
    /// The embedded default, identical to `config/tuisong.json` (a test keeps them equal).
    public static var embeddedDefault: GatewayConfig {
        // The embedded JSON is a literal of this module; failing to parse it is a build bug.
        try! GatewayConfig.load(fileContents: nil, environment: [:])
    }

    /// The default tree: the embedded JSON, with each transport of `registry`'s declared
    /// defaults in its section (`transports.<name>`, or its `configPath`) where the JSON does
    /// not already have them.
    static func defaultTree(_ registry: TransportRegistry) throws(ConfigError) -> JSONValue {
        let tree = try parse(Data(embeddedDefaultJSON.utf8), source: "embedded default")
        guard case .object(var root) = tree, case .object(var transports)? = root["transports"] else { return tree }
        for declaration in registry.declarations where !declaration.configKeys.isEmpty {
            var section: [String: JSONValue]
            if let path = declaration.configPath {
                section = root[path]?.objectValue ?? [:]
            } else {
                guard transports[declaration.name] == nil else { continue }
                section = [:]
            }
            for key in declaration.configKeys where section[key.key] == nil {
                switch key.kind {
                case .integer: section[key.key] = .int(Int64(key.defaultValue) ?? 0)
                case .url, .httpsURL, .file: section[key.key] = .string(key.defaultValue)
                }
            }
            if let path = declaration.configPath {
                root[path] = .object(section)
            } else {
                transports[declaration.name] = .object(section)
            }
        }
        root["transports"] = .object(transports)
        return .object(root)
    }

    /// Keys whose values name files or directories. A relative one in effect with a config file
    /// (written in the file, or a default the file leaves as it is) is from the file's directory,
    /// so every command given the server's `--config` reaches the server's files wherever it
    /// runs; one from an environment variable, or with no file, is from the current directory.
    /// `database.url` is one of them when it names an SQLite file; a transport's file keys
    /// (`TransportConfigKey.Kind.file`) are too.
    public static func pathKeys(_ registry: TransportRegistry = .standard) -> [String] {
        [
            "database.path", "database.url", "security.master_key_file", "security.initial_admin_password_file",
            "web.root", "transports.ca_file",
        ]
            + registry.declarations.flatMap { declaration in
                declaration.configKeys.filter { $0.kind == .file }.map { "\(declaration.configSectionPath).\($0.key)" }
            }
    }

    /// Loads the effective configuration.
    /// - Parameters:
    ///   - path: a JSON file overlaying the embedded default; `nil` = the default alone. Relative
    ///     paths it names (`pathKeys`) are from its directory.
    ///   - environment: usually `ProcessInfo.processInfo.environment`.
    public static func load(
        path: String?, environment: [String: String], transports: TransportRegistry = .standard
    ) throws(ConfigError) -> GatewayConfig {
        var contents: Data?
        if let path {
            do {
                contents = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                // errno's own reason ("No such file or directory", "Permission denied") says
                // more than Foundation's "The operation could not be completed".
                let reason = access(path, R_OK) != 0 ? String(cString: strerror(errno)) : error.localizedDescription
                throw ConfigError("", "cannot read \(path): \(reason)")
            }
        }
        let directory = path.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }
        return try load(
            fileContents: contents, relativeTo: directory, environment: environment, transports: transports)
    }

    /// - Parameter directory: the config file's directory, which relative paths of the file and
    ///   the defaults under it are from (`pathKeys`); nil leaves them relative.
    public static func load(
        fileContents: Data?, relativeTo directory: String? = nil, environment: [String: String],
        transports: TransportRegistry = .standard
    ) throws(ConfigError) -> GatewayConfig {
        let tree = try effectiveTree(
            fileContents: fileContents, relativeTo: directory, environment: environment, transports: transports)
        return try GatewayConfig(tree: tree, transports: transports)
    }

    /// The merged tree (default ← file ← environment), before typing and validation; with a
    /// file, the relative paths in effect before the environment is applied are made absolute
    /// from `directory`.
    static func effectiveTree(
        fileContents: Data?, relativeTo directory: String? = nil, environment: [String: String],
        transports: TransportRegistry = .standard
    ) throws(ConfigError) -> JSONValue {
        let defaults = try defaultTree(transports)
        var tree = defaults
        if let fileContents {
            let file = try parse(fileContents, source: "config file")
            tree = try overlay(file, on: defaults, path: "")
            if let directory { tree = resolvingPaths(tree, from: directory, keys: pathKeys(transports)) }
        }
        return try applyEnvironment(environment, to: tree, path: "")
    }

    /// `tree` with the relative values of `keys` (`pathKeys`) made absolute from `directory`.
    /// Empty values, absolute ones, PostgreSQL URLs and values of the wrong type are left as
    /// they are (typing reports the last).
    static func resolvingPaths(_ tree: JSONValue, from directory: String, keys: [String]) -> JSONValue {
        let base = URL(fileURLWithPath: directory, isDirectory: true)
        var tree = tree
        for key in keys {
            tree = replacing(key.split(separator: ".").map(String.init)[...], in: tree) { value in
                var relative = value
                if key == "database.url" {
                    guard case .sqlite(let file)? = try? StoreOpener.backend(for: value) else { return nil }
                    relative = file
                }
                guard !relative.hasPrefix("/") else { return nil }
                // Absolute first: `standardized` alone keeps a leading `..` of the relative part.
                return URL(fileURLWithPath: relative, relativeTo: base).absoluteURL.standardized.path
            }
        }
        return tree
    }

    /// `tree` with the non-empty string at `path` replaced by `change`'s answer (nil: kept).
    private static func replacing(
        _ path: ArraySlice<String>, in tree: JSONValue, _ change: (String) -> String?
    ) -> JSONValue {
        guard let first = path.first, case .object(var object) = tree, let child = object[first] else { return tree }
        if path.count == 1 {
            guard case .string(let value) = child, !value.isEmpty, let changed = change(value) else { return tree }
            object[first] = .string(changed)
        } else {
            object[first] = replacing(path.dropFirst(), in: child, change)
        }
        return .object(object)
    }

    static func parse(_ data: Data, source: String) throws(ConfigError) -> JSONValue {
        let tree: JSONValue
        // Foundation's JSONDecoder lets a trailing comma through; the strict parser the HTTP
        // side uses does not, so a config another JSON tool would refuse is refused here too.
        do {
            _ = try JSONValue(parsing: [UInt8](data))
        } catch {
            let before = data.prefix(error.offset)
            let line = before.count(where: { $0 == UInt8(ascii: "\n") }) + 1
            let column =
                before.count - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 - before.startIndex + 1 } ?? 0) + 1
            throw ConfigError("", "\(source) is not valid JSON: line \(line), column \(column): \(error.message)")
        }
        do {
            tree = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw ConfigError("", "\(source) is not valid JSON: \(describe(error))")
        }
        guard case .object = tree else { throw ConfigError("", "\(source) must be a JSON object") }
        return tree
    }

    /// Keys under these paths are free-form (the sections of the providers this build
    /// knows, `"acme": {…}`): taken as given, handed to the provider.
    static var openSections: Set<String> { Set(ProviderRegistry.names) }

    /// Overlays a file's values on the default, refusing keys the default does not know so a
    /// typo (`"lisen"`) is reported instead of silently ignored.
    static func overlay(_ file: JSONValue, on base: JSONValue, path: String) throws(ConfigError)
        -> JSONValue
    {
        guard case .object(let fileObject) = file, case .object(var baseObject) = base else {
            return file
        }
        for (key, value) in fileObject {
            let childPath = path.isEmpty ? key : "\(path).\(key)"
            guard let baseValue = baseObject[key] else {
                if path.isEmpty, openSections.contains(key) || key.hasPrefix("x-") {
                    baseObject[key] = value
                    continue
                }
                throw ConfigError(childPath, "unknown key")
            }
            if case .object = baseValue {
                guard case .object = value else {
                    throw ConfigError(childPath, "must be an object, got \(value.typeName)")
                }
                baseObject[key] = try overlay(value, on: baseValue, path: childPath)
            } else {
                baseObject[key] = value
            }
        }
        return .object(baseObject)
    }

    /// The environment variable that overrides a dotted key path.
    public static func environmentName(forKeyPath path: String) -> String {
        "TUISONG_" + path.uppercased().replacingOccurrences(of: ".", with: "_")
    }

    static func applyEnvironment(_ environment: [String: String], to tree: JSONValue, path: String)
        throws(ConfigError) -> JSONValue
    {
        switch tree {
        case .object(let object):
            var result = object
            for (key, value) in object {
                let childPath = path.isEmpty ? key : "\(path).\(key)"
                result[key] = try applyEnvironment(environment, to: value, path: childPath)
            }
            return .object(result)
        default:
            let name = environmentName(forKeyPath: path)
            guard let raw = environment[name] else { return tree }
            return try parseOverride(raw, like: tree, key: path, variable: name)
        }
    }

    static func parseOverride(_ raw: String, like current: JSONValue, key: String, variable: String)
        throws(ConfigError) -> JSONValue
    {
        let shown = GatewayConfig.secretKeys.contains(key) ? "(secret)" : "\"\(raw)\""
        switch current {
        case .string: return .string(raw)
        case .int:
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            if let value = Int64(trimmed) { return .int(value) }
            // A fractional value for a key whose default is whole (retry_base_seconds = 1):
            // typing decides whether the key takes fractions, and names the key if not.
            if let value = Double(trimmed), value.isFinite { return .double(value) }
            throw ConfigError(key, "\(variable)=\(shown) is not a number")
        case .double:
            guard let value = Double(raw.trimmingCharacters(in: .whitespaces)) else {
                throw ConfigError(key, "\(variable)=\(shown) is not a number")
            }
            return .double(value)
        case .bool:
            switch raw.lowercased() {
            case "1", "true", "yes", "on": return .bool(true)
            case "0", "false", "no", "off": return .bool(false)
            default: throw ConfigError(key, "\(variable)=\(shown) is not a boolean (true/false)")
            }
        case .array:
            // Either a JSON array or a comma-separated list: TUISONG_PROVIDERS=acme,other
            if raw.hasPrefix("["),
                let parsed = try? JSONDecoder().decode([JSONValue].self, from: Data(raw.utf8))
            {
                return .array(parsed)
            }
            let items = raw.split(separator: ",").map {
                JSONValue.string($0.trimmingCharacters(in: .whitespaces))
            }
            return .array(items)
        default:
            return .string(raw)
        }
    }
}

/// A short, human sentence for a decoding error (JSONDecoder's descriptions are verbose).
func describe(_ error: any Error) -> String {
    if case DecodingError.dataCorrupted(let context) = error {
        let underlying = (context.underlyingError as NSError?)?.userInfo["NSDebugDescription"] as? String
        return underlying ?? context.debugDescription
    }
    return "\(error)"
}
