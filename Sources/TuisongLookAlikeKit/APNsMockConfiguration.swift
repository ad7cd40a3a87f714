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
        /// Android device-token prefix (case-sensitive, as the tokens are) → how FCM, Huawei,
        /// Honor, Xiaomi, OPPO and vivo answer that token. Applied after authentication and body validation; the longest
        /// matching prefix wins.
        public var androidTokenPrefixes: [String: AndroidTokenFault]
        /// Every answer of the FCM, Huawei, Honor, Xiaomi, OPPO, vivo and HarmonyOS look-alikes —
        /// sign-ins and pushes — starts as usual (status, headers without a length) and then
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
    /// Google service accounts the FCM look-alike trusts (`POST /token`, then
    /// `POST /v1/projects/{projectID}/messages:send`).
    public var fcmServiceAccounts: [FCMServiceAccount]
    /// Huawei Push Kit OAuth clients (`POST /oauth2/v3/token`, then `POST /v1/{appID}/messages:send`).
    public var huaweiClients: [PushKitClient]
    /// Honor Push OAuth clients (`POST /auth/token`, then `POST /api/v1/{appID}/sendMessage`).
    public var honorClients: [PushKitClient]
    /// Xiaomi MiPush apps (`POST /v3/message/regid` with `Authorization: key=<appSecret>`).
    public var xiaomiApps: [XiaomiApp]
    /// OPPO Push apps (`POST /server/v1/auth`, then `/server/v1/message/notification/unicast`
    /// and `unicast_batch`).
    public var oppoApps: [OppoApp]
    /// vivo Push apps (`POST /message/auth`, then `/message/send`, `/message/saveListPayload`
    /// and `/message/pushToList`).
    public var vivoApps: [VivoApp]
    /// HarmonyOS Push Kit service accounts (`POST /v3/{projectID}/messages:send` with a PS256
    /// JWT signed by the account's key).
    public var harmonyServiceAccounts: [HarmonyServiceAccount]
    /// Lifetime of the access tokens the token endpoints issue (FCM, Huawei and Honor
    /// `expires_in`; OPPO `auth_token` and vivo `authToken`). 0 issues tokens that are already
    /// expired, so a test sees the expiry answer without waiting.
    public var accessTokenLifetimeSeconds: Int

    public init(
        host: String = "127.0.0.1", port: Int = 0, maxConcurrentStreams: Int = 1000,
        streamsBeforeFirstValidToken: Int = 1, tokenKeys: [TokenKey] = [],
        clientCertificateCAPEMs: [String] = [], maxTokenAgeSeconds: Int = 3600,
        faults: Faults = Faults(), logRequests: Bool = false, eventLoopThreads: Int = 1,
        recordedNotificationLimit: Int = 100_000, fcmServiceAccounts: [FCMServiceAccount] = [],
        huaweiClients: [PushKitClient] = [], honorClients: [PushKitClient] = [],
        accessTokenLifetimeSeconds: Int = 3600, xiaomiApps: [XiaomiApp] = [], oppoApps: [OppoApp] = [],
        vivoApps: [VivoApp] = [], harmonyServiceAccounts: [HarmonyServiceAccount] = []
    ) {
        self.harmonyServiceAccounts = harmonyServiceAccounts
        self.xiaomiApps = xiaomiApps
        self.oppoApps = oppoApps
        self.vivoApps = vivoApps
        self.fcmServiceAccounts = fcmServiceAccounts
        self.huaweiClients = huaweiClients
        self.honorClients = honorClients
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
        case recordedNotificationLimit, fcmServiceAccounts, huaweiClients, honorClients, accessTokenLifetimeSeconds
        case xiaomiApps, oppoApps, vivoApps, harmonyServiceAccounts
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
        fcmServiceAccounts = try value(.fcmServiceAccounts, defaults.fcmServiceAccounts)
        huaweiClients = try value(.huaweiClients, defaults.huaweiClients)
        honorClients = try value(.honorClients, defaults.honorClients)
        accessTokenLifetimeSeconds = try value(.accessTokenLifetimeSeconds, defaults.accessTokenLifetimeSeconds)
        xiaomiApps = try value(.xiaomiApps, defaults.xiaomiApps)
        oppoApps = try value(.oppoApps, defaults.oppoApps)
        vivoApps = try value(.vivoApps, defaults.vivoApps)
        harmonyServiceAccounts = try value(.harmonyServiceAccounts, defaults.harmonyServiceAccounts)
    }
}

extension APNsMockConfiguration {
    /// A Google service account the FCM look-alike trusts: an assertion with `iss == clientEmail`
    /// and `kid == keyID` must be signed (RS256) by the private half of `publicKeyPEM`, and the
    /// access token it buys may send for `projectID` only.
    public struct FCMServiceAccount: Sendable, Codable, Equatable {
        /// `client_email` of the service-account JSON.
        public var clientEmail: String
        /// `private_key_id` of the service-account JSON (the assertion's `kid`).
        public var keyID: String
        /// The RSA public key as PEM (`-----BEGIN PUBLIC KEY-----`).
        public var publicKeyPEM: String
        /// `project_id`: the `{project}` of the send path.
        public var projectID: String

        public init(clientEmail: String, keyID: String, publicKeyPEM: String, projectID: String) {
            self.clientEmail = clientEmail
            self.keyID = keyID
            self.publicKeyPEM = publicKeyPEM
            self.projectID = projectID
        }
    }

    /// A HarmonyOS Push Kit service account (Huawei's key file: `project_id`, `key_id`,
    /// `private_key`, `sub_account`): a JWT with `kid == keyID` and `iss == subAccount`, signed
    /// (PS256) by the private half of `publicKeyPEM`, may send for `projectID` only.
    public struct HarmonyServiceAccount: Sendable, Codable, Equatable {
        public var projectID: String
        public var keyID: String
        public var subAccount: String
        /// The RSA public key as PEM (`-----BEGIN PUBLIC KEY-----`).
        public var publicKeyPEM: String

        public init(projectID: String, keyID: String, subAccount: String, publicKeyPEM: String) {
            self.projectID = projectID
            self.keyID = keyID
            self.subAccount = subAccount
            self.publicKeyPEM = publicKeyPEM
        }
    }

    /// An OAuth client of Huawei Push Kit or Honor Push (client-credentials grant): its access
    /// tokens may send for `appID` only.
    public struct PushKitClient: Sendable, Codable, Equatable {
        /// `client_id` (Huawei: digits only, usually the App ID).
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

    /// A Xiaomi MiPush app: requests with `Authorization: key=<appSecret>` may send to
    /// `restricted_package_name` = `packageName`.
    public struct XiaomiApp: Sendable, Codable, Equatable {
        /// The AppSecret of the Xiaomi developer console.
        public var appSecret: String
        /// The Android package the app's messages are restricted to.
        public var packageName: String

        public init(appSecret: String, packageName: String) {
            self.appSecret = appSecret
            self.packageName = packageName
        }
    }

    /// An OPPO Push app: `POST /server/v1/auth` signs `appKey + timestamp + masterSecret`
    /// (SHA-256); the `auth_token` it buys sends for this app only.
    public struct OppoApp: Sendable, Codable, Equatable {
        public var appKey: String
        /// The MasterSecret (not the AppSecret: OPPO's server API signs with the master secret).
        public var masterSecret: String

        public init(appKey: String, masterSecret: String) {
            self.appKey = appKey
            self.masterSecret = masterSecret
        }
    }

    /// A vivo Push app: `POST /message/auth` signs `appId + appKey + timestamp + appSecret`
    /// (MD5, lowercase hex); the `authToken` it buys sends for this app only.
    public struct VivoApp: Sendable, Codable, Equatable {
        /// The numeric AppID, as text.
        public var appID: String
        public var appKey: String
        public var appSecret: String

        public init(appID: String, appKey: String, appSecret: String) {
            self.appID = appID
            self.appKey = appKey
            self.appSecret = appSecret
        }
    }

    /// How the Android look-alikes answer a device token (see `docs/reference/android.md`):
    ///
    /// | kind | FCM | Huawei | Honor |
    /// |---|---|---|---|
    /// | `unregistered` | 404 `UNREGISTERED` | token in `illegal_tokens` | token in `expireTokens` |
    /// | `invalidArgument` | 400 `INVALID_ARGUMENT`, the token message | token in `illegal_tokens` | token in `failTokens` |
    /// | `quotaExceeded` | 429 `QUOTA_EXCEEDED` + `Retry-After` | HTTP 503 (flow control) | HTTP 503 (flow control) |
    /// | `unavailable` | 503 `UNAVAILABLE` | HTTP 500 `81000001` | HTTP 500 `81000001` |
    /// | `internal` | 500 `INTERNAL` | HTTP 500 `81000001` | HTTP 500 `81000001` |
    ///
    /// | kind | Xiaomi | OPPO | vivo |
    /// |---|---|---|---|
    /// | `unregistered`, `invalidArgument` | id in `bad_regids` (all: `20301`) | `10000` (batch: the entry's `errorCode`) | `10302` (batch: in `invalidUsers`) |
    /// | `quotaExceeded` | `200001` (daily limit) | `33` (daily limit) | `10070` (`10073` for system messages) |
    /// | `unavailable` | `10002` | `-1` | `10040` |
    /// | `internal` | HTTP 500 `10001` | HTTP 500 `-1` | HTTP 500 |
    ///
    /// The last three fail the whole request (these batches have no per-token retry); the
    /// daily-quota codes are the services' own, so a gateway can tell "no more today" apart.
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
