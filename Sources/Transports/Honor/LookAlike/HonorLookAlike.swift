import Foundation
import Synchronization
import TuisongCore
import TuisongLookAlikeKit

extension AndroidPushService {
    /// Honor Push.
    public static let honor = AndroidPushService("honor")
}

/// The look-alike of Honor Push: a client-credentials token endpoint and batch sends of up to
/// 1000 tokens, answering as `docs/reference/android.md` §4 says (and, where the sources are
/// silent, as it says the look-alike assumes). Token faults: `unregistered` puts the token in
/// `expireTokens`, `invalidArgument` in `failTokens`; `quotaExceeded` is HTTP 503 (flow
/// control); `unavailable` and `internal` are HTTP 500 `81000001`. Receipts: for a push that
/// carried `android.biTag`, Huawei-shaped V1 `statuses` signed with `X-HONOR-CALLBACK-ID`, to
/// the app's receipt configuration (Honor's receipt page was not found: docs/reference/receipts.md).
package final class HonorLookAlike: LookAlikeService {
    package static let declaration = LookAlikeDeclaration(
        service: .honor, summary: "Honor Push (POST /auth/token; POST /api/v1/<appId>/sendMessage)",
        configurationKeys: [("honorClients", #"{"clientID","clientSecret","appID"}"#)], setupKeys: ["honorClient"],
        makeSetup: { setup in
            try setup.setLookAlikeMaterial(
                "honorClient",
                LookAlikeConfiguration.PushKitClient(
                    clientID: HonorLookAlike.randomString(count: 32, alphabet: "0123456789abcdef"),
                    clientSecret: HonorLookAlike.randomString(
                        count: 32, alphabet: "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
                    appID: "104" + HonorLookAlike.randomString(count: 6, alphabet: "0123456789")))
        },
        configure: { configuration, setup in configuration.honorClients.append(setup.honorClient) },
        start: { host, configuration in try HonorLookAlike(host: host, configuration: configuration) },
        fallbackCredential: { setup, _ in
            let client = setup.honorClient
            // Local mode's app has its receipt configuration set up: its pushes ask for receipts.
            return LookAlikeCredential(
                vendorAppID: client.appID, clientID: client.clientID, secret: Array(client.clientSecret.utf8),
                options: ["receipts": "on"])
        },
        banner: { setup, base, _ in
            let client = setup.honorClient
            return [
                "token_url": base + "/auth/token", "send_url": "\(base)/api/v1/\(client.appID)/sendMessage",
                "client_id": client.clientID, "client_secret": client.clientSecret, "app_id": client.appID,
            ]
        })

    /// The message body size limit (4096 bytes), tokens not counted.
    static let pushKitPayloadLimit = 4096

    package let service = AndroidPushService.honor
    package let host: LookAlikeHost
    /// The OAuth clients it grants tokens to, by `client_id`; growable at run time.
    private let clients: Mutex<[String: LookAlikeConfiguration.PushKitClient]>

    init(host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        self.host = host
        var clients: [String: LookAlikeConfiguration.PushKitClient] = [:]
        for client in try configuration.lookAlikeSetting(
            "honorClients", as: [LookAlikeConfiguration.PushKitClient].self)
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
        if path == "/auth/token" || path == "/auth/realms/developer/protocol/openid-connect/token" {
            var response = token(request)
            response.isSignIn = true
            return response
        }
        // "", "api", "v1", appID, "sendMessage"
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[1] == "api", parts[2] == "v1", parts[4] == "sendMessage", !parts[3].isEmpty
        else { return nil }
        return honorSend(request, appID: String(parts[3]), faults: faults)
    }

    // MARK: POST /auth/token

    func token(_ request: LookAlikeRequest) -> AndroidResponse {
        func refusal(_ status: Int, _ error: String, _ description: String) -> AndroidResponse {
            AndroidResponse(
                status: status,
                json:
                    #"{"error":\#(RequestLogLine.quoted(error)),"error_description":\#(RequestLogLine.quoted(description))}"#,
                service: .honor, code: error)
        }
        guard request.method == "POST" else { return refusal(405, "invalid_request", "HTTP method not allowed") }
        guard let form = FormBody.parse(request.body), form["grant_type"] == "client_credentials" else {
            return refusal(400, "unsupported_grant_type", "Unsupported grant_type")
        }
        let clientID = form["client_id"] ?? ""
        let secret = form["client_secret"] ?? ""
        guard let client = clients.withLock({ $0[clientID] }), client.clientSecret == secret else {
            return refusal(401, "invalid_client", "Invalid client or Invalid client credentials")
        }
        let token = issueToken(
            prefix: "honor.", principal: clientID, target: client.appID, nowMilliseconds: request.receivedAtMilliseconds
        )
        var response = AndroidResponse(
            status: 200,
            json:
                #"{"access_token":\#(RequestLogLine.quoted(token)),"expires_in":\#(lifetimeSeconds),"token_type":"Bearer"}"#,
            service: .honor, code: nil)
        response.principal = clientID
        response.target = client.appID
        return response
    }

    // MARK: POST /api/v1/{appId}/sendMessage (Honor)

    func honorSend(_ request: LookAlikeRequest, appID: String, faults: AndroidTokenPrefixFaults) -> AndroidResponse {
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
        switch authenticateBearer(request, appID: appID) {
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
            // The tag its receipts carry, noted from the body read here (not read again for them).
            var details: [String: String] = [:]
            if let tag = message["android"]?["biTag"]?.stringValue, !tag.isEmpty { details[Self.biTagDetail] = tag }
            acceptedPush(
                ReceivedAndroidMessage(
                    service: .honor, target: appID, principal: issued.principal, tokens: outcome.accepted,
                    refusedTokens: outcome.illegal, messageID: requestID, body: request.body,
                    connectionID: request.connectionID, streamID: request.streamID,
                    timestampHeader: request.headers["timestamp"],
                    receivedAtMilliseconds: request.receivedAtMilliseconds, details: details))
        }
        return response
    }

    // MARK: Receipts

    /// The `details` entry of an accepted message that holds its `android.biTag`.
    static let biTagDetail = "biTag"

    package func receipts(for message: ReceivedAndroidMessage) -> LookAlikeReceiptPlan? {
        // Only a push that asked (its biTag) gets receipts; up to 1,000 statuses a POST.
        guard !message.tokens.isEmpty, let tag = message.honorBiTag else { return nil }
        return LookAlikeReceipts.pushKitV1(message, tag: tag, header: "X-HONOR-CALLBACK-ID")
    }
}

extension ReceivedAndroidMessage {
    /// The message's `android.biTag` as sent (Honor); nil when it had none, or for other services.
    public var honorBiTag: String? { service == .honor ? details[HonorLookAlike.biTagDetail] : nil }
}

extension LookAlikeConfiguration {
    /// Honor Push OAuth clients the look-alike trusts (`POST /auth/token`, then
    /// `POST /api/v1/{appID}/sendMessage`).
    public var honorClients: [PushKitClient] {
        get { lookAlikeList("honorClients", of: PushKitClient.self) }
        set { setLookAlikeList("honorClients", newValue) }
    }
}

extension LookAlikeLocalSetup {
    /// A Honor Push OAuth client.
    public var honorClient: LookAlikeConfiguration.PushKitClient {
        lookAlikeMaterial("honorClient", as: LookAlikeConfiguration.PushKitClient.self)
    }
}

extension LookAlikeServer {
    /// Grants tokens to this Honor Push client from now on.
    public func trustHonorClient(_ client: LookAlikeConfiguration.PushKitClient) {
        (lookAlike(.honor) as? HonorLookAlike)?.trust(client)
    }
}

extension AndroidMockStatistics {
    public var honor: AndroidServiceStatistics {
        get { self[.honor] }
        set { self[.honor] = newValue }
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
