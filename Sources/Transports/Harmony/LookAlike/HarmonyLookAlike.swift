import Foundation
import Synchronization
import TuisongCore
internal import TuisongCrypto
import TuisongLookAlikeKit

extension AndroidPushService {
    /// Huawei Push Kit for HarmonyOS NEXT (scenario API v3, service-account JWT).
    public static let harmony = AndroidPushService("harmony")
}

/// The look-alike of HarmonyOS Push Kit, scenario API v3: `POST /v3/{projectId}/messages:send`
/// with a service account's PS256 JWT as the bearer token (no token endpoint), a `push-type`
/// header, and up to 1,000 tokens a request, answering as `docs/reference/harmony.md` says (and,
/// where Huawei's pages are silent, as it says the look-alike assumes). Token faults as its
/// batch answers them (`illegalTokens`; the request-level kinds fail the request). Receipts:
/// V2 `statuses`, signed as AppGallery Connect signs them, to the app's receipt configuration.
package final class HarmonyLookAlike: LookAlikeService {
    package static let declaration = LookAlikeDeclaration(
        service: .harmony, summary: "HarmonyOS Push Kit (POST /v3/<projectId>/messages:send)",
        configurationKeys: [("harmonyServiceAccounts", #"{"projectID","keyID","subAccount","publicKeyPEM"}"#)],
        setupKeys: ["harmonyServiceAccount", "harmonyPrivateKeyPEM"],
        makeSetup: { setup in
            // Project, key id and sub-account as Huawei's API Console issues them (digits, a
            // 32-hex key id), signed with the process's RSA key.
            let key = try LookAlikeLocalSetup.sharedRSAKey()
            try setup.setLookAlikeMaterial(
                "harmonyServiceAccount",
                LookAlikeConfiguration.HarmonyServiceAccount(
                    projectID: "10" + HarmonyLookAlike.randomString(count: 16, alphabet: "0123456789"),
                    keyID: HarmonyLookAlike.randomString(count: 32, alphabet: "0123456789abcdef"),
                    subAccount: "1" + HarmonyLookAlike.randomString(count: 9, alphabet: "0123456789"),
                    publicKeyPEM: try key.publicKey.pem()))
            try setup.setLookAlikeMaterial("harmonyPrivateKeyPEM", try key.pkcs8PEM())
        },
        configure: { configuration, setup in
            configuration.harmonyServiceAccounts.append(setup.harmonyServiceAccount)
        },
        start: { host, configuration in try HarmonyLookAlike(host: host, configuration: configuration) },
        fallbackCredential: { setup, _ in
            LookAlikeCredential(
                vendorAppID: setup.harmonyServiceAccount.projectID, clientID: setup.harmonyServiceAccount.subAccount,
                secret: setup.harmonyServiceAccountJSON())
        },
        banner: { setup, base, filePrefix in
            let path = filePrefix + "harmony-service-account.json"
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(setup.harmonyServiceAccountJSON()),
                    attributes: [.posixPermissions: 0o600])
            else { throw LocalLookAlikeError("cannot write \(path)") }
            let account = setup.harmonyServiceAccount
            return [
                "send_url": "\(base)/v3/\(account.projectID)/messages:send", "service_account_file": path,
                "project_id": account.projectID, "key_id": account.keyID, "sub_account": account.subAccount,
            ]
        })

    struct TrustedAccount: Sendable {
        let account: LookAlikeConfiguration.HarmonyServiceAccount
        let publicKey: PublicKey
    }

    /// The message body size limit (4096 bytes), tokens not counted.
    static let pushKitPayloadLimit = 4096

    package let service = AndroidPushService.harmony
    package let host: LookAlikeHost
    /// The service accounts whose JWTs it accepts, by `key_id` (the JWT's `kid`); growable at run time.
    private let accounts: Mutex<[String: TrustedAccount]>

    init(host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        self.host = host
        var accounts: [String: TrustedAccount] = [:]
        for account in try configuration.lookAlikeSetting(
            "harmonyServiceAccounts", as: [LookAlikeConfiguration.HarmonyServiceAccount].self) ?? []
        where accounts[account.keyID] == nil {
            accounts[account.keyID] = TrustedAccount(
                account: account, publicKey: try PublicKey(pem: account.publicKeyPEM))
        }
        self.accounts = Mutex(accounts)
    }

    /// Trusts one more service account (replacing one with the same `key_id`).
    func trust(_ account: LookAlikeConfiguration.HarmonyServiceAccount) throws {
        let trusted = TrustedAccount(account: account, publicKey: try PublicKey(pem: account.publicKeyPEM))
        accounts.withLock { $0[account.keyID] = trusted }
    }

    /// A stored HarmonyOS credential is the service-account key file: its public key is trusted.
    package func trust(vendorAppID: String, clientID: String, secret: [UInt8]) throws {
        guard let object = try JSONSerialization.jsonObject(with: Data(secret)) as? [String: Any],
            let project = object["project_id"] as? String, let keyID = object["key_id"] as? String,
            let pem = object["private_key"] as? String, let subAccount = object["sub_account"] as? String
        else {
            throw LocalLookAlikeError(
                "the HarmonyOS service account lacks project_id, key_id, private_key or sub_account")
        }
        try trust(
            .init(
                projectID: project, keyID: keyID, subAccount: subAccount,
                publicKeyPEM: try PrivateKey(pem: pem).publicKey.pem()))
    }

    package func answer(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse? {
        // "", "v3", projectID, "messages:send"
        let parts = request.pathWithoutQuery.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[1] == "v3", parts[3] == "messages:send", !parts[2].isEmpty else { return nil }
        return harmonySend(request, projectID: String(parts[2]), faults: faults)
    }

    // MARK: Receipts

    package func receipts(for message: ReceivedAndroidMessage) -> LookAlikeReceiptPlan? {
        guard !message.tokens.isEmpty, let body = MockJSON.parse(message.body) else { return nil }
        // HarmonyOS V2: `pushOptions.biTag` back in each status, `deliveryStatus {result,
        // timestamp}`; up to 100 a POST.
        guard let tag = body["pushOptions"]?["biTag"]?.stringValue, !tag.isEmpty else { return nil }
        return .configured(
            tag: tag,
            make: { configuration in
                let status: [String: JSONValue] = [
                    "pushType": .int(Int64(message.harmonyPushType ?? 0)), "appPackageName": "tuisong.local",
                    "biTag": .string(tag), "requestId": .string(message.messageID),
                    "deliveryStatus": ["result": 0, "timestamp": .int(message.receivedAtMilliseconds)],
                ]
                return LookAlikeReceipts.chunks(message.tokens, of: 100).map { tokens in
                    LookAlikeReceipts.signedPost(
                        LookAlikeReceipts.statusesBody(tokens, template: status), configuration,
                        header: "X-HUAWEI-CALLBACK-ID")
                }
            }
        )
    }

    /// The `aud` of every service-account JWT (Huawei: "fixed").
    static let harmonyAudience = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    /// How far a JWT's `iat` may lie in the future (clock skew), seconds.
    static let harmonyClockSkewSeconds: Int64 = 300
    /// The scenario types (`push-type`) Huawei lists: alert, widget, notification extension,
    /// background, live view, in-app call.
    static let harmonyPushTypes: Set<Int> = [0, 1, 2, 6, 7, 10]
    /// The most tokens a test message (`pushOptions.testMessage`) may carry.
    static let harmonyTestMessageTokens = 10
    /// `notification.category` values of Huawei's server demo (`Notification.Category`).
    static let harmonyCategories: Set<String> = [
        "IM", "VOIP", "SUBSCRIPTION", "TRAVEL", "HEALTH", "WORK", "ACCOUNT", "EXPRESS", "FINANCE", "DEVICE_REMINDER",
        "SYSTEM_REMINDER", "MAIL", "CUSTOMER_SERVICE", "MARKETING", "NEWS", "CONTENT_RECOMMENDATION",
        "SOCIAL_DYNAMICS", "PROMO", "PLAY_VOICE",
    ]

    /// How the bearer JWT of a v3 send stands.
    enum HarmonyAuthentication {
        case accepted(subAccount: String)
        /// Missing, malformed, unknown `kid`, bad signature, wrong `iss`/`aud`, another
        /// project's key: 80200001.
        case refused(String)
        /// Past its `exp`: 80200005 ("Jwt token expired").
        case expired
    }

    func authenticateHarmony(_ request: LookAlikeRequest, projectID: String) -> HarmonyAuthentication {
        guard let bearer = Self.bearerToken(request.authorization) else { return .refused("Missing JWT") }
        guard let (headerBytes, claimBytes) = try? JWT.decodeParts(bearer),
            let header = MockJSON.parse(headerBytes), let claims = MockJSON.parse(claimBytes)
        else { return .refused("Illegal JWT") }
        guard header["alg"]?.stringValue == "PS256" else { return .refused("JWT alg must be PS256") }
        guard header["typ"]?.stringValue == "JWT" else { return .refused("JWT typ must be JWT") }
        guard let kid = header["kid"]?.stringValue,
            let account = accounts.withLock({ $0[kid] })
        else { return .refused("JWT kid not found") }
        guard (try? JWT.verifyPS256(bearer, publicKey: account.publicKey)) != nil else {
            return .refused("JWT signature verification failed")
        }
        guard claims["iss"]?.stringValue == account.account.subAccount else { return .refused("JWT iss mismatch") }
        guard claims["aud"]?.stringValue == Self.harmonyAudience else { return .refused("JWT aud mismatch") }
        guard let iat = claims["iat"]?.integerValue, let exp = claims["exp"]?.integerValue, exp > iat else {
            return .refused("JWT iat and exp are required")
        }
        let now = request.receivedAtMilliseconds / 1000
        guard Int64(iat) <= now + Self.harmonyClockSkewSeconds else { return .refused("JWT iat is in the future") }
        guard Int64(exp) > now else { return .expired }
        guard account.account.projectID == projectID else { return .refused("JWT project mismatch") }
        return .accepted(subAccount: account.account.subAccount)
    }

    // MARK: POST /v3/{projectId}/messages:send

    func harmonySend(_ request: LookAlikeRequest, projectID: String, faults: AndroidTokenPrefixFaults)
        -> AndroidResponse
    {
        let requestID = Self.requestID(nowMilliseconds: request.receivedAtMilliseconds)
        func answer(_ status: Int, _ code: String, _ message: String, extra: [(String, String)] = [])
            -> AndroidResponse
        {
            var response = AndroidResponse(
                status: status,
                json: #"{"code":"\#(code)","msg":\#(RequestLogLine.quoted(message)),"requestId":"\#(requestID)"}"#,
                service: .harmony, code: code == "80000000" ? nil : code, extraHeaders: extra)
            response.target = projectID
            return response
        }
        func refuse(
            _ status: Int, _ code: String, _ message: String, tokens: Int = 0, extra: [(String, String)] = []
        ) -> AndroidResponse {
            recorder.update(.harmony) {
                $0.requestsRefused += 1
                $0.messagesRefused += tokens
            }
            return answer(status, code, message, extra: extra)
        }
        guard request.method == "POST" else { return refuse(405, "80100001", "Method not allowed") }
        let subAccount: String
        switch authenticateHarmony(request, projectID: projectID) {
        case .accepted(let accepted): subAccount = accepted
        case .refused(let why):
            recorder.update(.harmony) { $0.authenticationFailures += 1 }
            return refuse(401, "80200001", "Authentication error: \(why)")
        case .expired:
            recorder.update(.harmony) { $0.authenticationFailures += 1 }
            return refuse(401, "80200005", "Jwt token expired")
        }
        guard let typeText = request.headers["push-type"], let pushType = Int(typeText),
            Self.harmonyPushTypes.contains(pushType)
        else { return refuse(400, "80100001", "push-type header is missing or not one of 0, 1, 2, 6, 7, 10") }
        guard request.bodyLength <= Self.bodyStorageLimit else {
            return refuse(400, "80300008", "The message body size exceeds the default value")
        }
        guard let body = MockJSON.parse(request.body), body.members != nil else {
            return refuse(400, "80100003", "Illegal message structure: the body is not a JSON object")
        }
        guard let target = body["target"], target.members != nil, let tokenMember = target["token"],
            let tokens = Self.tokenList(tokenMember), !tokens.isEmpty, tokens.count <= Self.maximumBatchTokens
        else {
            return refuse(400, "80300010", "The number of tokens in the message body does not meet the default value")
        }
        if let failure = HarmonySchema.failure(of: body, pushType: pushType) {
            return refuse(400, failure.code, failure.message, tokens: tokens.count)
        }
        if Self.payloadBytes(bodyLength: request.bodyLength, tokens: tokens) > Self.pushKitPayloadLimit {
            return refuse(400, "80300008", "The message body size exceeds the default value", tokens: tokens.count)
        }
        let testMessage = body["pushOptions"]?["testMessage"].map { if case .bool(true) = $0 { true } else { false } }
        // Huawei: a test message carries at most 10 tokens (the code is assumed: 80300010, the
        // token count's; docs/reference/harmony.md §3).
        if testMessage == true, tokens.count > Self.harmonyTestMessageTokens {
            return refuse(
                400, "80300010", "A test message carries at most 10 tokens", tokens: tokens.count)
        }
        let outcome = Self.sortBatch(tokens, faults: faults)
        if let fault = outcome.requestFault {
            if fault.kind == .quotaExceeded {
                return refuse(
                    503, "80300011", "Flow control: the sending rate exceeds the limit", tokens: tokens.count,
                    extra: [("retry-after", String(fault.retryAfterSeconds ?? 1))])
            }
            return refuse(500, "81000001", "System internal error", tokens: tokens.count)
        }
        // Malformed tokens are `tokenFormatError`; faulted ones (`unregistered-`, `invalid-`) are
        // tokens of no device of this project, `noRight`.
        let malformed = Set(tokens.filter { !Self.isPlausibleDeviceToken($0) })
        func illegalTokens() -> String {
            var groups: [String] = []
            let format = outcome.illegal.filter { malformed.contains($0) }
            let noRight = outcome.illegal.filter { !malformed.contains($0) }
            func list(_ tokens: [String]) -> String {
                "[" + tokens.map(RequestLogLine.quoted).joined(separator: ",") + "]"
            }
            if !format.isEmpty { groups.append(#""tokenFormatError":"# + list(format)) }
            if !noRight.isEmpty { groups.append(#""noRight":"# + list(noRight)) }
            return "{" + groups.joined(separator: ",") + "}"
        }
        if outcome.accepted.isEmpty {
            let detail = #"{"failure":\#(outcome.illegal.count),"illegalTokens":\#(illegalTokens())}"#
            return refuse(400, "80300007", detail, tokens: tokens.count)
        }
        recorder.update(.harmony) {
            $0.messagesRefused += outcome.illegal.count
            $0.messagesDelivered += outcome.accepted.count
        }
        var response: AndroidResponse
        if outcome.illegal.isEmpty {
            response = answer(200, "80000000", "Success")
        } else {
            let detail =
                #"{"success":\#(outcome.accepted.count),"failure":\#(outcome.illegal.count),"illegalTokens":\#(illegalTokens())}"#
            response = answer(200, "80100000", detail)
        }
        response.principal = subAccount
        response.tokenCount = tokens.count
        acceptedPush(
            ReceivedAndroidMessage(
                service: .harmony, target: projectID, principal: subAccount, tokens: outcome.accepted,
                refusedTokens: outcome.illegal, messageID: requestID, body: request.body,
                connectionID: request.connectionID, streamID: request.streamID, timestampHeader: nil,
                receivedAtMilliseconds: request.receivedAtMilliseconds,
                details: ["push-type": String(pushType), "testMessage": String(testMessage ?? false)]))
        return response
    }
}

/// The v3 body's checks (Huawei's "push scenariozed api request struct" and its server demo's
/// required fields): `payload` by push-type, `pushOptions`. Unknown names are ignored.
enum HarmonySchema {
    struct Failure {
        var code: String
        var message: String
    }

    static func failure(of body: MockJSON, pushType: Int) -> Failure? {
        func structure(_ text: String) -> Failure { Failure(code: "80100003", message: "Illegal payload, \(text)") }
        func parameter(_ text: String) -> Failure { Failure(code: "80100001", message: text) }
        func notString(_ object: MockJSON, _ key: String) -> Bool {
            object[key].map { !$0.isNull && $0.stringValue == nil } ?? false
        }
        func text(_ object: MockJSON?, _ key: String) -> String? {
            guard let value = object?[key]?.stringValue, !value.isEmpty else { return nil }
            return value
        }
        if let options = body["pushOptions"], !options.isNull {
            guard options.members != nil else { return structure("pushOptions must be an object") }
            if let test = options["testMessage"], !test.isNull {
                guard case .bool = test else { return structure("pushOptions.testMessage must be a boolean") }
            }
            if let ttl = options["ttl"], !ttl.isNull {
                guard case .number = ttl, let seconds = ttl.integerValue, (0...1_296_000).contains(seconds) else {
                    return parameter("pushOptions.ttl must be an integer of seconds within 0…1296000")
                }
            }
            for key in ["biTag", "receiptId"] where notString(options, key) {
                return structure("pushOptions.\(key) must be a string")
            }
        }
        guard let payload = body["payload"], payload.members != nil else {
            return structure("payload must be an object")
        }
        switch pushType {
        case 0:
            let notification = payload["notification"].flatMap { $0.isNull ? nil : $0 }
            let badge = payload["badge"].flatMap { $0.isNull ? nil : $0 }
            if notification == nil {
                // A badge refresh: push-type 0 with only `badge`.
                guard let badge else { return structure("notification is required for push-type 0") }
                return badgeFailure(badge, path: "badge")
            }
            guard let notification, notification.members != nil else {
                return structure("notification must be an object")
            }
            guard let category = text(notification, "category") else {
                return parameter("notification.category is required")
            }
            guard HarmonyLookAlike.harmonyCategories.contains(category) else {
                return parameter("notification.category \(category) is not a valid category")
            }
            guard text(notification, "title") != nil else { return parameter("notification.title is required") }
            guard text(notification, "body") != nil else { return parameter("notification.body is required") }
            for key in ["image", "profileId"] where notString(notification, key) {
                return structure("notification.\(key) must be a string")
            }
            if let image = text(notification, "image"), !image.hasPrefix("https://") {
                return parameter("notification.image must start with https")
            }
            if let notifyID = notification["notifyId"], !notifyID.isNull {
                // Huawei: an Integer, -1 for "one per message" (docs/reference/harmony.md §3).
                guard case .number = notifyID, let id = notifyID.integerValue else {
                    return structure("notification.notifyId must be an integer")
                }
                guard (-1...Int(Int32.max)).contains(id) else {
                    return parameter("notification.notifyId must be -1 or within 0…2147483647")
                }
            }
            if let style = notification["style"], !style.isNull {
                guard let value = style.integerValue, [0, 1, 3].contains(value) else {
                    return parameter("notification.style must be 0, 1 or 3")
                }
            }
            guard let click = notification["clickAction"], click.members != nil else {
                return parameter("notification.clickAction is required")
            }
            guard let actionType = click["actionType"]?.integerValue, actionType == 0 || actionType == 1 else {
                return parameter("clickAction.actionType must be 0 (open the app) or 1 (open a page)")
            }
            if actionType == 1 && text(click, "action") == nil && text(click, "uri") == nil {
                return parameter("clickAction.action or clickAction.uri is required when actionType = 1")
            }
            if let data = click["data"], !data.isNull, data.members == nil {
                return structure("clickAction.data must be an object")
            }
            if let badge = notification["badge"], !badge.isNull {
                return badgeFailure(badge, path: "notification.badge")
            }
            return nil
        case 6:
            guard let extra = payload["extraData"], let value = extra.stringValue, !value.isEmpty else {
                return parameter("payload.extraData (a string) is required for push-type 6")
            }
            if payload["notification"].map({ !$0.isNull }) ?? false {
                return structure("a background message (push-type 6) carries no notification")
            }
            return nil
        default:
            // Widget, notification extension, live view and call messages: the look-alike
            // accepts any payload object (Tuisong sends none of them).
            return nil
        }
    }

    /// Huawei's documented badge checks (the response page's example message).
    static func badgeFailure(_ badge: MockJSON, path: String) -> Failure? {
        guard badge.members != nil else {
            return Failure(code: "80100003", message: "Illegal payload, \(path) must be an object")
        }
        let add = badge["addNum"].flatMap { $0.isNull ? nil : $0 }
        let set = badge["setNum"].flatMap { $0.isNull ? nil : $0 }
        if add == nil && set == nil {
            return Failure(code: "80100003", message: "Illegal payload, badge needs addNum or setNum")
        }
        if let add, !((1...99).contains(add.integerValue ?? 0)) {
            return Failure(code: "80100003", message: "Illegal payload, badge addNum value ranges from 1 to 99")
        }
        if let set, !((0...99).contains(set.integerValue ?? -1)) {
            return Failure(code: "80100003", message: "Illegal payload, badge setNum value ranges from 0 to 99")
        }
        return nil
    }
}

extension LookAlikeConfiguration {
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

    /// HarmonyOS Push Kit service accounts (`POST /v3/{projectID}/messages:send` with a PS256
    /// JWT signed by the account's key).
    public var harmonyServiceAccounts: [HarmonyServiceAccount] {
        get { lookAlikeList("harmonyServiceAccounts", of: HarmonyServiceAccount.self) }
        set { setLookAlikeList("harmonyServiceAccounts", newValue) }
    }
}

extension LookAlikeLocalSetup {
    /// A HarmonyOS Push Kit service account the v3 look-alike trusts (its public half);
    /// `harmonyServiceAccountJSON()` is the key file a client loads.
    public var harmonyServiceAccount: LookAlikeConfiguration.HarmonyServiceAccount {
        lookAlikeMaterial("harmonyServiceAccount", as: LookAlikeConfiguration.HarmonyServiceAccount.self)
    }
    /// The account's RSA private key (PKCS#8 PEM, `private_key` of the key file).
    public var harmonyPrivateKeyPEM: String { lookAlikeMaterial("harmonyPrivateKeyPEM", as: String.self) }

    /// The HarmonyOS service-account key file as Huawei's API Console downloads it.
    public func harmonyServiceAccountJSON() -> [UInt8] {
        let fields: [(String, String)] = [
            ("project_id", harmonyServiceAccount.projectID),
            ("key_id", harmonyServiceAccount.keyID),
            ("private_key", harmonyPrivateKeyPEM),
            ("sub_account", harmonyServiceAccount.subAccount),
            ("auth_uri", "https://oauth-login.cloud.huawei.com/oauth2/v3/authorize"),
            ("token_uri", "https://oauth-login.cloud.huawei.com/oauth2/v3/token"),
            ("auth_provider_cert_uri", "https://oauth-login.cloud.huawei.com/oauth2/v3/certs"),
            ("client_cert_uri", "https://oauth-login.cloud.huawei.com/oauth2/v3/x509?client_id="),
        ]
        let lines = fields.map { "    \(RequestLogLine.quoted($0.0)): \(RequestLogLine.quoted($0.1))" }
        return Array(("{\n" + lines.joined(separator: ",\n") + "\n}\n").utf8)
    }
}

extension LookAlikeServer {
    /// Accepts HarmonyOS Push Kit JWTs of this service account from now on. Throws when its
    /// public key PEM does not parse.
    public func trustHarmonyServiceAccount(_ account: LookAlikeConfiguration.HarmonyServiceAccount) throws {
        try (lookAlike(.harmony) as? HarmonyLookAlike)?.trust(account)
    }
}

extension ReceivedAndroidMessage {
    /// The request's `push-type` header (0 alert, 6 background, …); nil for other services.
    public var harmonyPushType: Int? { details["push-type"].flatMap { Int($0) } }
    /// `pushOptions.testMessage` as sent.
    public var harmonyTestMessage: Bool { details["testMessage"] == "true" }
}

extension AndroidMockStatistics {
    public var harmony: AndroidServiceStatistics {
        get { self[.harmony] }
        set { self[.harmony] = newValue }
    }
}
