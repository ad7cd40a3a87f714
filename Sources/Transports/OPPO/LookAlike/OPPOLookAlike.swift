import Foundation
import Synchronization
internal import TuisongCrypto
import TuisongLookAlikeKit

extension AndroidPushService {
    /// OPPO Push (HeyTap) server API v1.
    public static let oppo = AndroidPushService("oppo")
}

/// The look-alike of OPPO Push: `POST /server/v1/auth` (SHA-256 sign), then notification
/// unicast and batch unicast, form-encoded with the `auth_token` in the body, answering as
/// `docs/reference/android.md` §9 says (and, where the sources are silent, as it says the
/// look-alike assumes). Token faults: `unregistered` and `invalidArgument` are `10000` (a
/// batch: the entry's `errorCode`); `quotaExceeded` is `33` (the daily limit), `unavailable`
/// `-1`, `internal` HTTP 500 `-1`. Receipts: to the push's own `call_back_url`.
package final class OPPOLookAlike: LookAlikeService {
    package static let declaration = LookAlikeDeclaration(
        service: .oppo,
        summary: "OPPO Push (POST /server/v1/auth; POST /server/v1/message/notification/unicast and unicast_batch)",
        configurationKeys: [("oppoApps", #"{"appKey","masterSecret"}"#)], setupKeys: ["oppoApp"],
        makeSetup: { setup in
            try setup.setLookAlikeMaterial(
                "oppoApp",
                LookAlikeConfiguration.OppoApp(
                    appKey: OPPOLookAlike.randomHex(32), masterSecret: OPPOLookAlike.randomHex(32)))
        },
        configure: { configuration, setup in configuration.oppoApps.append(setup.oppoApp) },
        start: { host, configuration in try OPPOLookAlike(host: host, configuration: configuration) },
        fallbackCredential: { setup, _ in
            LookAlikeCredential(
                vendorAppID: "0", clientID: setup.oppoApp.appKey, secret: Array(setup.oppoApp.masterSecret.utf8))
        },
        banner: { setup, base, _ in
            [
                "auth_url": base + "/server/v1/auth", "unicast_url": base + "/server/v1/message/notification/unicast",
                "unicast_batch_url": base + "/server/v1/message/notification/unicast_batch",
                "app_key": setup.oppoApp.appKey, "master_secret": setup.oppoApp.masterSecret,
            ]
        })

    package let service = AndroidPushService.oppo
    package let host: LookAlikeHost
    /// The apps it grants `auth_token`s to, by AppKey; growable at run time.
    private let apps: Mutex<[String: LookAlikeConfiguration.OppoApp]>

    init(host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        self.host = host
        var apps: [String: LookAlikeConfiguration.OppoApp] = [:]
        for app in try configuration.lookAlikeSetting("oppoApps", as: [LookAlikeConfiguration.OppoApp].self) ?? []
        where apps[app.appKey] == nil {
            apps[app.appKey] = app
        }
        self.apps = Mutex(apps)
    }

    /// Grants `auth_token`s to this app from now on (replacing one with the same AppKey).
    func trust(_ app: LookAlikeConfiguration.OppoApp) {
        apps.withLock { $0[app.appKey] = app }
    }

    package func trust(vendorAppID: String, clientID: String, secret: [UInt8]) {
        trust(.init(appKey: clientID, masterSecret: String(decoding: secret, as: UTF8.self)))
    }

    package func answer(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse? {
        switch request.pathWithoutQuery {
        case "/server/v1/auth":
            var response = oppoAuth(request)
            response.isSignIn = true
            return response
        case "/server/v1/message/notification/unicast": return oppoSend(request, batch: false, faults: faults)
        case "/server/v1/message/notification/unicast_batch": return oppoSend(request, batch: true, faults: faults)
        default: return nil
        }
    }

    /// One event per message that asked for receipts, grouped into a POST per URL: `messageId`,
    /// `appId`, `taskId`, `registrationIds`, `eventTime`, `param`, `eventType`.
    package func receipts(for message: ReceivedAndroidMessage) -> LookAlikeReceiptPlan? {
        guard !message.tokens.isEmpty else { return nil }
        // One event per message that asked for receipts, grouped into a POST per URL:
        // `messageId`, `appId`, `taskId`, `registrationIds`, `eventTime`, `param`, `eventType`.
        guard let form = FormBody.parse(message.body),
            let parsed = MockJSON.parse(Array((form["messages"] ?? form["message"] ?? "").utf8))
        else { return nil }
        let list: [MockJSON]
        if case .array(let messages) = parsed { list = messages } else { list = [parsed] }
        let accepted = Set(message.tokens)
        let ids = message.messageID.split(separator: ",").map(String.init)
        var events: [String: [[String: Any]]] = [:]
        var order: [String] = []
        var index = 0
        for entry in list {
            guard let target = entry["target_value"]?.stringValue, accepted.contains(target) else { continue }
            let id = index < ids.count ? ids[index] : ""
            index += 1
            guard let notification = entry["notification"],
                let url = notification["call_back_url"]?.stringValue, !url.isEmpty
            else { continue }
            if events[url] == nil { order.append(url) }
            events[url, default: []].append([
                "messageId": id, "appId": message.target, "taskId": id, "registrationIds": target,
                "eventTime": String(message.receivedAtMilliseconds),
                "param": notification["call_back_parameter"]?.stringValue ?? "", "eventType": "push_arrive",
            ])
        }
        return .direct(order.map { LookAlikeReceipts.jsonPost(events[$0] ?? [], to: $0) })
    }

    /// How far a signed `timestamp` may be from the mock's clock: ten minutes (OPPO's window is
    /// not public; another service documents this one).
    static let signedTimestampWindowMilliseconds: Int64 = 10 * 60 * 1000
    /// `off_line_ttl`: "最长 3 天", in seconds.
    static let oppoMaximumOfflineTTL = 3 * 24 * 3600

    static func oppoAnswer(_ status: Int, _ code: Int, _ message: String, data: String? = nil) -> AndroidResponse {
        var json = #"{"code":\#(code),"message":\#(RequestLogLine.quoted(message))"#
        if let data { json += #","data":"# + data }
        return AndroidResponse(status: status, json: json + "}", service: .oppo, code: code == 0 ? nil : String(code))
    }

    // MARK: POST /server/v1/auth

    func oppoAuth(_ request: LookAlikeRequest) -> AndroidResponse {
        guard request.method == "POST" else { return Self.oppoAnswer(405, 12, "Http Action Not Allowed") }
        let form = FormBody.parse(request.body) ?? [:]
        func field(_ name: String) -> String? { form[name].flatMap { $0.isEmpty ? nil : $0 } }
        guard let appKey = field("app_key") else { return Self.oppoAnswer(200, 15, "Missing App Key") }
        guard let sign = field("sign") else { return Self.oppoAnswer(200, 17, "Missing Signature") }
        guard let timestamp = field("timestamp") else { return Self.oppoAnswer(200, 18, "Missing Timestamp") }
        guard let app = apps.withLock({ $0[appKey] }) else {
            return Self.oppoAnswer(200, 14, "Invalid App Key")
        }
        guard let milliseconds = Int64(timestamp),
            abs(milliseconds - request.receivedAtMilliseconds) <= Self.signedTimestampWindowMilliseconds
        else { return Self.oppoAnswer(200, 19, "Invalid Timestamp") }
        let expected = Hex.encode(Digest.sha256(Array((appKey + timestamp + app.masterSecret).utf8)))
        guard sign.lowercased() == expected else { return Self.oppoAnswer(200, 16, "Invalid Signature") }
        let token = issueToken(
            prefix: "oppo.", principal: appKey, target: appKey, nowMilliseconds: request.receivedAtMilliseconds)
        var response = Self.oppoAnswer(
            200, 0, "Success",
            data: #"{"auth_token":\#(RequestLogLine.quoted(token)),"create_time":\#(request.receivedAtMilliseconds)}"#)
        response.principal = appKey
        response.target = appKey
        return response
    }

    // MARK: POST /server/v1/message/notification/unicast and unicast_batch

    func oppoSend(_ request: LookAlikeRequest, batch: Bool, faults: AndroidTokenPrefixFaults) -> AndroidResponse {
        func refuse(_ status: Int, _ code: Int, _ message: String, tokens: Int = 0) -> AndroidResponse {
            recorder.update(.oppo) {
                $0.requestsRefused += 1
                $0.messagesRefused += tokens
            }
            return Self.oppoAnswer(status, code, message)
        }
        guard request.method == "POST" else { return refuse(405, 12, "Http Action Not Allowed") }
        let form = request.bodyLength <= Self.bodyStorageLimit ? FormBody.parse(request.body) : nil
        guard
            let bearer = form?["auth_token"].flatMap({ $0.isEmpty ? nil : $0 }) ?? request.headers["auth_token"]
                ?? request.headers["authtoken"]
        else {
            recorder.update(.oppo) { $0.authenticationFailures += 1 }
            return refuse(200, 29, "Missing Auth Token")
        }
        guard case .valid(let issued) = tokens.lookup(bearer, nowMilliseconds: request.receivedAtMilliseconds),
            issued.service == .oppo
        else {
            recorder.update(.oppo) { $0.authenticationFailures += 1 }
            return refuse(200, 11, "Invalid AuthToken")
        }
        let field = batch ? "messages" : "message"
        guard let text = form?[field], !text.isEmpty else {
            return refuse(200, 40, "Missing Required Arguments: \(field)")
        }
        guard let parsed = MockJSON.parse(Array(text.utf8)) else {
            return refuse(200, 41, "Invalid Arguments: \(field) is not JSON")
        }
        let messages: [MockJSON]
        if batch {
            guard case .array(let list) = parsed, (1...Self.maximumBatchTokens).contains(list.count) else {
                return refuse(200, 41, "Invalid Arguments: messages must be an array of 1…\(Self.maximumBatchTokens)")
            }
            messages = list
        } else {
            messages = [parsed]
        }
        var regIDs: [String] = []
        for (index, message) in messages.enumerated() {
            if let failure = OppoSchema.failure(of: message, at: batch ? "messages[\(index)]" : "message") {
                return refuse(200, failure.code, failure.message, tokens: messages.count)
            }
            regIDs.append(message["target_value"]?.stringValue ?? "")
        }

        let outcome = Self.sortBatch(regIDs, faults: faults)
        if let fault = outcome.requestFault {
            switch fault.kind {
            case .quotaExceeded:
                return refuse(200, 33, "The number of messages exceeds the daily limit", tokens: regIDs.count)
            case .unavailable: return refuse(200, -1, "Service Currently Unavailable", tokens: regIDs.count)
            default: return refuse(500, -1, "Service Currently Unavailable", tokens: regIDs.count)
            }
        }
        if !batch && outcome.accepted.isEmpty {
            return refuse(200, 10000, "Invalid RegistrationId", tokens: 1)
        }
        let illegal = Set(outcome.illegal)
        var messageIDs: [String] = []
        var entries: [String] = []
        for regID in regIDs {
            let quoted = RequestLogLine.quoted(regID)
            if illegal.contains(regID) {
                entries.append(
                    #"{"registrationId":\#(quoted),"errorCode":10000,"errorMessage":"Invalid RegistrationId"}"#)
            } else {
                let messageID = Self.randomHex(24)
                messageIDs.append(messageID)
                entries.append(#"{"messageId":"\#(messageID)","registrationId":\#(quoted)}"#)
            }
        }
        recorder.update(.oppo) {
            $0.messagesRefused += outcome.illegal.count
            $0.messagesDelivered += outcome.accepted.count
        }
        let data = batch ? "[" + entries.joined(separator: ",") + "]" : #"{"messageId":"\#(messageIDs[0])"}"#
        var response = Self.oppoAnswer(200, 0, "Success", data: data)
        response.target = issued.target
        response.principal = issued.principal
        response.tokenCount = regIDs.count
        if !outcome.accepted.isEmpty {
            acceptedPush(
                ReceivedAndroidMessage(
                    service: .oppo, target: issued.target, principal: issued.principal, tokens: outcome.accepted,
                    refusedTokens: outcome.illegal, messageID: messageIDs.joined(separator: ","), body: request.body,
                    connectionID: request.connectionID, streamID: request.streamID, timestampHeader: nil,
                    receivedAtMilliseconds: request.receivedAtMilliseconds))
        }
        return response
    }

    static func randomHex(_ count: Int) -> String {
        randomString(count: count, alphabet: "0123456789abcdef")
    }
}

/// OPPO's checks of one `message` object (target and `notification`), after the limits its
/// server documentation states (§9 of the reference): `40` for what is missing, `41` for what
/// is malformed, the message naming the field.
enum OppoSchema {
    struct Failure {
        var code: Int
        var message: String
    }

    static func failure(of message: MockJSON, at path: String) -> Failure? {
        func missing(_ name: String) -> Failure { Failure(code: 40, message: "Missing Required Arguments: \(name)") }
        func invalid(_ text: String) -> Failure { Failure(code: 41, message: "Invalid Arguments: \(text)") }
        guard message.members != nil else { return invalid("\(path) must be a JSON object") }
        guard let targetType = message["target_type"], !targetType.isNull else { return missing("\(path).target_type") }
        guard targetType.integerValue == 2 else {
            return invalid("\(path).target_type must be 2 (registration_id); the look-alike knows no aliases")
        }
        guard let target = message["target_value"]?.stringValue, !target.isEmpty else {
            return missing("\(path).target_value")
        }
        guard let notification = message["notification"], !notification.isNull else {
            return missing("\(path).notification")
        }
        let at = path + ".notification"
        guard notification.members != nil else { return invalid("\(at) must be a JSON object") }
        func text(_ name: String, required: Bool, limit: Int) -> Failure? {
            guard let value = notification[name], !value.isNull else {
                return required ? missing("\(at).\(name)") : nil
            }
            guard let string = value.stringValue else { return invalid("\(at).\(name) must be a string") }
            if required && string.isEmpty { return missing("\(at).\(name)") }
            return string.count > limit ? invalid("\(at).\(name) holds at most \(limit) characters") : nil
        }
        if let failure = text("title", required: true, limit: 50) ?? text("content", required: true, limit: 200)
            ?? text("sub_title", required: false, limit: 10) ?? text("channel_id", required: false, limit: 200)
            ?? text("click_action_activity", required: false, limit: 500)
            ?? text("click_action_url", required: false, limit: 500)
            // Receipts (消息回执): the URL at most 200 characters, its parameter at most 50.
            ?? text("call_back_url", required: false, limit: 200)
            ?? text("call_back_parameter", required: false, limit: 50)
        {
            return failure
        }
        if let type = notification["click_action_type"], !type.isNull {
            guard let value = type.integerValue, [0, 1, 2, 4, 5].contains(value) else {
                return invalid("\(at).click_action_type must be 0, 1, 2, 4 or 5")
            }
            let activity = notification["click_action_activity"]?.stringValue ?? ""
            let url = notification["click_action_url"]?.stringValue ?? ""
            if (value == 1 || value == 4) && activity.isEmpty { return missing("\(at).click_action_activity") }
            if (value == 2 || value == 5) && url.isEmpty { return missing("\(at).click_action_url") }
        }
        if let ttl = notification["off_line_ttl"], !ttl.isNull {
            guard let value = ttl.integerValue, (0...OPPOLookAlike.oppoMaximumOfflineTTL).contains(value) else {
                return invalid("\(at).off_line_ttl is seconds, at most \(OPPOLookAlike.oppoMaximumOfflineTTL)")
            }
        }
        if let offLine = notification["off_line"], !offLine.isNull {
            guard case .bool = offLine else { return invalid("\(at).off_line must be a boolean") }
        }
        if let network = notification["network_type"], !network.isNull,
            network.integerValue != 0
                && network.integerValue != 1
        {
            return invalid("\(at).network_type must be 0 or 1")
        }
        if let parameters = notification["action_parameters"], !parameters.isNull {
            guard let string = parameters.stringValue, string.utf8.count <= 4096,
                MockJSON.parse(Array(string.utf8))?.members != nil
            else { return invalid("\(at).action_parameters must be a JSON object as a string, at most 4 KB") }
        }
        return nil
    }
}

extension LookAlikeConfiguration {
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

    /// OPPO Push apps (`POST /server/v1/auth`, then `/server/v1/message/notification/unicast`
    /// and `unicast_batch`).
    public var oppoApps: [OppoApp] {
        get { lookAlikeList("oppoApps", of: OppoApp.self) }
        set { setLookAlikeList("oppoApps", newValue) }
    }
}

extension LookAlikeLocalSetup {
    /// An OPPO Push app (AppKey and MasterSecret).
    public var oppoApp: LookAlikeConfiguration.OppoApp {
        lookAlikeMaterial("oppoApp", as: LookAlikeConfiguration.OppoApp.self)
    }
}

extension LookAlikeServer {
    /// Grants `auth_token`s to this OPPO app from now on.
    public func trustOppoApp(_ app: LookAlikeConfiguration.OppoApp) {
        (lookAlike(.oppo) as? OPPOLookAlike)?.trust(app)
    }
}

extension AndroidMockStatistics {
    public var oppo: AndroidServiceStatistics {
        get { self[.oppo] }
        set { self[.oppo] = newValue }
    }
}
