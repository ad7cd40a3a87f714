/// Huawei Push Kit (REST v1) and Honor Push: client-credentials token endpoints and batch sends
/// of up to 1000 tokens, answering as `docs/reference/android.md` §3–4 says (and, where the
/// sources are silent, as it says the look-alike assumes).
extension AndroidServices {
    static let maximumBatchTokens = 1000
    /// Huawei: "The message body size exceeds the default value (4096 bytes)", tokens not counted.
    static let pushKitPayloadLimit = 4096

    // MARK: Token endpoints

    func pushKitToken(_ request: AndroidRequest, service: AndroidPushService) -> AndroidResponse {
        func huaweiRefusal(_ subError: Int, _ description: String, status: Int = 400) -> AndroidResponse {
            AndroidResponse(
                status: status,
                json:
                    #"{"error":1101,"sub_error":\#(subError),"error_description":\#(RequestLogLine.quoted(description))}"#,
                service: .huawei, code: "1101/\(subError)")
        }
        func honorRefusal(_ status: Int, _ error: String, _ description: String) -> AndroidResponse {
            AndroidResponse(
                status: status,
                json:
                    #"{"error":\#(RequestLogLine.quoted(error)),"error_description":\#(RequestLogLine.quoted(description))}"#,
                service: .honor, code: error)
        }
        let isHuawei = service == .huawei
        guard request.method == "POST" else {
            return isHuawei
                ? huaweiRefusal(20001, "unsupported http method", status: 405)
                : honorRefusal(405, "invalid_request", "HTTP method not allowed")
        }
        guard let form = FormBody.parse(request.body), form["grant_type"] == "client_credentials" else {
            return isHuawei
                ? huaweiRefusal(20001, "invalid grant_type")
                : honorRefusal(400, "unsupported_grant_type", "Unsupported grant_type")
        }
        let clientID = form["client_id"] ?? ""
        let secret = form["client_secret"] ?? ""
        let clients = trust.withLock { isHuawei ? $0.huaweiClients : $0.honorClients }
        if isHuawei {
            guard !clientID.isEmpty, clientID.utf8.count <= 64, clientID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
            else { return huaweiRefusal(20002, "invalid client_id") }
            guard !secret.isEmpty else { return huaweiRefusal(20171, "client_secret is empty") }
        }
        guard let client = clients[clientID] else {
            return isHuawei
                ? huaweiRefusal(20003, "client_id not found")
                : honorRefusal(401, "invalid_client", "Invalid client or Invalid client credentials")
        }
        guard client.clientSecret == secret else {
            return isHuawei
                ? huaweiRefusal(12304, "invalid client_secret")
                : honorRefusal(401, "invalid_client", "Invalid client or Invalid client credentials")
        }
        let token = issueToken(
            service: service, principal: clientID, target: client.appID, nowMilliseconds: request.receivedAtMilliseconds
        )
        var response = AndroidResponse(
            status: 200,
            json:
                #"{"access_token":\#(RequestLogLine.quoted(token)),"expires_in":\#(lifetimeSeconds),"token_type":"Bearer"}"#,
            service: service, code: nil)
        response.principal = clientID
        response.target = client.appID
        return response
    }

    // MARK: Shared checks

    /// How the bearer token of a send request stands.
    enum PushKitAuthentication {
        case accepted(AccessTokenStore.Issued)
        /// Missing, unknown, another service's, or another app's token: 80200001.
        case refused
        /// Expired or revoked: 80200003.
        case expired
    }

    func authenticatePushKit(_ request: AndroidRequest, service: AndroidPushService, appID: String)
        -> PushKitAuthentication
    {
        guard let bearer = Self.bearerToken(request.authorization) else { return .refused }
        switch tokens.lookup(bearer, nowMilliseconds: request.receivedAtMilliseconds) {
        case .unknown: return .refused
        case .expired(let issued): return issued.service == service ? .expired : .refused
        case .valid(let issued):
            return issued.service == service && issued.target == appID ? .accepted(issued) : .refused
        }
    }

    /// The tokens of a batch split by outcome, or the request-level fault that fails it whole.
    struct BatchOutcome {
        var accepted: [String] = []
        /// Malformed, or faulted `unregistered` / `invalidArgument`.
        var illegal: [String] = []
        /// Faulted `unregistered` (Honor reports these apart, as `expireTokens`).
        var expired: [String] = []
        var requestFault: APNsMockConfiguration.AndroidTokenFault?
    }

    static func sortBatch(_ tokens: [String], faults: AndroidTokenPrefixFaults) -> BatchOutcome {
        var outcome = BatchOutcome()
        for token in tokens {
            guard isPlausibleDeviceToken(token) else {
                outcome.illegal.append(token)
                continue
            }
            switch faults.fault(forToken: token)?.kind {
            case nil: outcome.accepted.append(token)
            case .unregistered:
                outcome.illegal.append(token)
                outcome.expired.append(token)
            case .invalidArgument: outcome.illegal.append(token)
            case .quotaExceeded, .unavailable, .internal:
                if outcome.requestFault == nil { outcome.requestFault = faults.fault(forToken: token) }
            }
        }
        return outcome
    }

    /// Token strings of a `token` member: nil when it is not an array of strings.
    static func tokenList(_ value: MockJSON?) -> [String]? {
        guard case .array(let elements) = value else { return nil }
        var tokens: [String] = []
        tokens.reserveCapacity(elements.count)
        for element in elements {
            guard let token = element.stringValue else { return nil }
            tokens.append(token)
        }
        return tokens
    }

    /// Payload bytes of a batch request: the body without its tokens.
    static func payloadBytes(bodyLength: Int, tokens: [String]) -> Int {
        bodyLength - tokens.reduce(0) { $0 + $1.utf8.count + 3 }
    }

    // MARK: POST /v1/{appId}/messages:send (Huawei)

    func huaweiSend(_ request: AndroidRequest, appID: String, faults: AndroidTokenPrefixFaults) -> AndroidResponse {
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
        switch authenticatePushKit(request, service: .huawei, appID: appID) {
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
            acceptedPush(
                ReceivedAndroidMessage(
                    service: .huawei, target: appID, principal: issued.principal, tokens: outcome.accepted,
                    refusedTokens: outcome.illegal, messageID: requestID, body: request.body,
                    connectionID: request.connectionID, streamID: request.streamID, timestampHeader: nil,
                    receivedAtMilliseconds: request.receivedAtMilliseconds))
        }
        return response
    }

    // MARK: POST /api/v1/{appId}/sendMessage (Honor)

    func honorSend(_ request: AndroidRequest, appID: String, faults: AndroidTokenPrefixFaults) -> AndroidResponse {
        let requestID = Self.requestID(nowMilliseconds: request.receivedAtMilliseconds)
        func answer(_ status: Int, _ code: Int, _ message: String, data: String?) -> AndroidResponse {
            var json = #"{"code":\#(code),"message":\#(RequestLogLine.quoted(message))"#
            if let data { json += #","data":"# + data }
            json += "}"
            var response = AndroidResponse(
                status: status, json: json, service: .honor, code: code == 200 ? nil : String(code))
            response.target = appID
            return response
        }
        func refuse(_ status: Int, _ code: Int, _ message: String, tokens: Int = 0) -> AndroidResponse {
            recorder.update(.honor) {
                $0.requestsRefused += 1
                $0.messagesRefused += tokens
            }
            return answer(status, code, message, data: nil)
        }
        guard request.method == "POST" else { return refuse(405, 80_100_001, "Method not allowed") }
        let issued: AccessTokenStore.Issued
        switch authenticatePushKit(request, service: .honor, appID: appID) {
        case .accepted(let accepted): issued = accepted
        case .refused:
            recorder.update(.honor) { $0.authenticationFailures += 1 }
            return refuse(401, 80_200_001, "Oauth authentication error")
        case .expired:
            recorder.update(.honor) { $0.authenticationFailures += 1 }
            return refuse(401, 80_200_003, "Oauth Token expired")
        }
        guard request.bodyLength <= Self.bodyStorageLimit else {
            return refuse(400, 80_300_008, "The message body size exceeds the default value")
        }
        guard let message = MockJSON.parse(request.body), message.members != nil else {
            return refuse(400, 80_100_003, "Illegal message structure: the body is not a JSON object")
        }
        let tokenMember = message["token"]
        var tokens: [String] = []
        if let tokenMember, !tokenMember.isNull {
            guard let list = Self.tokenList(tokenMember) else {
                return refuse(400, 80_100_003, "Illegal message structure: token must be an array of strings")
            }
            tokens = list
        }
        guard !tokens.isEmpty, tokens.count <= Self.maximumBatchTokens else {
            return refuse(
                400, 80_300_010, "The number of tokens in the message body does not meet the default value",
                tokens: tokens.count)
        }
        if let failure = HonorSchema.failure(of: message) {
            return refuse(400, 80_100_003, failure, tokens: tokens.count)
        }
        if Self.payloadBytes(bodyLength: request.bodyLength, tokens: tokens) > Self.pushKitPayloadLimit {
            return refuse(400, 80_300_008, "The message body size exceeds the default value", tokens: tokens.count)
        }
        let outcome = Self.sortBatch(tokens, faults: faults)
        if let fault = outcome.requestFault {
            if fault.kind == .quotaExceeded { return refuse(503, 81_000_001, "Traffic control", tokens: tokens.count) }
            return refuse(500, 81_000_001, "System internal error", tokens: tokens.count)
        }
        let expired = Set(outcome.expired)
        let failTokens = outcome.illegal.filter { !expired.contains($0) }
        func list(_ tokens: [String]) -> String { "[" + tokens.map(RequestLogLine.quoted).joined(separator: ",") + "]" }
        let sent = !outcome.accepted.isEmpty
        let data =
            #"{"sendResult":\#(sent),"requestId":"\#(requestID)","failTokens":\#(list(failTokens)),"expireTokens":\#(list(outcome.expired))}"#
        recorder.update(.honor) {
            $0.messagesRefused += outcome.illegal.count
            $0.messagesDelivered += outcome.accepted.count
        }
        var response =
            sent
            ? answer(200, 200, "success", data: data)
            : answer(200, 80_300_007, "All the tokens are invalid", data: data)
        response.principal = issued.principal
        response.tokenCount = tokens.count
        if sent {
            acceptedPush(
                ReceivedAndroidMessage(
                    service: .honor, target: appID, principal: issued.principal, tokens: outcome.accepted,
                    refusedTokens: outcome.illegal, messageID: requestID, body: request.body,
                    connectionID: request.connectionID, streamID: request.streamID, timestampHeader: request.timestamp,
                    receivedAtMilliseconds: request.receivedAtMilliseconds))
        }
        return response
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
            && bytes.dropFirst().allSatisfy(APNsRequestValidator.isHexDigit)
    }
}

/// Honor's field checks (camelCase names, `docs/reference/android.md` §4). Its error table is
/// not public; every refusal here is 80100003 with a message naming the field.
enum HonorSchema {
    static func failure(of message: MockJSON) -> String? {
        func notString(_ object: MockJSON, _ key: String) -> Bool {
            object[key].map { !$0.isNull && $0.stringValue == nil } ?? false
        }
        if notString(message, "data") { return "data must be a string" }
        if let notification = message["notification"], !notification.isNull {
            guard notification.members != nil else { return "notification must be an object" }
            for key in ["title", "body", "image"] where notString(notification, key) {
                return "notification.\(key) must be a string"
            }
        }
        guard let android = message["android"], !android.isNull else { return nil }
        guard android.members != nil else { return "android must be an object" }
        for key in ["biTag", "data"] where notString(android, key) { return "android.\(key) must be a string" }
        if let ttl = android["ttl"], !ttl.isNull {
            guard let text = ttl.stringValue, text.hasSuffix("s"), let seconds = Int(text.dropLast()),
                (0...1_296_000).contains(seconds)
            else { return "android.ttl must be \"<seconds>s\", at most 1296000s" }
        }
        if let target = android["targetUserType"], !target.isNull, target.integerValue != 0 && target.integerValue != 1
        {
            return "android.targetUserType must be 0 or 1"
        }
        guard let notification = android["notification"], !notification.isNull else { return nil }
        guard notification.members != nil else { return "android.notification must be an object" }
        for key in ["title", "body", "image", "bigTitle", "bigBody", "when", "tag", "group"]
        where notString(notification, key) {
            return "android.notification.\(key) must be a string"
        }
        if let importance = notification["importance"], !importance.isNull {
            guard let value = importance.stringValue, value == "LOW" || value == "NORMAL" else {
                return "android.notification.importance must be LOW or NORMAL"
            }
        }
        if let style = notification["style"], !style.isNull {
            guard let value = style.integerValue, value == 0 || value == 1 else {
                return "android.notification.style must be 0 or 1"
            }
            if value == 1
                && (notification["bigTitle"]?.stringValue == nil || notification["bigBody"]?.stringValue == nil)
            {
                return "android.notification.bigTitle and bigBody are required when style = 1"
            }
        }
        if let click = notification["clickAction"], !click.isNull {
            guard click.members != nil, let type = click["type"]?.integerValue, (1...3).contains(type) else {
                return "android.notification.clickAction.type must be 1, 2 or 3"
            }
            if type == 1 && click["intent"]?.stringValue == nil && click["action"]?.stringValue == nil {
                return "android.notification.clickAction needs intent or action when type = 1"
            }
            if type == 2 && click["url"]?.stringValue == nil {
                return "android.notification.clickAction needs url when type = 2"
            }
        }
        if let buttons = notification["buttons"], !buttons.isNull {
            guard case .array(let list) = buttons, list.count <= 3 else {
                return "android.notification.buttons holds at most 3 buttons"
            }
        }
        if let badge = notification["badge"], !badge.isNull {
            guard badge.members != nil else { return "android.notification.badge must be an object" }
            if let add = badge["addNum"], !add.isNull, !((1...99).contains(add.integerValue ?? 0)) {
                return "android.notification.badge.addNum ranges from 1 to 99"
            }
            if let set = badge["setNum"], !set.isNull, !((0...99).contains(set.integerValue ?? -1)) {
                return "android.notification.badge.setNum ranges from 0 to 99"
            }
        }
        if let notifyID = notification["notifyId"], !notifyID.isNull, notifyID.integerValue == nil {
            return "android.notification.notifyId must be an integer"
        }
        return nil
    }
}
