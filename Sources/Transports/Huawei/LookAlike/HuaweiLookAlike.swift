import Foundation
import Synchronization
import TuisongCore
import TuisongLookAlikeKit

extension AndroidPushService {
    /// Huawei Push Kit (HMS Core) REST v1.
    public static let huawei = AndroidPushService("huawei")
}

/// The look-alike of Huawei Push Kit (REST v1): a client-credentials token endpoint and batch
/// sends of up to 1000 tokens, answering as `docs/reference/android.md` §3 says (and, where the
/// sources are silent, as it says the look-alike assumes). Token faults: `unregistered` and
/// `invalidArgument` put the token in `illegal_tokens`; `quotaExceeded` is HTTP 503 (flow
/// control); `unavailable` and `internal` are HTTP 500 `81000001`. Receipts: V1 `statuses`
/// signed with `X-HUAWEI-CALLBACK-ID`, to the app's receipt configuration.
package final class HuaweiLookAlike: LookAlikeService {
    package static let declaration = LookAlikeDeclaration(
        service: .huawei, summary: "Huawei Push Kit (POST /oauth2/v3/token; POST /v1/<appId>/messages:send)",
        configurationKeys: [("huaweiClients", #"{"clientID","clientSecret","appID"}"#)], setupKeys: ["huaweiClient"],
        makeSetup: { setup in
            let id = "10" + HuaweiLookAlike.randomString(count: 7, alphabet: "0123456789")
            try setup.setLookAlikeMaterial(
                "huaweiClient",
                LookAlikeConfiguration.PushKitClient(
                    clientID: id, clientSecret: HuaweiLookAlike.randomString(count: 64, alphabet: "0123456789abcdef"),
                    appID: id))
        },
        configure: { configuration, setup in configuration.huaweiClients.append(setup.huaweiClient) },
        start: { host, configuration in try HuaweiLookAlike(host: host, configuration: configuration) },
        fallbackCredential: { setup, _ in
            let client = setup.huaweiClient
            return LookAlikeCredential(
                vendorAppID: client.appID, clientID: client.clientID, secret: Array(client.clientSecret.utf8))
        },
        banner: { setup, base, _ in
            let client = setup.huaweiClient
            return [
                "token_url": base + "/oauth2/v3/token", "send_url": "\(base)/v1/\(client.appID)/messages:send",
                "client_id": client.clientID, "client_secret": client.clientSecret, "app_id": client.appID,
            ]
        })

    /// "The message body size exceeds the default value (4096 bytes)", tokens not counted.
    static let pushKitPayloadLimit = 4096

    package let service = AndroidPushService.huawei
    package let host: LookAlikeHost
    /// The OAuth clients it grants tokens to, by `client_id`; growable at run time.
    private let clients: Mutex<[String: LookAlikeConfiguration.PushKitClient]>

    init(host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        self.host = host
        var clients: [String: LookAlikeConfiguration.PushKitClient] = [:]
        for client in try configuration.lookAlikeSetting(
            "huaweiClients", as: [LookAlikeConfiguration.PushKitClient].self)
            ?? [] where clients[client.clientID] == nil
        {
            clients[client.clientID] = client
        }
        self.clients = Mutex(clients)
    }

    /// Grants tokens to this client from now on (replacing one with the same `client_id`).
    func trust(_ client: LookAlikeConfiguration.PushKitClient) {
        clients.withLock { $0[client.clientID] = client }
    }

    package func trust(vendorAppID: String, clientID: String, secret: [UInt8]) {
        trust(.init(clientID: clientID, clientSecret: String(decoding: secret, as: UTF8.self), appID: vendorAppID))
    }

    package func answer(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse? {
        let path = request.pathWithoutQuery
        if path == "/oauth2/v3/token" {
            var response = token(request)
            response.isSignIn = true
            return response
        }
        // "", "v1", appID, "messages:send"
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[1] == "v1", parts[3] == "messages:send", !parts[2].isEmpty else { return nil }
        return huaweiSend(request, appID: String(parts[2]), faults: faults)
    }

    // MARK: POST /oauth2/v3/token

    func token(_ request: LookAlikeRequest) -> AndroidResponse {
        func refusal(_ subError: Int, _ description: String, status: Int = 400) -> AndroidResponse {
            AndroidResponse(
                status: status,
                json:
                    #"{"error":1101,"sub_error":\#(subError),"error_description":\#(RequestLogLine.quoted(description))}"#,
                service: .huawei, code: "1101/\(subError)")
        }
        guard request.method == "POST" else { return refusal(20001, "unsupported http method", status: 405) }
        guard let form = FormBody.parse(request.body), form["grant_type"] == "client_credentials" else {
            return refusal(20001, "invalid grant_type")
        }
        let clientID = form["client_id"] ?? ""
        let secret = form["client_secret"] ?? ""
        guard !clientID.isEmpty, clientID.utf8.count <= 64, clientID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return refusal(20002, "invalid client_id") }
        guard !secret.isEmpty else { return refusal(20171, "client_secret is empty") }
        guard let client = clients.withLock({ $0[clientID] }) else { return refusal(20003, "client_id not found") }
        guard client.clientSecret == secret else { return refusal(12304, "invalid client_secret") }
        let token = issueToken(
            prefix: "CgB6e3x9", principal: clientID, target: client.appID,
            nowMilliseconds: request.receivedAtMilliseconds)
        var response = AndroidResponse(
            status: 200,
            json:
                #"{"access_token":\#(RequestLogLine.quoted(token)),"expires_in":\#(lifetimeSeconds),"token_type":"Bearer"}"#,
            service: .huawei, code: nil)
        response.principal = clientID
        response.target = client.appID
        return response
    }

    // MARK: POST /v1/{appId}/messages:send (Huawei)

    func huaweiSend(_ request: LookAlikeRequest, appID: String, faults: AndroidTokenPrefixFaults) -> AndroidResponse {
        let requestID = Self.requestID(nowMilliseconds: request.receivedAtMilliseconds)
        func answer(_ status: Int, _ code: String, _ message: String, extra: [(String, String)] = []) -> AndroidResponse
        {
            var response = AndroidResponse(
                status: status,
                json:
                    #"{"code":"\#(code)","msg":\#(RequestLogLine.quoted(message)),"requestId":"\#(requestID)"}"#,
                service: .huawei, code: code == "80000000" ? nil : code, extraHeaders: extra)
            response.target = appID
            return response
        }
        func refuse(_ status: Int, _ code: String, _ message: String, tokens: Int = 0) -> AndroidResponse {
            recorder.update(.huawei) {
                $0.requestsRefused += 1
                $0.messagesRefused += tokens
            }
            return answer(status, code, message)
        }
        guard request.method == "POST" else { return refuse(405, "80100001", "Method not allowed") }
        let issued: AccessTokenStore.Issued
        switch authenticateBearer(request, appID: appID) {
        case .accepted(let accepted): issued = accepted
        case .refused:
            recorder.update(.huawei) { $0.authenticationFailures += 1 }
            return refuse(401, "80200001", "Oauth authentication error")
        case .expired:
            recorder.update(.huawei) { $0.authenticationFailures += 1 }
            return refuse(401, "80200003", "Oauth Token expired.")
        }
        guard request.bodyLength <= Self.bodyStorageLimit else {
            return refuse(400, "80300008", "The message body size exceeds the default value")
        }
        guard let body = MockJSON.parse(request.body), body.members != nil else {
            return refuse(400, "80100003", "Illegal message structure: the body is not a JSON object")
        }
        var validateOnly = false
        if let flag = body["validate_only"], !flag.isNull {
            guard case .bool(let value) = flag else {
                return refuse(400, "80100003", "Illegal message structure: validate_only must be a boolean")
            }
            validateOnly = value
        }
        guard let message = body["message"], message.members != nil else {
            return refuse(400, "80300010", "The number of tokens in the message body does not meet the default value")
        }
        let topic = message["topic"]?.stringValue
        let condition = message["condition"]?.stringValue
        let tokenMember = message["token"]
        let tokens: [String]
        if let tokenMember, !tokenMember.isNull {
            guard let list = Self.tokenList(tokenMember) else {
                return refuse(400, "80100003", "Illegal message structure: token must be an array of strings")
            }
            tokens = list
        } else {
            tokens = []
        }
        let targets = (tokens.isEmpty ? 0 : 1) + (topic == nil ? 0 : 1) + (condition == nil ? 0 : 1)
        if targets > 1 {
            return refuse(
                400, "80100001", "Exactly one of token, topic or condition must be specified", tokens: tokens.count)
        }
        if targets == 0 || tokens.count > Self.maximumBatchTokens {
            return refuse(
                400, "80300010", "The number of tokens in the message body does not meet the default value",
                tokens: tokens.count)
        }
        if let failure = HuaweiSchema.failure(of: message) {
            return refuse(400, failure.code, failure.message, tokens: tokens.count)
        }
        if Self.payloadBytes(bodyLength: request.bodyLength, tokens: tokens) > Self.pushKitPayloadLimit {
            return refuse(400, "80300008", "The message body size exceeds the default value", tokens: tokens.count)
        }
        let outcome = Self.sortBatch(tokens, faults: faults)
        if let fault = outcome.requestFault {
            if fault.kind == .quotaExceeded {
                return refuse(503, "81000001", "Traffic control", tokens: tokens.count)
            }
            return refuse(500, "81000001", "System internal error", tokens: tokens.count)
        }
        if !tokens.isEmpty && outcome.accepted.isEmpty {
            return refuse(400, "80300007", "All the tokens are invalid", tokens: tokens.count)
        }
        recorder.update(.huawei) {
            $0.messagesRefused += outcome.illegal.count
            if !validateOnly { $0.messagesDelivered += outcome.accepted.count }
        }
        var response: AndroidResponse
        if outcome.illegal.isEmpty {
            response = answer(200, "80000000", "Success")
        } else {
            let illegal = outcome.illegal.map(RequestLogLine.quoted).joined(separator: ",")
            let summary =
                #"{"success":\#(outcome.accepted.count),"failure":\#(outcome.illegal.count),"illegal_tokens":[\#(illegal)]}"#
            response = answer(200, "80100000", summary)
        }
        response.principal = issued.principal
        response.tokenCount = tokens.count
        if !validateOnly {
            // The tag its receipts carry, noted from the body read here (not read again for them).
            var details: [String: String] = [:]
            if let tag = message["android"]?["bi_tag"]?.stringValue, !tag.isEmpty { details[Self.biTagDetail] = tag }
            acceptedPush(
                ReceivedAndroidMessage(
                    service: .huawei, target: appID, principal: issued.principal, tokens: outcome.accepted,
                    refusedTokens: outcome.illegal, messageID: requestID, body: request.body,
                    connectionID: request.connectionID, streamID: request.streamID, timestampHeader: nil,
                    receivedAtMilliseconds: request.receivedAtMilliseconds, details: details))
        }
        return response
    }

    // MARK: Receipts

    /// The `details` entry of an accepted message that holds its `android.bi_tag`.
    static let biTagDetail = "bi_tag"

    package func receipts(for message: ReceivedAndroidMessage) -> LookAlikeReceiptPlan? {
        // Huawei V1: `android.bi_tag` comes back as each status's `biTag`; up to 1,000 a POST.
        guard !message.tokens.isEmpty, let tag = message.huaweiBiTag else { return nil }
        return LookAlikeReceipts.pushKitV1(message, tag: tag, header: "X-HUAWEI-CALLBACK-ID")
    }
}

extension LookAlikeConfiguration {
    /// Huawei Push Kit OAuth clients the look-alike trusts (`POST /oauth2/v3/token`, then
    /// `POST /v1/{appID}/messages:send`).
    public var huaweiClients: [PushKitClient] {
        get { lookAlikeList("huaweiClients", of: PushKitClient.self) }
        set { setLookAlikeList("huaweiClients", newValue) }
    }
}

extension LookAlikeLocalSetup {
    /// A Huawei Push Kit OAuth client (numeric id, as AppGallery Connect issues them).
    public var huaweiClient: LookAlikeConfiguration.PushKitClient {
        lookAlikeMaterial("huaweiClient", as: LookAlikeConfiguration.PushKitClient.self)
    }
}

extension LookAlikeServer {
    /// Grants tokens to this Huawei Push Kit client from now on.
    public func trustHuaweiClient(_ client: LookAlikeConfiguration.PushKitClient) {
        (lookAlike(.huawei) as? HuaweiLookAlike)?.trust(client)
    }
}

extension ReceivedAndroidMessage {
    /// The message's `android.bi_tag` as sent (Huawei); nil when it had none, or for other services.
    public var huaweiBiTag: String? { service == .huawei ? details[HuaweiLookAlike.biTagDetail] : nil }
}

extension AndroidMockStatistics {
    public var huawei: AndroidServiceStatistics {
        get { self[.huawei] }
        set { self[.huawei] = newValue }
    }
}

/// Huawei's field checks, after its server demo's validators (`ValidatorUtils.checkArgument`
/// calls in `AndroidConfig`, `AndroidNotification`, `ClickAction`, `BadgeNotification`).
/// Unknown names are ignored, as a fastjson-bound server does.
enum HuaweiSchema {
    struct Failure {
        var code: String
        var message: String
    }

    static func failure(of message: MockJSON) -> Failure? {
        func structure(_ text: String) -> Failure {
            Failure(code: "80100003", message: "Illegal message structure: \(text)")
        }
        func parameter(_ text: String) -> Failure { Failure(code: "80100001", message: text) }
        if let data = message["data"], !data.isNull, data.stringValue == nil {
            return structure("data must be a string")
        }
        if let notification = message["notification"], !notification.isNull {
            guard notification.members != nil else { return structure("notification must be an object") }
            for key in ["title", "body", "image"]
            where notification[key].map({ !$0.isNull && $0.stringValue == nil }) ?? false {
                return structure("notification.\(key) must be a string")
            }
        }
        guard let android = message["android"], !android.isNull else { return nil }
        guard android.members != nil else { return structure("android must be an object") }
        if let collapseKey = android["collapse_key"], !collapseKey.isNull {
            guard let value = collapseKey.integerValue, (-1...100).contains(value) else {
                return Failure(code: "80100013", message: "Collapse Key should be [-1, 100]")
            }
        }
        if let urgency = android["urgency"], !urgency.isNull {
            guard let text = urgency.stringValue, text == "HIGH" || text == "NORMAL" else {
                return parameter("urgency shouid be [HIGH, NORMAL]")
            }
        }
        if let ttl = android["ttl"], !ttl.isNull {
            guard let text = ttl.stringValue, isHuaweiTTL(text) else { return parameter("The TTL's format is wrong") }
        }
        for key in ["category", "bi_tag", "data", "receipt_id"]
        where android[key].map({ !$0.isNull && $0.stringValue == nil }) ?? false {
            return structure("android.\(key) must be a string")
        }
        if let target = android["fast_app_target"], !target.isNull, target.integerValue != 1 && target.integerValue != 2
        {
            return parameter("Invalid fast app target type[one of 1 or 2]")
        }
        guard let notification = android["notification"], !notification.isNull else { return nil }
        guard notification.members != nil else { return structure("android.notification must be an object") }
        let top = message["notification"]
        func text(_ object: MockJSON?, _ key: String) -> String? {
            guard let value = object?[key]?.stringValue, !value.isEmpty else { return nil }
            return value
        }
        if text(notification, "title") == nil && text(top, "title") == nil { return parameter("title should be set") }
        if text(notification, "body") == nil && text(top, "body") == nil { return parameter("body should be set") }
        if let color = text(notification, "color"), !isHexColor(color) {
            return parameter("Wrong color format, color must be in the form #RRGGBB")
        }
        if let image = text(notification, "image"), !image.hasPrefix("https") {
            return parameter("notifyIcon must start with https")
        }
        if let importance = notification["importance"], !importance.isNull {
            guard let value = importance.stringValue, ["LOW", "NORMAL", "HIGH"].contains(value) else {
                return parameter("importance shouid be [HIGH, NORMAL, LOW]")
            }
        }
        if let style = notification["style"], !style.isNull {
            guard let value = style.integerValue, [0, 1, 3].contains(value) else {
                return parameter("style should be one of 0:default, 1: big text, 3: Inbox")
            }
            if value == 1 && (text(notification, "big_title") == nil || text(notification, "big_body") == nil) {
                return parameter("title and body are required when style = 1")
            }
        }
        if let click = notification["click_action"], !click.isNull {
            guard click.members != nil, let type = click["type"]?.integerValue, (1...4).contains(type) else {
                return parameter(
                    "click type should be one of 1: customize action, 2: open url, 3: open app, 4: open rich media")
            }
            switch type {
            case 1 where text(click, "intent") == nil && text(click, "action") == nil:
                return parameter("intent or action is required when click type=1")
            case 2 where !(text(click, "url")?.hasPrefix("https") ?? false):
                return parameter("url is required when click type=2, and must start with https")
            case 4 where !(text(click, "rich_resource")?.hasPrefix("https") ?? false):
                return parameter("richResource is required when click type=4, and must start with https")
            default: break
            }
        }
        if let badge = notification["badge"], !badge.isNull {
            guard badge.members != nil else { return structure("badge must be an object") }
            if let add = badge["add_num"], !add.isNull, !((1...99).contains(add.integerValue ?? 0)) {
                return Failure(code: "80100003", message: "Illegal payload, badge addNum value ranges from 1 to 99")
            }
            if let set = badge["set_num"], !set.isNull, !((0...99).contains(set.integerValue ?? -1)) {
                return Failure(code: "80100003", message: "Illegal payload, badge setNum value ranges from 0 to 99")
            }
        }
        return nil
    }

    /// `\d+|\d+[sS]|\d+.\d{1,9}|\d+.\d{1,9}[sS]` (the demo's `TTL_PATTERN`).
    static func isHuaweiTTL(_ text: String) -> Bool {
        var body = Substring(text)
        if body.hasSuffix("s") || body.hasSuffix("S") { body = body.dropLast() }
        let parts = body.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let digits: (Substring) -> Bool = { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        guard let whole = parts.first, digits(whole) else { return false }
        return parts.count == 1 || (digits(parts[1]) && parts[1].count <= 9)
    }

    static func isHexColor(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 7 && bytes[0] == UInt8(ascii: "#")
            && bytes.dropFirst().allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
            }
    }
}
