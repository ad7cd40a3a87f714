import TuisongCore

/// How an `APNsMockServer` listens, authenticates and misbehaves.
///
/// Every key is optional when decoding, so a JSON config only names what it changes:
/// ```json
/// {"port": 2197, "tokenKeys": [{"keyID": "ABC123DEFG", "teamID": "DEF123GHIJ", "publicKeyPEM": "..."}],
///  "faults": {"tokenPrefixes": {"410": {"status": 410, "reason": "Unregistered"}}}}
/// ```
public struct APNsMockConfiguration: Sendable, Codable, Equatable {
    /// A provider token signing key the mock accepts: JWTs with `kid == keyID` must be signed by
    /// the matching private key and carry `iss == teamID`.
    public struct TokenKey: Sendable, Codable, Equatable {
        /// The 10-character key id (`kid` in the JWT header).
        public var keyID: String
        /// The 10-character team id (`iss` in the JWT claims).
        public var teamID: String
        /// The P-256 public key as PEM (`-----BEGIN PUBLIC KEY-----`).
        public var publicKeyPEM: String

        public init(keyID: String, teamID: String, publicKeyPEM: String) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKeyPEM = publicKeyPEM
        }
    }

    /// A canned APNs error answer.
    public struct Fault: Sendable, Codable, Equatable {
        /// HTTP status, e.g. 410.
        public var status: Int
        /// APNs reason string, e.g. `Unregistered`. A 410 answer also carries a timestamp.
        public var reason: String

        public init(status: Int, reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    /// Misbehaviour injected into an otherwise valid exchange. Changeable at run time with
    /// `APNsMockServer.setFaults(_:)`.
    public struct Faults: Sendable, Codable, Equatable {
        /// Device-token prefix (lower-case hex) → answer. Applied after validation, so a request
        /// that is invalid anyway still gets its validation error. The longest matching prefix wins.
        public var tokenPrefixes: [String: Fault]
        /// Every response is held back this long; other streams keep flowing meanwhile.
        public var latencyMilliseconds: Int
        /// Each connection sends GOAWAY (last stream id = the N-th processed stream) once it has
        /// processed this many requests; streams above that id are not processed and must be retried.
        public var goawayAfterRequests: Int?
        /// Each connection is closed abruptly (no GOAWAY, no TLS close_notify) right after it has
        /// processed this many requests; requests still in flight get no answer.
        public var dropConnectionAfterRequests: Int?
        /// Each connection lowers SETTINGS_MAX_CONCURRENT_STREAMS to `loweredStreamLimit` once it
        /// has processed this many requests, as a server under load may at any time.
        public var lowerStreamLimitAfterRequests: Int?
        /// The limit `lowerStreamLimitAfterRequests` switches to.
        public var loweredStreamLimit: Int
        /// Connections accepted while this is set never answer PING frames (a half-dead peer).
        public var ignorePings: Bool
        /// Device-token prefix (case-sensitive, as the tokens are) → how the other look-alikes
        /// answer that token, each in its service's words. Applied after authentication and body
        /// validation; the longest matching prefix wins.
        public var androidTokenPrefixes: [String: AndroidTokenFault]
        /// Every answer of the other look-alikes — sign-ins and pushes — starts as usual (status, headers without a length) and then
        /// streams a body that never ends, as a broken upstream or proxy might; the stream goes on
        /// until the client resets it or closes the connection.
        public var endlessAnswers: Bool

        public init(
            tokenPrefixes: [String: Fault] = [:], latencyMilliseconds: Int = 0,
            goawayAfterRequests: Int? = nil, dropConnectionAfterRequests: Int? = nil,
            lowerStreamLimitAfterRequests: Int? = nil, loweredStreamLimit: Int = 1, ignorePings: Bool = false,
            androidTokenPrefixes: [String: AndroidTokenFault] = [:], endlessAnswers: Bool = false
        ) {
            self.androidTokenPrefixes = androidTokenPrefixes
            self.endlessAnswers = endlessAnswers
            self.tokenPrefixes = tokenPrefixes
            self.latencyMilliseconds = latencyMilliseconds
            self.goawayAfterRequests = goawayAfterRequests
            self.dropConnectionAfterRequests = dropConnectionAfterRequests
            self.lowerStreamLimitAfterRequests = lowerStreamLimitAfterRequests
            self.loweredStreamLimit = loweredStreamLimit
            self.ignorePings = ignorePings
        }

        /// The "magic token" set of local mode: tokens starting `410` are unregistered, `400bad`
        /// are bad device tokens, `429` are throttled and `500` fail with a server error.
        /// Not the default: random real tokens hit these prefixes about once in 4096.
        /// Android tokens: `unregistered-`, `invalid-`, `quota-` (retry after 30 s),
        /// `unavailable-`, `internal-` (real tokens never contain `-` before their `:`).
        public static let magicTokenPrefixes = Faults(
            tokenPrefixes: [
                "410": Fault(status: 410, reason: "Unregistered"),
                "400bad": Fault(status: 400, reason: "BadDeviceToken"),
                "429": Fault(status: 429, reason: "TooManyRequests"),
                "500": Fault(status: 500, reason: "InternalServerError"),
            ],
            androidTokenPrefixes: [
                "unregistered-": .unregistered, "invalid-": .invalidArgument,
                "quota-": .quotaExceeded(retryAfterSeconds: 30), "unavailable-": .unavailable,
                "internal-": .internal,
            ])

        private enum CodingKeys: String, CodingKey {
            case tokenPrefixes, latencyMilliseconds, goawayAfterRequests, dropConnectionAfterRequests
            case lowerStreamLimitAfterRequests, loweredStreamLimit, ignorePings, androidTokenPrefixes, endlessAnswers
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let defaults = Faults()
            tokenPrefixes =
                try container.decodeIfPresent([String: Fault].self, forKey: .tokenPrefixes)
                ?? defaults.tokenPrefixes
            latencyMilliseconds =
                try container.decodeIfPresent(Int.self, forKey: .latencyMilliseconds)
                ?? defaults.latencyMilliseconds
            goawayAfterRequests = try container.decodeIfPresent(Int.self, forKey: .goawayAfterRequests)
            dropConnectionAfterRequests = try container.decodeIfPresent(
                Int.self, forKey: .dropConnectionAfterRequests)
            lowerStreamLimitAfterRequests = try container.decodeIfPresent(
                Int.self, forKey: .lowerStreamLimitAfterRequests)
            loweredStreamLimit =
                try container.decodeIfPresent(Int.self, forKey: .loweredStreamLimit) ?? defaults.loweredStreamLimit
            ignorePings = try container.decodeIfPresent(Bool.self, forKey: .ignorePings) ?? defaults.ignorePings
            androidTokenPrefixes =
                try container.decodeIfPresent([String: AndroidTokenFault].self, forKey: .androidTokenPrefixes)
                ?? defaults.androidTokenPrefixes
            endlessAnswers =
                try container.decodeIfPresent(Bool.self, forKey: .endlessAnswers) ?? defaults.endlessAnswers
        }
    }

    /// Address to bind; loopback by default.
    public var host: String
    /// TCP port; 0 picks a free one (read it back from `APNsMockServer.port`).
    public var port: Int
    /// SETTINGS_MAX_CONCURRENT_STREAMS once a valid provider token was accepted on the connection
    /// (token auth), or from the start (certificate auth).
    public var maxConcurrentStreams: Int
    /// SETTINGS_MAX_CONCURRENT_STREAMS before the first valid provider token; APNs allows one.
    public var streamsBeforeFirstValidToken: Int
    /// Keys accepted for token (JWT) authentication.
    public var tokenKeys: [TokenKey]
    /// PEM CA certificates; client certificates issued by one of them authenticate the
    /// connection, and their APNs topic extension lists the allowed `apns-topic` values.
    public var clientCertificateCAPEMs: [String]
    /// A provider token whose `iat` is older than this is answered 403 ExpiredProviderToken.
    public var maxTokenAgeSeconds: Int
    /// Injected misbehaviour; see `Faults`.
    public var faults: Faults
    /// Log one JSON line per processed request (to stdout unless the server was given a sink).
    public var logRequests: Bool
    /// Event-loop threads; accepted connections are spread over them round-robin.
    public var eventLoopThreads: Int
    /// How many requests `receivedNotifications()` keeps (oldest dropped first); the same bound
    /// applies to `receivedAndroidMessages()`.
    public var recordedNotificationLimit: Int
    /// What the other look-alikes trust, by their own keys (each
    /// `LookAlikeDeclaration.configurationKeys`), kept as read; each look-alike's folder adds
    /// typed accessors.
    public var lookAlikeSettings: [String: JSONValue]
    /// Lifetime of the access tokens the look-alikes' token endpoints issue. 0 issues tokens that
    /// are already expired, so a test sees the expiry answer without waiting.
    public var accessTokenLifetimeSeconds: Int

    public init(
        host: String = "127.0.0.1", port: Int = 0, maxConcurrentStreams: Int = 1000,
        streamsBeforeFirstValidToken: Int = 1, tokenKeys: [TokenKey] = [],
        clientCertificateCAPEMs: [String] = [], maxTokenAgeSeconds: Int = 3600,
        faults: Faults = Faults(), logRequests: Bool = false, eventLoopThreads: Int = 1,
        recordedNotificationLimit: Int = 100_000, accessTokenLifetimeSeconds: Int = 3600,
        lookAlikeSettings: [String: JSONValue] = [:]
    ) {
        self.lookAlikeSettings = lookAlikeSettings
        self.accessTokenLifetimeSeconds = accessTokenLifetimeSeconds
        self.host = host
        self.port = port
        self.maxConcurrentStreams = maxConcurrentStreams
        self.streamsBeforeFirstValidToken = streamsBeforeFirstValidToken
        self.tokenKeys = tokenKeys
        self.clientCertificateCAPEMs = clientCertificateCAPEMs
        self.maxTokenAgeSeconds = maxTokenAgeSeconds
        self.faults = faults
        self.logRequests = logRequests
        self.eventLoopThreads = eventLoopThreads
        self.recordedNotificationLimit = recordedNotificationLimit
    }

    private enum CodingKeys: String, CodingKey {
        case host, port, maxConcurrentStreams, streamsBeforeFirstValidToken, tokenKeys
        case clientCertificateCAPEMs, maxTokenAgeSeconds, faults, logRequests, eventLoopThreads
        case recordedNotificationLimit, accessTokenLifetimeSeconds
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = APNsMockConfiguration()
        func value<T: Decodable>(_ key: CodingKeys, _ fallback: T) throws -> T {
            try container.decodeIfPresent(T.self, forKey: key) ?? fallback
        }
        host = try value(.host, defaults.host)
        port = try value(.port, defaults.port)
        maxConcurrentStreams = try value(.maxConcurrentStreams, defaults.maxConcurrentStreams)
        streamsBeforeFirstValidToken = try value(
            .streamsBeforeFirstValidToken, defaults.streamsBeforeFirstValidToken)
        tokenKeys = try value(.tokenKeys, defaults.tokenKeys)
        clientCertificateCAPEMs = try value(.clientCertificateCAPEMs, defaults.clientCertificateCAPEMs)
        maxTokenAgeSeconds = try value(.maxTokenAgeSeconds, defaults.maxTokenAgeSeconds)
        faults = try value(.faults, defaults.faults)
        logRequests = try value(.logRequests, defaults.logRequests)
        eventLoopThreads = try value(.eventLoopThreads, defaults.eventLoopThreads)
        recordedNotificationLimit = try value(
            .recordedNotificationLimit, defaults.recordedNotificationLimit)
        accessTokenLifetimeSeconds = try value(.accessTokenLifetimeSeconds, defaults.accessTokenLifetimeSeconds)
        // Every other key is a look-alike's, read by it when it starts.
        let known = Set(
            [
                CodingKeys.host, .port, .maxConcurrentStreams, .streamsBeforeFirstValidToken, .tokenKeys,
                .clientCertificateCAPEMs, .maxTokenAgeSeconds, .faults, .logRequests, .eventLoopThreads,
                .recordedNotificationLimit, .accessTokenLifetimeSeconds,
            ].map(\.rawValue))
        let others = try decoder.container(keyedBy: AnyCodingKey.self)
        lookAlikeSettings = [:]
        for key in others.allKeys where !known.contains(key.stringValue) {
            lookAlikeSettings[key.stringValue] = try others.decode(JSONValue.self, forKey: key)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(host, forKey: .host)
        try container.encode(port, forKey: .port)
        try container.encode(maxConcurrentStreams, forKey: .maxConcurrentStreams)
        try container.encode(streamsBeforeFirstValidToken, forKey: .streamsBeforeFirstValidToken)
        try container.encode(tokenKeys, forKey: .tokenKeys)
        try container.encode(clientCertificateCAPEMs, forKey: .clientCertificateCAPEMs)
        try container.encode(maxTokenAgeSeconds, forKey: .maxTokenAgeSeconds)
        try container.encode(faults, forKey: .faults)
        try container.encode(logRequests, forKey: .logRequests)
        try container.encode(eventLoopThreads, forKey: .eventLoopThreads)
        try container.encode(recordedNotificationLimit, forKey: .recordedNotificationLimit)
        try container.encode(accessTokenLifetimeSeconds, forKey: .accessTokenLifetimeSeconds)
        var others = encoder.container(keyedBy: AnyCodingKey.self)
        for (key, value) in lookAlikeSettings { try others.encode(value, forKey: AnyCodingKey(key)) }
    }

    /// The look-alike setting `key` read as `T` (nil when absent); throws when it does not read.
    package func lookAlikeSetting<T: Decodable>(_ key: String, as type: T.Type) throws -> T? {
        try lookAlikeSettings[key].map { try $0.decoded(as: T.self) }
    }

    /// A look-alike's list setting (empty when absent or unreadable: `LookAlikeRegistry.check`
    /// and the look-alike's start report an unreadable one).
    package func lookAlikeList<T: Decodable>(_ key: String, of type: T.Type) -> [T] {
        ((try? lookAlikeSetting(key, as: [T].self)) ?? nil) ?? []
    }

    /// Sets a look-alike's list setting.
    package mutating func setLookAlikeList<T: Encodable>(_ key: String, _ list: [T]) {
        lookAlikeSettings[key] = try? JSONValue(encoding: list)
    }

    /// Adds `other`'s look-alike settings: lists are joined, anything else is replaced.
    public mutating func addLookAlikeSettings(of other: APNsMockConfiguration) {
        for (key, value) in other.lookAlikeSettings {
            if case .array(let own)? = lookAlikeSettings[key], case .array(let added) = value {
                lookAlikeSettings[key] = .array(own + added)
            } else {
                lookAlikeSettings[key] = value
            }
        }
    }
}

extension APNsMockConfiguration {
    /// An OAuth client of a look-alike with a client-credentials grant: its access tokens may
    /// send for `appID` only.
    public struct PushKitClient: Sendable, Codable, Equatable {
        /// `client_id` (some services: digits only, usually the App ID).
        public var clientID: String
        public var clientSecret: String
        /// The `{appId}` of the send path.
        public var appID: String

        public init(clientID: String, clientSecret: String, appID: String) {
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.appID = appID
        }
    }

    /// How the other look-alikes answer a device token, each in its service's words (its folder
    /// and `docs/reference/android.md` say how): `unregistered` and `invalidArgument` refuse the
    /// token; `quotaExceeded` (with its `Retry-After`), `unavailable` and `internal` fail the
    /// request, or the token where the service answers per token.
    /// JSON: `{"kind": "quotaExceeded", "retryAfterSeconds": 30}`.
    public struct AndroidTokenFault: Sendable, Codable, Equatable {
        public enum Kind: String, Sendable, Codable, Equatable {
            case unregistered, invalidArgument, quotaExceeded, unavailable, `internal`
        }

        public var kind: Kind
        /// The `Retry-After` of a `quotaExceeded` answer (seconds); ignored by other kinds.
        public var retryAfterSeconds: Int?

        public init(kind: Kind, retryAfterSeconds: Int? = nil) {
            self.kind = kind
            self.retryAfterSeconds = retryAfterSeconds
        }

        public static let unregistered = AndroidTokenFault(kind: .unregistered)
        public static let invalidArgument = AndroidTokenFault(kind: .invalidArgument)
        public static let unavailable = AndroidTokenFault(kind: .unavailable)
        public static let `internal` = AndroidTokenFault(kind: .internal)
        public static func quotaExceeded(retryAfterSeconds: Int) -> AndroidTokenFault {
            AndroidTokenFault(kind: .quotaExceeded, retryAfterSeconds: retryAfterSeconds)
        }
    }
}
