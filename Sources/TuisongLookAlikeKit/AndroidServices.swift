import Synchronization
internal import TuisongCrypto

/// The Android push services the mock stands in for, next to APNs.
public enum AndroidPushService: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// Firebase Cloud Messaging HTTP v1, with Google's service-account OAuth token endpoint.
    case fcm
    /// Huawei Push Kit (HMS Core) REST v1.
    case huawei
    /// Honor Push.
    case honor
    /// Xiaomi MiPush (server API v3, form-encoded, AppSecret as the key).
    case xiaomi
    /// OPPO Push (HeyTap) server API v1.
    case oppo
    /// vivo Push server API.
    case vivo
    /// Huawei Push Kit for HarmonyOS NEXT (scenario API v3, service-account JWT).
    case harmony

    public var description: String { rawValue }
}

/// Counters of one Android service since start (or the last `resetStatistics()`).
public struct AndroidServiceStatistics: Sendable, Equatable {
    /// Access tokens issued by the service's token endpoint.
    public var tokenGrants = 0
    /// Token requests refused (bad secret, bad assertion, unknown client…).
    public var tokenRefusals = 0
    /// Send requests answered, whatever the answer.
    public var sendRequests = 0
    /// Send requests refused because of their access token (missing, unknown, expired, revoked,
    /// another project's or app's).
    public var authenticationFailures = 0
    /// Send requests refused as a whole (authentication, body validation, request-level faults).
    public var requestsRefused = 0
    /// Device tokens a message was accepted for (a Huawei batch of 1000 counts 1000).
    public var messagesDelivered = 0
    /// Device tokens refused inside otherwise processed requests (faults, malformed tokens), plus
    /// the tokens of requests refused as a whole.
    public var messagesRefused = 0
    /// Answers by HTTP status, token endpoint included.
    public var responsesByStatus: [Int: Int] = [:]
    /// Error answers by the service's code: FCM `errorCode` (or `status` when there is no
    /// FcmError), Huawei/Honor result code, OAuth `error`, Xiaomi/OPPO `code`, vivo `result`.
    public var responsesByCode: [String: Int] = [:]

    public init() {}
}

/// Per-service counters of the Android look-alikes.
public struct AndroidMockStatistics: Sendable, Equatable {
    public var fcm = AndroidServiceStatistics()
    public var huawei = AndroidServiceStatistics()
    public var honor = AndroidServiceStatistics()
    public var xiaomi = AndroidServiceStatistics()
    public var oppo = AndroidServiceStatistics()
    public var vivo = AndroidServiceStatistics()
    public var harmony = AndroidServiceStatistics()

    public init() {}

    public subscript(service: AndroidPushService) -> AndroidServiceStatistics {
        get {
            switch service {
            case .fcm: fcm
            case .huawei: huawei
            case .honor: honor
            case .xiaomi: xiaomi
            case .oppo: oppo
            case .vivo: vivo
            case .harmony: harmony
            }
        }
        set {
            switch service {
            case .fcm: fcm = newValue
            case .huawei: huawei = newValue
            case .honor: honor = newValue
            case .xiaomi: xiaomi = newValue
            case .oppo: oppo = newValue
            case .vivo: vivo = newValue
            case .harmony: harmony = newValue
            }
        }
    }
}

/// One accepted Android send request (validate-only requests are not deliveries and are not
/// recorded).
public struct ReceivedAndroidMessage: Sendable, Equatable {
    public var service: AndroidPushService
    /// FCM project id, Huawei or Honor app id, from the path; Xiaomi package name; OPPO
    /// AppKey; vivo AppID.
    public var target: String
    /// Who sent it: the service account's `client_email`, the OAuth `client_id`, the Xiaomi
    /// package name, the OPPO or vivo AppKey.
    public var principal: String
    /// Device tokens the message was accepted for.
    public var tokens: [String]
    /// Device tokens refused inside the request (Huawei `illegal_tokens`, Honor `failTokens` and
    /// `expireTokens`, Xiaomi `bad_regids`, OPPO entries with an `errorCode`, vivo
    /// `invalidUsers`).
    public var refusedTokens: [String]
    /// FCM `name`, the Huawei/Honor `requestId`, Xiaomi `data.id`, OPPO `messageId`s (`,`
    /// between those of a batch), vivo `taskId`.
    public var messageID: String
    /// The request body bytes as received (a vivo `pushToList`: the `saveListPayload` body its
    /// `taskId` names).
    public var body: [UInt8]
    /// Server-wide connection number and HTTP/2 stream id of the request.
    public var connectionID: Int
    public var streamID: Int
    /// Honor's `timestamp` header as sent; nil when absent or for other services.
    public var timestampHeader: String?
    /// Receive time, milliseconds since 1970.
    public var receivedAtMilliseconds: Int64
    /// HarmonyOS: the request's `push-type` header (0 alert, 6 background, …); nil for others.
    public var harmonyPushType: Int? = nil
    /// HarmonyOS: `pushOptions.testMessage` as sent.
    public var harmonyTestMessage = false
}

/// The parts of an Android request the look-alikes read.
struct AndroidRequest {
    var method: String?
    var path: String
    var authority: String?
    var authorization: String?
    var contentType: String?
    var timestamp: String?
    /// vivo's `authToken` or OPPO's `auth_token` request header.
    var vendorToken: String? = nil
    /// HarmonyOS Push Kit's `push-type` request header.
    var pushType: String? = nil
    var body: [UInt8]
    /// Bytes received, which may exceed `body` (stored up to `AndroidServices.bodyStorageLimit`).
    var bodyLength: Int
    var connectionID: Int
    var streamID: Int
    var receivedAtMilliseconds: Int64
}

/// An answer of an Android look-alike, with what the request log and statistics need.
struct AndroidResponse {
    var status: Int
    var headers: [(String, String)] = []
    var body: [UInt8]
    var service: AndroidPushService
    /// Error code counted in `responsesByCode`; nil for success.
    var code: String?
    /// Project or app id, client email or id, when known.
    var target: String?
    var principal: String?
    var tokenCount = 0

    init(
        status: Int, json: String, service: AndroidPushService, code: String?, extraHeaders: [(String, String)] = []
    ) {
        self.status = status
        body = Array(json.utf8)
        headers = [("content-type", "application/json; charset=UTF-8"), ("content-length", String(body.count))]
        headers += extraHeaders
        self.service = service
        self.code = code
    }
}

/// Which endpoint a path names. Paths are matched without their query string.
enum AndroidEndpoint: Equatable {
    case googleToken
    case fcmSend(project: String)
    case huaweiToken
    case huaweiSend(appID: String)
    case honorToken
    case honorSend(appID: String)
    case xiaomiSend
    case oppoAuth
    case oppoUnicast
    case oppoUnicastBatch
    case vivoAuth
    case vivoSend
    case vivoSaveListPayload
    case vivoPushToList
    case harmonySend(projectID: String)

    var service: AndroidPushService {
        switch self {
        case .googleToken, .fcmSend: .fcm
        case .huaweiToken, .huaweiSend: .huawei
        case .honorToken, .honorSend: .honor
        case .xiaomiSend: .xiaomi
        case .oppoAuth, .oppoUnicast, .oppoUnicastBatch: .oppo
        case .vivoAuth, .vivoSend, .vivoSaveListPayload, .vivoPushToList: .vivo
        case .harmonySend: .harmony
        }
    }

    var isTokenEndpoint: Bool {
        switch self {
        case .googleToken, .huaweiToken, .honorToken, .oppoAuth, .vivoAuth: true
        default: false
        }
    }

    init?(path fullPath: String) {
        let path =
            fullPath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
            ?? fullPath
        switch path {
        case "/token": self = .googleToken
        case "/oauth2/v3/token": self = .huaweiToken
        case "/auth/token", "/auth/realms/developer/protocol/openid-connect/token": self = .honorToken
        case "/v3/message/regid", "/v2/message/regid": self = .xiaomiSend
        case "/server/v1/auth": self = .oppoAuth
        case "/server/v1/message/notification/unicast": self = .oppoUnicast
        case "/server/v1/message/notification/unicast_batch": self = .oppoUnicastBatch
        case "/message/auth": self = .vivoAuth
        case "/message/send": self = .vivoSend
        case "/message/saveListPayload": self = .vivoSaveListPayload
        case "/message/pushToList": self = .vivoPushToList
        default:
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            // "", "v1", "projects", P, "messages:send"
            if parts.count == 5, parts[1] == "v1", parts[2] == "projects", parts[4] == "messages:send",
                !parts[3].isEmpty
            {
                self = .fcmSend(project: String(parts[3]))
            } else if parts.count == 4, parts[1] == "v1", parts[3] == "messages:send", !parts[2].isEmpty {
                self = .huaweiSend(appID: String(parts[2]))
            } else if parts.count == 4, parts[1] == "v3", parts[3] == "messages:send", !parts[2].isEmpty {
                self = .harmonySend(projectID: String(parts[2]))
            } else if parts.count == 5, parts[1] == "api", parts[2] == "v1", parts[4] == "sendMessage",
                !parts[3].isEmpty
            {
                self = .honorSend(appID: String(parts[3]))
            } else {
                return nil
            }
        }
    }
}

/// The access tokens the token endpoints issued (FCM, Huawei, Honor, OPPO, vivo).
final class AccessTokenStore: Sendable {
    struct Issued: Sendable {
        var service: AndroidPushService
        /// client_email, client_id, or the OPPO/vivo AppKey.
        var principal: String
        /// Project or app the token may send for.
        var target: String
        /// Granted scopes (FCM only).
        var scopes: [String]
        var expiresAtMilliseconds: Int64
    }

    enum Lookup {
        case valid(Issued)
        case expired(Issued)
        case unknown
    }

    private let tokens = Mutex<[String: Issued]>([:])

    func issue(_ issued: Issued, prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let token = prefix + Base64URL.encode(random)
        tokens.withLock { tokens in
            // Expired tokens are kept a while (a client may still present one and must hear
            // "expired", not "unknown"); beyond this many, the expired ones go.
            if tokens.count >= 100_000 {
                let now = WallClock.milliseconds()
                tokens = tokens.filter { $0.value.expiresAtMilliseconds > now }
            }
            tokens[token] = issued
        }
        return token
    }

    func lookup(_ token: String, nowMilliseconds: Int64) -> Lookup {
        guard let issued = tokens.withLock({ $0[token] }) else { return .unknown }
        return nowMilliseconds < issued.expiresAtMilliseconds ? .valid(issued) : .expired(issued)
    }

    /// Every token issued so far expires now (the next use is answered as expired).
    func revokeAll() {
        let now = WallClock.milliseconds()
        tokens.withLock { tokens in
            for key in tokens.keys { tokens[key]!.expiresAtMilliseconds = min(tokens[key]!.expiresAtMilliseconds, now) }
        }
    }
}

/// Android counters and the bounded ring of accepted messages.
final class AndroidRecorder: Sendable {
    private struct State {
        var statistics = AndroidMockStatistics()
        var ring: [ReceivedAndroidMessage] = []
        var ringStart = 0
    }

    private let state = Mutex(State())
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var statistics: AndroidMockStatistics { state.withLock { $0.statistics } }

    func count(_ response: AndroidResponse, endpoint: AndroidEndpoint) {
        state.withLock { state in
            let service = endpoint.service
            state.statistics[service].responsesByStatus[response.status, default: 0] += 1
            if let code = response.code { state.statistics[service].responsesByCode[code, default: 0] += 1 }
            if endpoint.isTokenEndpoint {
                // OPPO and vivo refuse with HTTP 200 and a code.
                if response.status == 200 && response.code == nil {
                    state.statistics[service].tokenGrants += 1
                } else {
                    state.statistics[service].tokenRefusals += 1
                }
            } else {
                state.statistics[service].sendRequests += 1
            }
        }
    }

    func update(_ service: AndroidPushService, _ change: (inout AndroidServiceStatistics) -> Void) {
        state.withLock { change(&$0.statistics[service]) }
    }

    func record(_ message: ReceivedAndroidMessage) {
        let capacity = capacity
        guard capacity > 0 else { return }
        state.withLock { state in
            if state.ring.count < capacity {
                state.ring.append(message)
            } else {
                state.ring[state.ringStart] = message
                state.ringStart = (state.ringStart + 1) % capacity
            }
        }
    }

    func messages() -> [ReceivedAndroidMessage] {
        state.withLock { Array($0.ring[$0.ringStart...] + $0.ring[..<$0.ringStart]) }
    }

    func resetMessages() {
        state.withLock { state in
            state.ring.removeAll()
            state.ringStart = 0
        }
    }

    func resetStatistics() {
        state.withLock { $0.statistics = AndroidMockStatistics() }
    }
}

/// Android token-prefix faults, longest prefix first.
struct AndroidTokenPrefixFaults: Sendable {
    private let entries: [(prefix: String, fault: APNsMockConfiguration.AndroidTokenFault)]

    init(_ prefixes: [String: APNsMockConfiguration.AndroidTokenFault]) {
        entries = prefixes.map { (prefix: $0.key, fault: $0.value) }.sorted {
            $0.prefix.utf8.count > $1.prefix.utf8.count
        }
    }

    func fault(forToken token: String) -> APNsMockConfiguration.AndroidTokenFault? {
        guard !entries.isEmpty else { return nil }
        return entries.first { token.hasPrefix($0.prefix) }?.fault
    }
}

/// The FCM, Huawei, Honor, Xiaomi, OPPO and vivo look-alikes: token endpoints, send
/// endpoints, issued tokens, recording. Stateless per request apart from the token store and the recorder, so every
/// event loop calls it directly.
final class AndroidServices: Sendable {
    /// Android bodies are kept up to this size (1000 tokens of a few hundred bytes fit easily);
    /// larger ones are answered "too large" by the service concerned.
    static let bodyStorageLimit = 4 * 1024 * 1024

    struct TrustedAccount: Sendable {
        let account: APNsMockConfiguration.FCMServiceAccount
        let publicKey: PublicKey
    }

    /// Who the token endpoints trust, by `client_email` / `client_id`; growable at run time
    /// (`APNsMockServer.trust…`), read once per token request.
    struct Trust: Sendable {
        var accounts: [String: TrustedAccount] = [:]
        var huaweiClients: [String: APNsMockConfiguration.PushKitClient] = [:]
        var honorClients: [String: APNsMockConfiguration.PushKitClient] = [:]
        /// By AppSecret (the key of every Xiaomi request).
        var xiaomiApps: [String: APNsMockConfiguration.XiaomiApp] = [:]
        /// By AppKey.
        var oppoApps: [String: APNsMockConfiguration.OppoApp] = [:]
        /// By AppID.
        var vivoApps: [String: APNsMockConfiguration.VivoApp] = [:]
        /// HarmonyOS service accounts, by `key_id` (the JWT's `kid`).
        var harmonyAccounts: [String: TrustedHarmonyAccount] = [:]
    }

    struct TrustedHarmonyAccount: Sendable {
        let account: APNsMockConfiguration.HarmonyServiceAccount
        let publicKey: PublicKey
    }

    let trust: Mutex<Trust>
    let lifetimeSeconds: Int
    let tokens = AccessTokenStore()
    let recorder: AndroidRecorder
    /// vivo `saveListPayload` bodies, by `taskId`, for `pushToList`.
    let vivoTasks = VivoTaskStore()
    /// Where accepted pushes' receipts go (`APNsMockServer.sendReceipts(to:)`); nil: none sent.
    let receiptSink = Mutex<(any LookAlikeReceiptSink)?>(nil)

    init(configuration: APNsMockConfiguration) throws {
        var trust = Trust()
        for account in configuration.fcmServiceAccounts {
            trust.accounts[account.clientEmail] = TrustedAccount(
                account: account, publicKey: try PublicKey(pem: account.publicKeyPEM))
        }
        for client in configuration.huaweiClients where trust.huaweiClients[client.clientID] == nil {
            trust.huaweiClients[client.clientID] = client
        }
        for client in configuration.honorClients where trust.honorClients[client.clientID] == nil {
            trust.honorClients[client.clientID] = client
        }
        for app in configuration.xiaomiApps where trust.xiaomiApps[app.appSecret] == nil {
            trust.xiaomiApps[app.appSecret] = app
        }
        for app in configuration.oppoApps where trust.oppoApps[app.appKey] == nil { trust.oppoApps[app.appKey] = app }
        for app in configuration.vivoApps where trust.vivoApps[app.appID] == nil { trust.vivoApps[app.appID] = app }
        for account in configuration.harmonyServiceAccounts where trust.harmonyAccounts[account.keyID] == nil {
            trust.harmonyAccounts[account.keyID] = TrustedHarmonyAccount(
                account: account, publicKey: try PublicKey(pem: account.publicKeyPEM))
        }
        self.trust = Mutex(trust)
        lifetimeSeconds = max(0, configuration.accessTokenLifetimeSeconds)
        recorder = AndroidRecorder(capacity: configuration.recordedNotificationLimit)
    }

    /// Trusts one more service account (replacing one with the same `client_email`).
    func trust(_ account: APNsMockConfiguration.FCMServiceAccount) throws {
        let trusted = TrustedAccount(account: account, publicKey: try PublicKey(pem: account.publicKeyPEM))
        trust.withLock { $0.accounts[account.clientEmail] = trusted }
    }

    /// Trusts one more Huawei or Honor client (replacing one with the same `client_id`).
    func trust(_ client: APNsMockConfiguration.PushKitClient, service: AndroidPushService) {
        trust.withLock { trust in
            if service == .huawei { trust.huaweiClients[client.clientID] = client }
            if service == .honor { trust.honorClients[client.clientID] = client }
        }
    }

    /// Trusts one more Xiaomi app (replacing one with the same AppSecret).
    func trust(_ app: APNsMockConfiguration.XiaomiApp) {
        trust.withLock { $0.xiaomiApps[app.appSecret] = app }
    }

    /// Trusts one more OPPO app (replacing one with the same AppKey).
    func trust(_ app: APNsMockConfiguration.OppoApp) {
        trust.withLock { $0.oppoApps[app.appKey] = app }
    }

    /// Trusts one more vivo app (replacing one with the same AppID).
    func trust(_ app: APNsMockConfiguration.VivoApp) {
        trust.withLock { $0.vivoApps[app.appID] = app }
    }

    /// Trusts one more HarmonyOS service account (replacing one with the same `key_id`).
    func trust(_ account: APNsMockConfiguration.HarmonyServiceAccount) throws {
        let trusted = TrustedHarmonyAccount(account: account, publicKey: try PublicKey(pem: account.publicKeyPEM))
        trust.withLock { $0.harmonyAccounts[account.keyID] = trusted }
    }

    /// Answers one request for `endpoint` and counts it.
    func handle(_ request: AndroidRequest, endpoint: AndroidEndpoint, faults: AndroidTokenPrefixFaults)
        -> AndroidResponse
    {
        var response: AndroidResponse
        switch endpoint {
        case .googleToken: response = googleToken(request)
        case .fcmSend(let project): response = fcmSend(request, project: project, faults: faults)
        case .huaweiToken: response = pushKitToken(request, service: .huawei)
        case .huaweiSend(let appID): response = huaweiSend(request, appID: appID, faults: faults)
        case .honorToken: response = pushKitToken(request, service: .honor)
        case .honorSend(let appID): response = honorSend(request, appID: appID, faults: faults)
        case .xiaomiSend: response = xiaomiSend(request, faults: faults)
        case .oppoAuth: response = oppoAuth(request)
        case .oppoUnicast: response = oppoSend(request, batch: false, faults: faults)
        case .oppoUnicastBatch: response = oppoSend(request, batch: true, faults: faults)
        case .vivoAuth: response = vivoAuth(request)
        case .vivoSend: response = vivoSend(request, faults: faults)
        case .vivoSaveListPayload: response = vivoSaveListPayload(request)
        case .vivoPushToList: response = vivoPushToList(request, faults: faults)
        case .harmonySend(let projectID): response = harmonySend(request, projectID: projectID, faults: faults)
        }
        recorder.count(response, endpoint: endpoint)
        return response
    }

    /// Issues an access token for `lifetimeSeconds`.
    func issueToken(
        service: AndroidPushService, principal: String, target: String, scopes: [String] = [],
        nowMilliseconds: Int64
    ) -> String {
        let prefix: String
        switch service {
        case .fcm: prefix = "ya29.mock-"
        case .huawei: prefix = "CgB6e3x9"
        case .honor: prefix = "honor."
        case .xiaomi: prefix = "xiaomi."  // Xiaomi issues none; here for completeness
        case .oppo: prefix = "oppo."
        case .vivo: prefix = "vivo."
        case .harmony: prefix = "harmony."  // HarmonyOS issues none: the sender signs its own JWT
        }
        return tokens.issue(
            .init(
                service: service, principal: principal, target: target, scopes: scopes,
                expiresAtMilliseconds: nowMilliseconds + Int64(lifetimeSeconds) * 1000), prefix: prefix)
    }

    /// The bearer token of an `authorization` header ("Bearer x", any case of "bearer").
    static func bearerToken(_ authorization: String?) -> String? {
        guard let authorization, authorization.utf8.count > 7 else { return nil }
        let scheme = authorization.prefix(7)
        guard scheme.lowercased() == "bearer " else { return nil }
        let token = authorization.dropFirst(7).trimmingSpaces()
        return token.isEmpty ? nil : token
    }

    /// A fresh request id as Huawei answers them: 24 digits, milliseconds first.
    static func requestID(nowMilliseconds: Int64) -> String {
        var generator = SystemRandomNumberGenerator()
        let tail = (0..<11).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
        return String(nowMilliseconds) + tail
    }

    /// Device tokens are opaque, but no real one is empty, longer than 4 KB or holds anything
    /// outside URL-safe base64 and `:` `.` `-` (spaces are the classic copy-paste bug).
    static func isPlausibleDeviceToken(_ token: String) -> Bool {
        guard !token.isEmpty, token.utf8.count <= 4096 else { return false }
        return token.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"),
                UInt8(ascii: "."), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                true
            default: false
            }
        }
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        var slice = self[...]
        while slice.first == " " { slice = slice.dropFirst() }
        while slice.last == " " { slice = slice.dropLast() }
        return String(slice)
    }
}
