import Foundation
import Synchronization
internal import TuisongCrypto
import TuisongLookAlikeKit

extension AndroidPushService {
    /// vivo Push server API.
    public static let vivo = AndroidPushService("vivo")
}

/// The look-alike of vivo Push: `POST /message/auth` (MD5 sign), then `/message/send` for one
/// regId and `/message/saveListPayload` + `/message/pushToList` for 2…1000, JSON bodies and the
/// `authToken` header, answering as `docs/reference/android.md` §10 says (and, where the
/// sources are silent, as it says the look-alike assumes). Token faults: `unregistered` and
/// `invalidArgument` are `10302` (a list push: in `invalidUsers`); `quotaExceeded` is `10070`
/// (`10073` for system messages), `unavailable` `10040`, `internal` HTTP 500. Receipts: to the
/// app's receipt configuration, for a push whose `extra.callback` names a receipt id.
package final class VivoLookAlike: LookAlikeService {
    package static let declaration = LookAlikeDeclaration(
        service: .vivo,
        summary: "vivo Push (POST /message/auth; POST /message/send, /message/saveListPayload, /message/pushToList)",
        configurationKeys: [("vivoApps", #"{"appID","appKey","appSecret"}"#)], setupKeys: ["vivoApp"],
        makeSetup: { setup in
            func uuid() -> String {
                [8, 4, 4, 4, 12].map { VivoLookAlike.randomString(count: $0, alphabet: "0123456789abcdef") }
                    .joined(separator: "-")
            }
            try setup.setLookAlikeMaterial(
                "vivoApp",
                LookAlikeConfiguration.VivoApp(
                    appID: "1" + VivoLookAlike.randomString(count: 8, alphabet: "0123456789"), appKey: uuid(),
                    appSecret: uuid()))
        },
        configure: { configuration, setup in configuration.vivoApps.append(setup.vivoApp) },
        start: { host, configuration in try VivoLookAlike(host: host, configuration: configuration) },
        fallbackCredential: { setup, _ in
            LookAlikeCredential(
                vendorAppID: setup.vivoApp.appID, clientID: setup.vivoApp.appKey,
                secret: Array(setup.vivoApp.appSecret.utf8),
                options: ["receipt_id": LookAlikeLocalSetup.vivoReceiptID])
        },
        banner: { setup, base, _ in
            [
                "auth_url": base + "/message/auth", "send_url": base + "/message/send",
                "save_list_payload_url": base + "/message/saveListPayload",
                "push_to_list_url": base + "/message/pushToList", "app_id": setup.vivoApp.appID,
                "app_key": setup.vivoApp.appKey, "app_secret": setup.vivoApp.appSecret,
            ]
        })

    /// How far a signed `timestamp` may be from the mock's clock (vivo's documented window).
    static let signedTimestampWindowMilliseconds: Int64 = 10 * 60 * 1000

    package let service = AndroidPushService.vivo
    package let host: LookAlikeHost
    /// The apps it grants `authToken`s to, by AppID; growable at run time.
    private let apps: Mutex<[String: LookAlikeConfiguration.VivoApp]>
    /// `saveListPayload` bodies, by `taskId`, for `pushToList`.
    let vivoTasks = VivoTaskStore()

    init(host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        self.host = host
        var apps: [String: LookAlikeConfiguration.VivoApp] = [:]
        for app in try configuration.lookAlikeSetting("vivoApps", as: [LookAlikeConfiguration.VivoApp].self) ?? []
        where apps[app.appID] == nil {
            apps[app.appID] = app
        }
        self.apps = Mutex(apps)
    }

    /// Grants `authToken`s to this app from now on (replacing one with the same AppID).
    func trust(_ app: LookAlikeConfiguration.VivoApp) {
        apps.withLock { $0[app.appID] = app }
    }

    package func trust(vendorAppID: String, clientID: String, secret: [UInt8]) {
        trust(.init(appID: vendorAppID, appKey: clientID, appSecret: String(decoding: secret, as: UTF8.self)))
    }

    package func answer(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse? {
        switch request.pathWithoutQuery {
        case "/message/auth":
            var response = vivoAuth(request)
            response.isSignIn = true
            return response
        case "/message/send": return vivoSend(request, faults: faults)
        case "/message/saveListPayload": return vivoSaveListPayload(request)
        case "/message/pushToList": return vivoPushToList(request, faults: faults)
        default: return nil
        }
    }

    /// `extra.callback` names the receipt id the console made for the receipt address (local
    /// mode's one stands for every app's); `callback.param` comes back as each task's `param`,
    /// the accepted regIds as its `targets`.
    package func receipts(for message: ReceivedAndroidMessage) -> LookAlikeReceiptPlan? {
        guard !message.tokens.isEmpty, let body = MockJSON.parse(message.body) else { return nil }
        // vivo: `extra.callback` names the receipt id the console made for the receipt
        // address (local mode's one stands for every app's); `callback.param` comes back
        // as each task's `param`, the accepted regIds as its `targets`.
        guard let extra = body["extra"], extra["callback"]?.stringValue?.isEmpty == false,
            let param = extra["callback.param"]?.stringValue, !param.isEmpty
        else { return nil }
        return .configured(
            tag: param,
            make: { configuration in
                let task: [String: Any] = [
                    "param": param, "targets": message.tokens.joined(separator: ","),
                    "ackTime": message.receivedAtMilliseconds, "ackType": 1,
                ]
                return [LookAlikeReceipts.jsonPost([message.messageID: task], to: configuration.url)]
            }
        )
    }

    static let vivoMaximumListTokens = 1000

    static func vivoAnswer(_ status: Int, _ result: Int, _ desc: String, extra: String = "") -> AndroidResponse {
        AndroidResponse(
            status: status, json: #"{"result":\#(result),"desc":\#(RequestLogLine.quoted(desc))\#(extra)}"#,
            service: .vivo, code: result == 0 ? nil : String(result))
    }

    /// vivo's documented answer to a server failure: HTTP 500 and this text.
    static func vivoServerError() -> AndroidResponse {
        var response = AndroidResponse(status: 500, json: "", service: .vivo, code: nil)
        response.body = Array("Internet server error!".utf8)
        response.headers = [
            ("content-type", "text/plain; charset=UTF-8"), ("content-length", String(response.body.count)),
        ]
        return response
    }

    // MARK: POST /message/auth

    func vivoAuth(_ request: LookAlikeRequest) -> AndroidResponse {
        guard request.method == "POST" else { return Self.vivoAnswer(405, 10050, "HTTP method 不合法") }
        let body = MockJSON.parse(request.body)
        func text(_ name: String) -> String? {
            switch body?[name] {
            case .string(let value): value.isEmpty ? nil : value
            case .number(let value): value
            default: nil
            }
        }
        guard let appID = text("appId") else { return Self.vivoAnswer(200, 10200, "appId 不能为空") }
        guard let appKey = text("appKey") else { return Self.vivoAnswer(200, 10201, "appKey 不能为空") }
        guard let timestamp = text("timestamp") else { return Self.vivoAnswer(200, 10202, "timestamp 不能为空") }
        guard let sign = text("sign") else { return Self.vivoAnswer(200, 10203, "sign 不能为空") }
        guard let app = apps.withLock({ $0[appID] }) else {
            return Self.vivoAnswer(200, 10205, "appId 不存在")
        }
        guard app.appKey == appKey else { return Self.vivoAnswer(200, 10206, "appKey 不合法") }
        guard let milliseconds = Int64(timestamp),
            abs(milliseconds - request.receivedAtMilliseconds) <= Self.signedTimestampWindowMilliseconds
        else { return Self.vivoAnswer(200, 10204, "timestamp 不合法") }
        // "字符串trim后拼接(appId+appKey+timestamp+appSecret)，然后通过MD5加密得到的值(字母小写)"
        let material = [appID, appKey, timestamp, app.appSecret].map(Self.trimmed).joined()
        guard sign == Hex.encode(Digest.md5(Array(material.utf8))) else {
            return Self.vivoAnswer(200, 10207, "sign 不合法")
        }
        let token = issueToken(
            prefix: "vivo.", principal: appKey, target: appID, nowMilliseconds: request.receivedAtMilliseconds)
        var response = Self.vivoAnswer(200, 0, "请求成功", extra: #","authToken":\#(RequestLogLine.quoted(token))"#)
        response.principal = appKey
        response.target = appID
        return response
    }

    static func trimmed(_ text: String) -> String {
        var slice = Substring(text)
        while slice.first?.isWhitespace == true { slice = slice.dropFirst() }
        while slice.last?.isWhitespace == true { slice = slice.dropLast() }
        return String(slice)
    }

    // MARK: Sends

    /// The app a send request's `authToken` (and body `appId`) stands for, or the refusal.
    private func vivoAuthenticate(_ request: LookAlikeRequest, body: MockJSON?) -> Result<
        AccessTokenStore.Issued, VivoRefusal
    > {
        guard let token = request.headers["authtoken"] ?? request.headers["auth_token"], !token.isEmpty,
            case .valid(let issued) = tokens.lookup(token, nowMilliseconds: request.receivedAtMilliseconds),
            issued.service == .vivo
        else {
            recorder.update(.vivo) { $0.authenticationFailures += 1 }
            return .failure(VivoRefusal(result: 10000, desc: "权限认证失败"))
        }
        switch body?["appId"] {
        case .string(let value) where value != issued.target, .number(let value) where value != issued.target:
            recorder.update(.vivo) { $0.authenticationFailures += 1 }
            return .failure(VivoRefusal(result: 10094, desc: "appId 与鉴权信息不一致"))
        default: return .success(issued)
        }
    }

    struct VivoRefusal: Error {
        var result: Int
        var desc: String
        var status = 200
    }

    private func vivoRefuse(_ refusal: VivoRefusal, tokens: Int = 0) -> AndroidResponse {
        recorder.update(.vivo) {
            $0.requestsRefused += 1
            $0.messagesRefused += tokens
        }
        return Self.vivoAnswer(refusal.status, refusal.result, refusal.desc)
    }

    /// The request-level answer to a fault, or nil when the tokens may be sorted.
    private func vivoFaultRefusal(_ fault: LookAlikeConfiguration.AndroidTokenFault?, classification: Int, tokens: Int)
        -> AndroidResponse?
    {
        guard let fault else { return nil }
        switch fault.kind {
        case .quotaExceeded:
            return classification == 1
                ? vivoRefuse(VivoRefusal(result: 10073, desc: "系统消息发送总量超出限制"), tokens: tokens)
                : vivoRefuse(VivoRefusal(result: 10070, desc: "发送总量超出限制"), tokens: tokens)
        case .unavailable: return vivoRefuse(VivoRefusal(result: 10040, desc: "系统繁忙，请稍后重试"), tokens: tokens)
        default:
            recorder.update(.vivo) {
                $0.requestsRefused += 1
                $0.messagesRefused += tokens
            }
            return Self.vivoServerError()
        }
    }

    func vivoSend(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse {
        guard request.method == "POST" else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "HTTP method 不合法", status: 405))
        }
        let body = request.bodyLength <= Self.bodyStorageLimit ? MockJSON.parse(request.body) : nil
        let issued: AccessTokenStore.Issued
        switch vivoAuthenticate(request, body: body) {
        case .success(let accepted): issued = accepted
        case .failure(let refusal): return vivoRefuse(refusal)
        }
        guard let body, body.members != nil else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "请求体不合法"))
        }
        guard let regID = body["regId"]?.stringValue, !regID.isEmpty else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "regId 不能为空"))
        }
        if let failure = VivoSchema.failure(of: body) {
            return vivoRefuse(VivoRefusal(result: 10050, desc: failure), tokens: 1)
        }
        let outcome = Self.sortBatch([regID], faults: faults)
        let classification = body["classification"]?.integerValue ?? 0
        if let refusal = vivoFaultRefusal(outcome.requestFault, classification: classification, tokens: 1) {
            return refusal
        }
        guard !outcome.accepted.isEmpty else {
            return vivoRefuse(VivoRefusal(result: 10302, desc: "regId不合法"), tokens: 1)
        }
        let taskID = vivoTasks.nextID()
        recorder.update(.vivo) { $0.messagesDelivered += 1 }
        var response = Self.vivoAnswer(200, 0, "请求成功", extra: #","taskId":"\#(taskID)""#)
        response.target = issued.target
        response.principal = issued.principal
        response.tokenCount = 1
        acceptedPush(
            ReceivedAndroidMessage(
                service: .vivo, target: issued.target, principal: issued.principal, tokens: [regID], refusedTokens: [],
                messageID: taskID, body: request.body, connectionID: request.connectionID,
                streamID: request.streamID, timestampHeader: nil, receivedAtMilliseconds: request.receivedAtMilliseconds
            ))
        return response
    }

    func vivoSaveListPayload(_ request: LookAlikeRequest) -> AndroidResponse {
        guard request.method == "POST" else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "HTTP method 不合法", status: 405))
        }
        let body = request.bodyLength <= Self.bodyStorageLimit ? MockJSON.parse(request.body) : nil
        let issued: AccessTokenStore.Issued
        switch vivoAuthenticate(request, body: body) {
        case .success(let accepted): issued = accepted
        case .failure(let refusal): return vivoRefuse(refusal)
        }
        guard let body, body.members != nil else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "请求体不合法"))
        }
        if let failure = VivoSchema.failure(of: body) { return vivoRefuse(VivoRefusal(result: 10050, desc: failure)) }
        let taskID = vivoTasks.save(
            .init(
                appID: issued.target, classification: body["classification"]?.integerValue ?? 0, body: request.body))
        var response = Self.vivoAnswer(200, 0, "请求成功", extra: #","taskId":"\#(taskID)""#)
        response.target = issued.target
        response.principal = issued.principal
        return response
    }

    func vivoPushToList(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse {
        guard request.method == "POST" else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "HTTP method 不合法", status: 405))
        }
        let body = request.bodyLength <= Self.bodyStorageLimit ? MockJSON.parse(request.body) : nil
        let issued: AccessTokenStore.Issued
        switch vivoAuthenticate(request, body: body) {
        case .success(let accepted): issued = accepted
        case .failure(let refusal): return vivoRefuse(refusal)
        }
        guard let body, body.members != nil else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "请求体不合法"))
        }
        guard let regIDs = Self.tokenList(body["regIds"]), (2...Self.vivoMaximumListTokens).contains(regIDs.count)
        else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "regIds 个数必须大于等于2,小于等于1000"))
        }
        guard let requestID = body["requestId"]?.stringValue, !requestID.isEmpty, requestID.utf8.count <= 64 else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "requestId 不合法"), tokens: regIDs.count)
        }
        guard let taskID = body["taskId"]?.stringValue ?? body["taskId"].flatMap({ $0.integerValue.map(String.init) }),
            let task = vivoTasks.task(taskID), task.appID == issued.target
        else {
            return vivoRefuse(VivoRefusal(result: 10050, desc: "taskId 不合法"), tokens: regIDs.count)
        }
        let outcome = Self.sortBatch(regIDs, faults: faults)
        if let refusal = vivoFaultRefusal(
            outcome.requestFault, classification: task.classification, tokens: regIDs.count)
        {
            return refusal
        }
        recorder.update(.vivo) {
            $0.messagesRefused += outcome.illegal.count
            $0.messagesDelivered += outcome.accepted.count
        }
        let invalidUsers = outcome.illegal.map { #"{"status":1,"userid":\#(RequestLogLine.quoted($0))}"# }
        var response = Self.vivoAnswer(
            200, 0, "请求成功",
            extra:
                #","requestId":\#(RequestLogLine.quoted(requestID)),"invalidUsers":[\#(invalidUsers.joined(separator: ","))]"#
        )
        response.target = issued.target
        response.principal = issued.principal
        response.tokenCount = regIDs.count
        if !outcome.accepted.isEmpty {
            acceptedPush(
                ReceivedAndroidMessage(
                    service: .vivo, target: issued.target, principal: issued.principal, tokens: outcome.accepted,
                    refusedTokens: outcome.illegal, messageID: taskID, body: task.body,
                    connectionID: request.connectionID, streamID: request.streamID, timestampHeader: nil,
                    receivedAtMilliseconds: request.receivedAtMilliseconds))
        }
        return response
    }
}

/// The `saveListPayload` bodies `pushToList` refers to by `taskId`; the oldest go beyond
/// `capacity` (a client pushes a task right after saving it).
final class VivoTaskStore: Sendable {
    struct Task: Sendable {
        var appID: String
        var classification: Int
        var body: [UInt8]
    }

    private struct State {
        var tasks: [String: Task] = [:]
        var order: [String] = []
        var orderStart = 0
        var nextID = Int.random(in: 10_000_000...19_999_999)
    }

    private let state = Mutex(State())
    private let capacity = 10_000

    /// A fresh numeric task id (vivo's are digits, e.g. "12139732"), not remembered.
    func nextID() -> String {
        state.withLock { state in
            state.nextID += 1
            return String(state.nextID)
        }
    }

    func save(_ task: Task) -> String {
        state.withLock { state in
            state.nextID += 1
            let id = String(state.nextID)
            state.tasks[id] = task
            state.order.append(id)
            if state.order.count - state.orderStart > capacity {
                state.tasks[state.order[state.orderStart]] = nil
                state.orderStart += 1
                if state.orderStart > capacity {
                    state.order.removeFirst(state.orderStart)
                    state.orderStart = 0
                }
            }
            return id
        }
    }

    func task(_ id: String) -> Task? { state.withLock { $0.tasks[id] } }
}

/// vivo's checks of a message (`/message/send` and `/message/saveListPayload`), after the
/// field table of its server document (§10 of the reference). Every refusal is `10050` with a
/// text naming the field (vivo's own codes for these are not public).
enum VivoSchema {
    static func failure(of body: MockJSON) -> String? {
        func int(_ name: String, required: Bool, _ allowed: ClosedRange<Int>) -> String? {
            guard let value = body[name], !value.isNull else { return required ? "\(name) 不能为空" : nil }
            guard case .number = value, let number = value.integerValue, allowed.contains(number) else {
                return "\(name) 不合法"
            }
            return nil
        }
        func string(_ name: String, required: Bool, weightedLimit: Int) -> String? {
            guard let value = body[name], !value.isNull else { return required ? "\(name) 不能为空" : nil }
            guard let text = value.stringValue else { return "\(name) 不合法" }
            if required && text.isEmpty { return "\(name) 不能为空" }
            return weightedLength(text) > weightedLimit ? "\(name) 长度不合法" : nil
        }
        if let failure = int("notifyType", required: true, 1...4) ?? string("title", required: true, weightedLimit: 40)
            ?? string("content", required: true, weightedLimit: 100)
            ?? int("timeToLive", required: false, 900...604_800) ?? int("skipType", required: true, 1...4)
            ?? int("classification", required: false, 0...1) ?? int("pushMode", required: false, 0...1)
            ?? string("requestId", required: true, weightedLimit: 64)
        {
            return failure
        }
        if let network = body["networkType"], !network.isNull, network.integerValue != -1 && network.integerValue != 1 {
            return "networkType 不合法"
        }
        let skipType = body["skipType"]?.integerValue ?? 1
        if skipType != 1 {
            guard let content = body["skipContent"]?.stringValue, !content.isEmpty else { return "skipContent 不能为空" }
            if content.count > (skipType == 2 ? 1000 : 1024) { return "skipContent 长度不合法" }
        }
        for name in ["clientCustomMap", "extra"] {
            guard let map = body[name], !map.isNull else { continue }
            guard let members = map.members, members.allSatisfy({ $0.value.stringValue != nil }) else {
                return "\(name) 不合法"
            }
        }
        // Receipts (回执, "4.高级特性extra"): `callback` required, at most 128; `callback.param` at most 64.
        if let extra = body["extra"], !extra.isNull {
            guard let callback = extra["callback"]?.stringValue, !callback.isEmpty else { return "extra.callback 不能为空" }
            if callback.count > 128 { return "extra.callback 长度不合法" }
            if (extra["callback.param"]?.stringValue?.count ?? 0) > 64 { return "extra.callback.param 长度不合法" }
        }
        return nil
    }

    /// vivo's length rule: "一个汉字等于两个英文字符，一个表情占一个字符".
    static func weightedLength(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { total, scalar in
            total + (scalar.isASCII || scalar.properties.isEmojiPresentation ? 1 : 2)
        }
    }
}

extension LookAlikeConfiguration {
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

    /// vivo Push apps (`POST /message/auth`, then `/message/send`, `/message/saveListPayload`
    /// and `/message/pushToList`).
    public var vivoApps: [VivoApp] {
        get { lookAlikeList("vivoApps", of: VivoApp.self) }
        set { setLookAlikeList("vivoApps", newValue) }
    }
}

extension LookAlikeLocalSetup {
    /// A vivo Push app (numeric AppID, AppKey, AppSecret).
    public var vivoApp: LookAlikeConfiguration.VivoApp {
        lookAlikeMaterial("vivoApp", as: LookAlikeConfiguration.VivoApp.self)
    }

    /// The receipt id local mode's vivo look-alike stands for: as if the operator had added the
    /// gateway's receipt address in vivo's console (the look-alike posts to each app's).
    public static let vivoReceiptID = "tuisong-local"
}

extension LookAlikeServer {
    /// Grants `authToken`s to this vivo app from now on.
    public func trustVivoApp(_ app: LookAlikeConfiguration.VivoApp) {
        (lookAlike(.vivo) as? VivoLookAlike)?.trust(app)
    }
}

extension AndroidMockStatistics {
    public var vivo: AndroidServiceStatistics {
        get { self[.vivo] }
        set { self[.vivo] = newValue }
    }
}
