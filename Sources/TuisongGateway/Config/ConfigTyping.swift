import Foundation
import TuisongCore
import TuisongStore
import TuisongTransportKit

/// Reads typed, validated values out of the merged tree; every failure names its key path.
struct ConfigReader {
    let tree: JSONValue

    func value(_ path: String) throws(ConfigError) -> JSONValue {
        var node = tree
        for part in path.split(separator: ".") {
            guard let child = node[String(part)] else { throw ConfigError(path, "missing") }
            node = child
        }
        return node
    }

    func string(_ path: String) throws(ConfigError) -> String {
        let node = try value(path)
        guard case .string(let s) = node else {
            throw ConfigError(path, "must be a string, got \(node.typeName) \(shown(path, node))")
        }
        return s
    }

    func bool(_ path: String) throws(ConfigError) -> Bool {
        let node = try value(path)
        guard case .bool(let b) = node else {
            throw ConfigError(path, "must be true or false, got \(node.typeName) \(shown(path, node))")
        }
        return b
    }

    func int(_ path: String, in range: ClosedRange<Int>) throws(ConfigError) -> Int {
        let node = try value(path)
        guard case .int(let wide) = node, let i = Int(exactly: wide) else {
            throw ConfigError(path, "must be an integer, got \(node.typeName) \(shown(path, node))")
        }
        guard range.contains(i) else {
            throw ConfigError(path, "\(i) is out of range \(range.lowerBound)…\(range.upperBound)")
        }
        return i
    }

    func double(_ path: String, in range: ClosedRange<Double>) throws(ConfigError) -> Double {
        let node = try value(path)
        let number: Double
        switch node {
        case .int(let i): number = Double(i)
        case .double(let d): number = d
        default: throw ConfigError(path, "must be a number, got \(node.typeName) \(shown(path, node))")
        }
        guard range.contains(number) else {
            throw ConfigError(path, "\(number) is out of range \(range.lowerBound)…\(range.upperBound)")
        }
        return number
    }

    func strings(_ path: String) throws(ConfigError) -> [String] {
        let node = try value(path)
        guard case .array(let items) = node else {
            throw ConfigError(path, "must be an array of strings, got \(node.typeName)")
        }
        var result: [String] = []
        for item in items {
            guard case .string(let s) = item else {
                throw ConfigError(path, "must contain only strings, found \(item.typeName)")
            }
            result.append(s)
        }
        return result
    }

    private func shown(_ path: String, _ node: JSONValue) -> String {
        if GatewayConfig.secretKeys.contains(path) { return "(secret)" }
        if GatewayConfig.urlKeys.contains(path), case .string(let url) = node {
            return "\"\(StoreOpener.redacted(url))\""
        }
        guard let data = try? JSONEncoder().encode(node) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }
}

extension GatewayConfig {
    init(tree: JSONValue, transports registry: TransportRegistry = .standard) throws(ConfigError) {
        let r = ConfigReader(tree: tree)
        listen = Listen(
            host: try r.string("listen.host"),
            port: try r.int("listen.port", in: 0...65535),
            threads: try r.int("listen.threads", in: 0...256),
            connectionTimeoutSeconds: try r.int("listen.connection_timeout_seconds", in: 1...3600),
            requestTimeoutSeconds: try r.int("listen.request_timeout_seconds", in: 1...3600),
            maxBodyBytes: try r.int("listen.max_body_bytes", in: 1024...(64 << 20)),
            maxHeaderBytes: try r.int("listen.max_header_bytes", in: 1024...(1 << 20)),
            receiveTimeoutSeconds: try r.int("listen.receive_timeout_seconds", in: 1...3600),
            maxConnections: try r.int("listen.max_connections", in: 1...1_000_000),
            maxConnectionsPerAddress: try r.int("listen.max_connections_per_address", in: 1...1_000_000))
        guard !listen.host.isEmpty else { throw ConfigError("listen.host", "must not be empty") }
        http = HTTP(chunkedRequests: try r.string("http.chunked_requests"))
        guard HTTP.chunkedRequestChoices.contains(http.chunkedRequests) else {
            throw ConfigError(
                "http.chunked_requests",
                "\"\(http.chunkedRequests)\" is not one of \(HTTP.chunkedRequestChoices.joined(separator: ", "))")
        }

        database = Database(
            url: try r.string("database.url").trimmingCharacters(in: .whitespaces),
            path: try r.string("database.path"),
            synchronousFull: try r.bool("database.synchronous_full"),
            poolSize: try r.int("database.pool_size", in: 1...256))
        guard !database.path.isEmpty else { throw ConfigError("database.path", "must not be empty") }
        if !database.url.isEmpty {
            do {
                _ = try StoreOpener.backend(for: database.url)
            } catch {
                throw ConfigError("database.url", error.description)
            }
        }
        cluster = Cluster(
            leaseSeconds: try r.int("cluster.lease_seconds", in: 2...3600),
            sliceSize: try r.int("cluster.slice_size", in: 100...10_000_000),
            claimPaceMilliseconds: try r.int("cluster.claim_pace_ms", in: 0...1000))

        security = Security(
            masterKeyFile: try r.string("security.master_key_file"),
            masterKey: try r.string("security.master_key"),
            initialAdminPasswordFile: try r.string("security.initial_admin_password_file"))
        if !security.masterKey.isEmpty {
            let decoded = Data(base64Encoded: security.masterKey)
            guard decoded?.count == 32 else {
                throw ConfigError("security.master_key", "must be 32 bytes in base64 (value hidden)")
            }
        } else if security.masterKeyFile.isEmpty {
            throw ConfigError("security.master_key_file", "must be set when security.master_key is empty")
        }

        web = Web(root: try r.string("web.root"), publicURL: try r.string("web.public_url"))
        receipts = Receipts(
            publicURL: try r.string("receipts.public_url").trimmingCharacters(in: .whitespaces),
            appRatePerAddress: try r.double("receipts.app_rate_per_address", in: 0...1_000_000),
            appRatePerApp: try r.double("receipts.app_rate_per_app", in: 0...10_000_000),
            digestMaxLagSeconds: try r.double("receipts.digest_max_lag_seconds", in: 0...3600))
        if !receipts.publicURL.isEmpty {
            guard let url = URL(string: receipts.publicURL), ["http", "https"].contains(url.scheme?.lowercased()),
                url.host?.isEmpty == false, url.query == nil
            else {
                throw ConfigError("receipts.public_url", "must be an http(s) URL such as https://push.example.com")
            }
        }
        log = Log(level: try r.string("log.level"), format: try r.string("log.format"))
        guard ["text", "json"].contains(log.format) else {
            throw ConfigError("log.format", "\"\(log.format)\" is not one of text, json")
        }
        metrics = Metrics(
            enabled: try r.bool("metrics.enabled"), listen: try r.string("metrics.listen"),
            bearerToken: try r.string("metrics.bearer_token"))
        if !metrics.listen.isEmpty, GatewayConfig.hostAndPort(metrics.listen) == nil {
            throw ConfigError(
                "metrics.listen", "\"\(metrics.listen)\" is not host:port (e.g. 127.0.0.1:9090, [::1]:9090)")
        }
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        guard levels.contains(log.level) else {
            throw ConfigError("log.level", "\"\(log.level)\" is not one of \(levels.joined(separator: ", "))")
        }

        // Checked against this build's registry here, so `check-config` refuses what `serve` would.
        providers = try r.strings("providers")
        if let duplicate = Dictionary(grouping: providers, by: { $0 }).first(where: { $0.value.count > 1 }) {
            throw ConfigError("providers", "\"\(duplicate.key)\" is listed twice")
        }
        if let unknown = providers.first(where: { ProviderRegistry.provider(named: $0) == nil }) {
            throw ConfigError("providers", ProviderRegistry.unknownProviderMessage(unknown))
        }

        localMode = LocalMode(
            enabled: try r.bool(LocalMode.enabledKey), port: try r.int(LocalMode.portKey, in: 0...65535))

        var transportSections: [PushChannel: TransportSection] = [:]
        for declaration in registry.declarations {
            var values: [String: String] = [:]
            for key in declaration.configKeys {
                let path = "\(declaration.configSectionPath).\(key.key)"
                switch key.kind {
                case .integer(let range):
                    values[key.key] = String(try r.int(path, in: range))
                case .url(let required):
                    let url = try r.string(path)
                    if url.isEmpty, required, key.key == "token_url" {
                        throw ConfigError(path, "must be set: the service's OAuth token endpoint")
                    }
                    if !url.isEmpty || required {
                        guard let parsed = URLComponents(string: url),
                            parsed.scheme == "https" || parsed.scheme == "http",
                            let host = parsed.host, !host.isEmpty
                        else { throw ConfigError(path, "\"\(url)\" is not an http(s) URL") }
                    }
                    values[key.key] = url
                case .httpsURL:
                    let url = try r.string(path)
                    guard let parsed = URLComponents(string: url), parsed.scheme == "https",
                        let host = parsed.host, !host.isEmpty
                    else { throw ConfigError(path, "\"\(url)\" is not an https URL") }
                    values[key.key] = url
                case .file:
                    let file = try r.string(path)
                    if !file.isEmpty, !FileManager.default.isReadableFile(atPath: file) {
                        throw ConfigError(path, "\"\(file)\" is not a readable file")
                    }
                    values[key.key] = file
                }
            }
            transportSections[declaration.channel.channel] = TransportSection(values)
        }
        transports = Transports(
            registry: registry, sections: transportSections,
            caFile: try r.string("transports.ca_file"),
            connectionsPerHost: try r.int("transports.connections_per_host", in: 1...64),
            connectTimeoutSeconds: try r.int("transports.connect_timeout_seconds", in: 1...300),
            requestTimeoutSeconds: try r.int("transports.request_timeout_seconds", in: 1...600),
            maxInFlight: try r.int("transports.max_in_flight", in: 1...100_000),
            tokensPerRequest: try r.int("transports.tokens_per_request", in: 1...1000))
        if !transports.caFile.isEmpty, !FileManager.default.isReadableFile(atPath: transports.caFile) {
            throw ConfigError("transports.ca_file", "\"\(transports.caFile)\" is not a readable file")
        }

        delivery = Delivery(
            workers: try r.int("delivery.workers", in: 1...100_000),
            pageSize: try r.int("delivery.page_size", in: 10...100_000),
            maxAttempts: try r.int("delivery.max_attempts", in: 1...1000),
            retryBaseSeconds: try r.double("delivery.retry_base_seconds", in: 0.001...3600),
            retryMaxSeconds: try r.double("delivery.retry_max_seconds", in: 0.001...86400),
            maxBacklogPerApp: try r.int("delivery.max_backlog_per_app", in: 0...100_000_000))
        webhooks = Webhooks(
            allowPrivateNetworks: try r.bool("webhooks.allow_private_networks"),
            timeoutSeconds: try r.int("webhooks.timeout_seconds", in: 1...60),
            concurrencyPerEndpoint: try r.int("webhooks.concurrency_per_endpoint", in: 1...256),
            leaseSeconds: try r.int("webhooks.lease_seconds", in: 2...3600))

        var sections: [String: JSONValue] = [:]
        if case .object(let root) = tree {
            for key in GatewayConfig.openSections { if let section = root[key] { sections[key] = section } }
        }
        providerSections = sections
        effectiveTree = tree
    }

    /// `127.0.0.1:9090` → ("127.0.0.1", 9090), `[::1]:9090` → ("::1", 9090); port 0–65535.
    static func hostAndPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "/" }) else { return nil }
        if host.contains(":") && !text.hasPrefix("[") { return nil }
        return (host, port)
    }

    /// The effective configuration as pretty JSON with every secret masked.
    public func maskedJSON() -> String {
        func mask(_ node: JSONValue, path: String) -> JSONValue {
            switch node {
            case .object(let object):
                var result: [String: JSONValue] = [:]
                for (key, value) in object {
                    let childPath = path.isEmpty ? key : "\(path).\(key)"
                    if GatewayConfig.urlKeys.contains(childPath), case .string(let url) = value {
                        result[key] = .string(StoreOpener.maskingPassword(url))
                    } else if GatewayConfig.secretKeys.contains(childPath) || GatewayConfig.looksSecret(key)
                        || GatewayConfig.vendorSecretKeys[path]?.contains(key) == true
                    {
                        if case .string(let s) = value, s.isEmpty {
                            result[key] = value
                        } else {
                            result[key] = .string("********")
                        }
                    } else {
                        result[key] = mask(value, path: childPath)
                    }
                }
                return .object(result)
            default:
                return node
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(mask(effectiveTree, path: ""))) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// In a provider's section, the keys of the settings it declares secret (`secret_key`,
    /// `secret_key_sealed`): provider name → keys.
    static var vendorSecretKeys: [String: Set<String>] {
        var keys: [String: Set<String>] = [:]
        for provider in ProviderRegistry.providers {
            let secret = provider.settings.filter(\.isSecret).flatMap { [$0.key, $0.storageKey] }
            if !secret.isEmpty { keys[provider.name] = Set(secret) }
        }
        return keys
    }

    /// Vendor sections are free-form: anything named like a secret is masked too.
    static func looksSecret(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return lowered.contains("secret") || lowered.contains("password")
            || lowered.hasSuffix("_key") && !lowered.hasSuffix("api_key_header")
            || lowered == "key"
    }
}
