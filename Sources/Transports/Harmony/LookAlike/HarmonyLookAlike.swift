import Foundation
internal import TuisongCrypto

/// HarmonyOS Push Kit, scenario API v3: `POST /v3/{projectId}/messages:send` with a service
/// account's PS256 JWT as the bearer token (no token endpoint), a `push-type` header, and up to
/// 1,000 tokens a request, answering as `docs/reference/harmony.md` says (and, where Huawei's
/// pages are silent, as it says the look-alike assumes).
extension AndroidServices {
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

    func authenticateHarmony(_ request: AndroidRequest, projectID: String) -> HarmonyAuthentication {
        guard let bearer = Self.bearerToken(request.authorization) else { return .refused("Missing JWT") }
        guard let (headerBytes, claimBytes) = try? JWT.decodeParts(bearer),
            let header = MockJSON.parse(headerBytes), let claims = MockJSON.parse(claimBytes)
        else { return .refused("Illegal JWT") }
        guard header["alg"]?.stringValue == "PS256" else { return .refused("JWT alg must be PS256") }
        guard header["typ"]?.stringValue == "JWT" else { return .refused("JWT typ must be JWT") }
        guard let kid = header["kid"]?.stringValue,
            let account = trust.withLock({ $0.harmonyAccounts[kid] })
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

    func harmonySend(_ request: AndroidRequest, projectID: String, faults: AndroidTokenPrefixFaults)
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
        guard let typeText = request.pushType, let pushType = Int(typeText), Self.harmonyPushTypes.contains(pushType)
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
                receivedAtMilliseconds: request.receivedAtMilliseconds, harmonyPushType: pushType,
                harmonyTestMessage: testMessage ?? false))
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
            guard AndroidServices.harmonyCategories.contains(category) else {
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
