import TuisongCore

/// How a `LookAlikeServer` listens, which client certificates it accepts and how it
/// misbehaves; what each look-alike trusts is kept under its own keys (`lookAlikeSettings`).
///
/// Every key is optional when decoding, so a JSON config only names what it changes:
/// ```json
/// {"port": 2197, "tokenKeys": [{"keyID": "ABC123DEFG", "teamID": "DEF123GHIJ", "publicKeyPEM": "..."}],
///  "faults": {"latencyMilliseconds": 20}}
/// ```
public struct LookAlikeConfiguration: Sendable, Codable, Equatable {
    /// Misbehaviour injected into an otherwise valid exchange. Changeable at run time with
    /// `LookAlikeServer.setFaults(_:)`.
    public struct Faults: Sendable, Codable, Equatable {
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
        /// Device-token prefix (case-sensitive, as the tokens are) → how the token-based
        /// look-alikes answer that token, each in its service's words. Applied after
        /// authentication and body validation; the longest matching prefix wins.
        public var androidTokenPrefixes: [String: AndroidTokenFault]
        /// Every answer of the token-based look-alikes — sign-ins and pushes — starts as usual
        /// (status, headers without a length) and then streams a body that never ends, as a broken
        /// upstream or proxy might; the stream goes on until the client resets it or closes the
        /// connection.
        public var endlessAnswers: Bool
        /// Every answer is held while this is set and goes out once it is cleared (looked at
        /// every few milliseconds), whenever that is, but not before `latencyMilliseconds`: a
        /// test that must see requests wait for an answer releases it when it has seen them,
        /// instead of racing a latency.
        public var holdAnswers: Bool
        /// The faults of a look-alike that has its own, by its own keys, kept as read (the
        /// `tokenPrefixes` of a service whose answers are not the kinds above); its folder adds
        /// typed accessors, and it reads them whenever they change (`PortService.prepareFaults`).
        public var lookAlikeFaults: [String: JSONValue]

        public init(
            latencyMilliseconds: Int = 0, goawayAfterRequests: Int? = nil, dropConnectionAfterRequests: Int? = nil,
            lowerStreamLimitAfterRequests: Int? = nil, loweredStreamLimit: Int = 1, ignorePings: Bool = false,
            androidTokenPrefixes: [String: AndroidTokenFault] = [:], endlessAnswers: Bool = false,
            holdAnswers: Bool = false, lookAlikeFaults: [String: JSONValue] = [:]
        ) {
            self.holdAnswers = holdAnswers
            self.androidTokenPrefixes = androidTokenPrefixes
            self.endlessAnswers = endlessAnswers
            self.latencyMilliseconds = latencyMilliseconds
            self.goawayAfterRequests = goawayAfterRequests
            self.dropConnectionAfterRequests = dropConnectionAfterRequests
            self.lowerStreamLimitAfterRequests = lowerStreamLimitAfterRequests
            self.loweredStreamLimit = loweredStreamLimit
            self.ignorePings = ignorePings
            self.lookAlikeFaults = lookAlikeFaults
        }

        /// The token-based look-alikes' "magic tokens" of local mode: `unregistered-`,
        /// `invalid-`, `quota-` (retry after 30 s), `unavailable-`, `internal-` (real tokens never
        /// contain `-` before their `:`). A look-alike adds its own (`LookAlikeDeclaration.magicFaults`).
        public static let magicAndroidTokenPrefixes: [String: AndroidTokenFault] = [
            "unregistered-": .unregistered, "invalid-": .invalidArgument,
            "quota-": .quotaExceeded(retryAfterSeconds: 30), "unavailable-": .unavailable, "internal-": .internal,
        ]

        /// The "magic token" set of local mode: each look-alike answers tokens starting with its
        /// magic prefixes with that error. Not the default: random real tokens hit some of these
        /// prefixes about once in 4096.
        public static func magicTokenPrefixes(lookAlikes: LookAlikeRegistry) -> Faults {
            var faults = Faults(androidTokenPrefixes: magicAndroidTokenPrefixes)
            for declaration in lookAlikes.declarations { declaration.magicFaults?(&faults) }
            return faults
        }

        /// Adds `other`'s token prefixes where these faults have none (each look-alike's too).
        public mutating func addTokenPrefixes(of other: Faults) {
            androidTokenPrefixes.merge(other.androidTokenPrefixes) { own, _ in own }
            for (key, value) in other.lookAlikeFaults {
                if case .object(let own)? = lookAlikeFaults[key], case .object(let added) = value {
                    lookAlikeFaults[key] = .object(own.merging(added) { own, _ in own })
                } else if lookAlikeFaults[key] == nil {
                    lookAlikeFaults[key] = value
                }
            }
        }

        /// The look-alike fault `key` read as `T` (nil when absent); throws when it does not read.
        package func lookAlikeFault<T: Decodable>(_ key: String, as type: T.Type) throws -> T? {
            try lookAlikeFaults[key].map { try $0.decoded(as: T.self) }
        }

        /// Sets (or, with nil, removes) the look-alike fault `key`.
        package mutating func setLookAlikeFault<T: Encodable>(_ key: String, _ value: T?) {
            lookAlikeFaults[key] = value.flatMap { try? JSONValue(encoding: $0) }
        }

        private enum CodingKeys: String, CodingKey, CaseIterable {
            case latencyMilliseconds, goawayAfterRequests, dropConnectionAfterRequests
            case lowerStreamLimitAfterRequests, loweredStreamLimit, ignorePings, androidTokenPrefixes, endlessAnswers
            case holdAnswers
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let defaults = Faults()
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
            holdAnswers = try container.decodeIfPresent(Bool.self, forKey: .holdAnswers) ?? defaults.holdAnswers
            // Every other key is a look-alike's, read by it (`PortService.prepareFaults`).
            let known = Set(CodingKeys.allCases.map(\.rawValue))
            let others = try decoder.container(keyedBy: AnyCodingKey.self)
            lookAlikeFaults = [:]
            for key in others.allKeys where !known.contains(key.stringValue) {
                lookAlikeFaults[key.stringValue] = try others.decode(JSONValue.self, forKey: key)
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(latencyMilliseconds, forKey: .latencyMilliseconds)
            try container.encodeIfPresent(goawayAfterRequests, forKey: .goawayAfterRequests)
            try container.encodeIfPresent(dropConnectionAfterRequests, forKey: .dropConnectionAfterRequests)
            try container.encodeIfPresent(lowerStreamLimitAfterRequests, forKey: .lowerStreamLimitAfterRequests)
            try container.encode(loweredStreamLimit, forKey: .loweredStreamLimit)
            try container.encode(ignorePings, forKey: .ignorePings)
            try container.encode(androidTokenPrefixes, forKey: .androidTokenPrefixes)
            try container.encode(endlessAnswers, forKey: .endlessAnswers)
            try container.encode(holdAnswers, forKey: .holdAnswers)
            var others = encoder.container(keyedBy: AnyCodingKey.self)
            for (key, value) in lookAlikeFaults { try others.encode(value, forKey: AnyCodingKey(key)) }
        }
    }

    /// Address to bind; loopback by default.
    public var host: String
    /// TCP port; 0 picks a free one (read it back from `LookAlikeServer.port`).
    public var port: Int
    /// SETTINGS_MAX_CONCURRENT_STREAMS once a service's answer raised it (a valid token, or the
    /// first request of a service that does not hold a new connection to one stream), or from
    /// the start on a connection with a client certificate.
    public var maxConcurrentStreams: Int
    /// SETTINGS_MAX_CONCURRENT_STREAMS until then (1, as Apple allows before a valid token).
    public var streamsBeforeFirstValidToken: Int
    /// PEM CA certificates; a client certificate issued by one of them is handed to the
    /// services when the connection opens (it may authenticate the connection).
    public var clientCertificateCAPEMs: [String]
    /// Injected misbehaviour; see `Faults`.
    public var faults: Faults
    /// Log one JSON line per processed request (to stdout unless the server was given a sink).
    public var logRequests: Bool
    /// Event-loop threads; accepted connections are spread over them round-robin.
    public var eventLoopThreads: Int
    /// How many requests each look-alike keeps (`receivedAndroidMessages()` and each
    /// look-alike's own records; oldest dropped first).
    public var recordedNotificationLimit: Int
    /// What the look-alikes trust, by their own keys (each
    /// `LookAlikeDeclaration.configurationKeys`), kept as read; each look-alike's folder adds
    /// typed accessors.
    public var lookAlikeSettings: [String: JSONValue]
    /// Lifetime of the access tokens the look-alikes' token endpoints issue. 0 issues tokens that
    /// are already expired, so a test sees the expiry answer without waiting.
    public var accessTokenLifetimeSeconds: Int
    /// How long a connection that sent GOAWAY waits for the client to close before closing
    /// anyway (reading and dropping what the client sends meanwhile). A test that must see the
    /// connection stay open until its client closes sets it longer than the test can take.
    public var lingerMilliseconds: Int

    public init(
        host: String = "127.0.0.1", port: Int = 0, maxConcurrentStreams: Int = 1000,
        streamsBeforeFirstValidToken: Int = 1, clientCertificateCAPEMs: [String] = [], faults: Faults = Faults(),
        logRequests: Bool = false, eventLoopThreads: Int = 1,
        recordedNotificationLimit: Int = 100_000, accessTokenLifetimeSeconds: Int = 3600,
        lingerMilliseconds: Int = 2000, lookAlikeSettings: [String: JSONValue] = [:]
    ) {
        self.lingerMilliseconds = lingerMilliseconds
        self.lookAlikeSettings = lookAlikeSettings
        self.accessTokenLifetimeSeconds = accessTokenLifetimeSeconds
        self.host = host
        self.port = port
        self.maxConcurrentStreams = maxConcurrentStreams
        self.streamsBeforeFirstValidToken = streamsBeforeFirstValidToken
        self.clientCertificateCAPEMs = clientCertificateCAPEMs
        self.faults = faults
        self.logRequests = logRequests
        self.eventLoopThreads = eventLoopThreads
        self.recordedNotificationLimit = recordedNotificationLimit
    }

    private enum CodingKeys: String, CodingKey {
        case host, port, maxConcurrentStreams, streamsBeforeFirstValidToken
        case clientCertificateCAPEMs, faults, logRequests, eventLoopThreads
        case recordedNotificationLimit, accessTokenLifetimeSeconds, lingerMilliseconds
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = LookAlikeConfiguration()
        func value<T: Decodable>(_ key: CodingKeys, _ fallback: T) throws -> T {
            try container.decodeIfPresent(T.self, forKey: key) ?? fallback
        }
        host = try value(.host, defaults.host)
        port = try value(.port, defaults.port)
        maxConcurrentStreams = try value(.maxConcurrentStreams, defaults.maxConcurrentStreams)
        streamsBeforeFirstValidToken = try value(
            .streamsBeforeFirstValidToken, defaults.streamsBeforeFirstValidToken)
        clientCertificateCAPEMs = try value(.clientCertificateCAPEMs, defaults.clientCertificateCAPEMs)
        faults = try value(.faults, defaults.faults)
        logRequests = try value(.logRequests, defaults.logRequests)
        eventLoopThreads = try value(.eventLoopThreads, defaults.eventLoopThreads)
        recordedNotificationLimit = try value(
            .recordedNotificationLimit, defaults.recordedNotificationLimit)
        accessTokenLifetimeSeconds = try value(.accessTokenLifetimeSeconds, defaults.accessTokenLifetimeSeconds)
        lingerMilliseconds = try value(.lingerMilliseconds, defaults.lingerMilliseconds)
        // Every other key is a look-alike's, read by it when it starts.
        let known = Set(
            [
                CodingKeys.host, .port, .maxConcurrentStreams, .streamsBeforeFirstValidToken,
                .clientCertificateCAPEMs, .faults, .logRequests, .eventLoopThreads,
                .recordedNotificationLimit, .accessTokenLifetimeSeconds, .lingerMilliseconds,
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
        try container.encode(clientCertificateCAPEMs, forKey: .clientCertificateCAPEMs)
        try container.encode(faults, forKey: .faults)
        try container.encode(logRequests, forKey: .logRequests)
        try container.encode(eventLoopThreads, forKey: .eventLoopThreads)
        try container.encode(recordedNotificationLimit, forKey: .recordedNotificationLimit)
        try container.encode(accessTokenLifetimeSeconds, forKey: .accessTokenLifetimeSeconds)
        try container.encode(lingerMilliseconds, forKey: .lingerMilliseconds)
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
    public mutating func addLookAlikeSettings(of other: LookAlikeConfiguration) {
        for (key, value) in other.lookAlikeSettings {
            if case .array(let own)? = lookAlikeSettings[key], case .array(let added) = value {
                lookAlikeSettings[key] = .array(own + added)
            } else {
                lookAlikeSettings[key] = value
            }
        }
    }
}

extension LookAlikeConfiguration {
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

    /// How the token-based look-alikes answer a device token, each in its service's words (its folder
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
