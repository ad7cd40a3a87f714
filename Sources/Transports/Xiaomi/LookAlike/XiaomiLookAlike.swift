import Foundation
import Synchronization
import TuisongLookAlikeKit

extension AndroidPushService {
    /// Xiaomi MiPush (server API v3, form-encoded, AppSecret as the key).
    public static let xiaomi = AndroidPushService("xiaomi")
}

/// The look-alike of Xiaomi MiPush: `POST /v3/message/regid`, form-encoded, the AppSecret as the
/// key of every request, up to 1000 registration ids a request, answering as
/// `docs/reference/android.md` §8 says (and, where the sources are silent, as it says the
/// look-alike assumes). Token faults: `unregistered` and `invalidArgument` put the id in
/// `bad_regids` (all of them: `20301`); `quotaExceeded` is `200001` (the daily limit),
/// `unavailable` `10002`, `internal` HTTP 500 `10001`. Receipts: to the push's own
/// `extra.callback` URL.
package final class XiaomiLookAlike: LookAlikeService {
    package static let declaration = LookAlikeDeclaration(
        service: .xiaomi, summary: "Xiaomi MiPush (POST /v3/message/regid with Authorization: key=<AppSecret>)",
        configurationKeys: [("xiaomiApps", #"{"appSecret","packageName"}"#)], setupKeys: ["xiaomiApp"],
        makeSetup: { setup in
            let base64 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/"
            try setup.setLookAlikeMaterial(
                "xiaomiApp",
                LookAlikeConfiguration.XiaomiApp(
                    appSecret: XiaomiLookAlike.randomString(count: 22, alphabet: base64) + "==",
                    packageName: setup.bundleID))
        },
        configure: { configuration, setup in configuration.xiaomiApps.append(setup.xiaomiApp) },
        start: { host, configuration in try XiaomiLookAlike(host: host, configuration: configuration) },
        fallbackCredential: { setup, _ in
            LookAlikeCredential(
                vendorAppID: setup.xiaomiApp.packageName, clientID: "0", secret: Array(setup.xiaomiApp.appSecret.utf8))
        },
        banner: { setup, base, _ in
            [
                "send_url": base + "/v3/message/regid", "app_secret": setup.xiaomiApp.appSecret,
                "package_name": setup.xiaomiApp.packageName,
            ]
        })

    package let service = AndroidPushService.xiaomi
    package let host: LookAlikeHost
    /// The apps it accepts sends of, by AppSecret (the key of every request); growable at run time.
    private let apps: Mutex<[String: LookAlikeConfiguration.XiaomiApp]>

    init(host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        self.host = host
        var apps: [String: LookAlikeConfiguration.XiaomiApp] = [:]
        for app in try configuration.lookAlikeSetting("xiaomiApps", as: [LookAlikeConfiguration.XiaomiApp].self) ?? []
        where apps[app.appSecret] == nil {
            apps[app.appSecret] = app
        }
        self.apps = Mutex(apps)
    }

    /// Accepts sends keyed with this app's AppSecret from now on.
    func trust(_ app: LookAlikeConfiguration.XiaomiApp) {
        apps.withLock { $0[app.appSecret] = app }
    }

    package func trust(vendorAppID: String, clientID: String, secret: [UInt8]) {
        trust(.init(appSecret: String(decoding: secret, as: UTF8.self), packageName: vendorAppID))
    }

    package func answer(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse? {
        switch request.pathWithoutQuery {
        case "/v3/message/regid", "/v2/message/regid": xiaomiSend(request, faults: faults)
        default: nil
        }
    }

    /// A form whose `data` is JSON keyed by Xiaomi's message id: `param`, `type` (1 arrived),
    /// `targets` (the accepted regIds), `jobkey`, `barStatus`, `timestamp`; to the push's URL.
    package func receipts(for message: ReceivedAndroidMessage) -> LookAlikeReceiptPlan? {
        guard !message.tokens.isEmpty else { return nil }
        // A form whose `data` is JSON keyed by Xiaomi's message id: `param`, `type` (1
        // arrived), `targets` (the accepted regIds), `jobkey`, `barStatus`, `timestamp`.
        guard let form = FormBody.parse(message.body), let url = form["extra.callback"], !url.isEmpty,
            let param = form["extra.callback.param"], (Int(form["extra.callback.type"] ?? "") ?? 0) & 1 == 1
        else { return nil }
        let entry: [String: Any] = [
            "param": param, "type": 1, "targets": message.tokens.joined(separator: ","),
            "jobkey": form["jobkey"] ?? "", "barStatus": "Enable", "timestamp": message.receivedAtMilliseconds,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: [message.messageID: entry])) ?? Data()
        let body = "data=" + LookAlikeReceipts.formEscaped(String(decoding: data, as: UTF8.self))
        return .direct([
            LookAlikeReceiptPost(
                url: url, headers: [(name: "Content-Type", value: "application/x-www-form-urlencoded")],
                body: Array(body.utf8))
        ])
    }

    /// Server default and maximum of `time_to_live`: two weeks, in milliseconds.
    static let xiaomiMaximumTimeToLive = 1_209_600_000

    func xiaomiSend(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse {
        let traceID = "Xcm" + Self.randomAlphanumerics(19)
        func answer(_ status: Int, _ json: String, code: Int, target: String?) -> AndroidResponse {
            var response = AndroidResponse(
                status: status, json: json, service: .xiaomi, code: code == 0 ? nil : String(code))
            response.target = target
            return response
        }
        func refuse(_ code: Int, _ reason: String, _ description: String, status: Int = 200, tokens: Int = 0)
            -> AndroidResponse
        {
            recorder.update(.xiaomi) {
                $0.requestsRefused += 1
                $0.messagesRefused += tokens
            }
            let json =
                #"{"result":"error","reason":\#(RequestLogLine.quoted(reason)),"trace_id":"\#(traceID)","code":\#(code),"description":\#(RequestLogLine.quoted(description))}"#
            return answer(status, json, code: code, target: nil)
        }
        guard request.method == "POST" else {
            return refuse(10017, "HTTP method not allowed", "参数值非法", status: 405)
        }
        guard let key = Self.xiaomiKey(request.authorization),
            let app = apps.withLock({ $0[key] })
        else {
            recorder.update(.xiaomi) { $0.authenticationFailures += 1 }
            return refuse(21301, "Authentication failed: invalid Authorization key", "认证失败")
        }
        guard request.bodyLength <= Self.bodyStorageLimit, let form = FormBody.parse(request.body) else {
            return refuse(10017, "the body is not application/x-www-form-urlencoded", "参数值非法")
        }
        // Clients join ids with "," and some leave a trailing one.
        let ids = (form["registration_id"] ?? "").split(separator: ",").map(String.init)
        guard !ids.isEmpty else {
            return refuse(
                21305, "Must input one of: regid/topic/alias/userAccount/miid/geoId/groupId/region", "缺少必要的参数")
        }
        func invalid(_ reason: String) -> AndroidResponse { refuse(10017, reason, "参数值非法", tokens: ids.count) }
        func missing(_ reason: String) -> AndroidResponse { refuse(21305, reason, "缺少必要的参数", tokens: ids.count) }
        guard ids.count <= Self.maximumBatchTokens else {
            return invalid("registration_id holds at most \(Self.maximumBatchTokens) ids")
        }
        guard let packages = form["restricted_package_name"], !packages.isEmpty else {
            return missing("restricted_package_name is required")
        }
        guard packages.split(separator: ",").contains(where: { $0 == app.packageName }) else {
            return invalid("restricted_package_name \(packages) does not belong to the app")
        }
        if let failure = XiaomiSchema.failure(of: form) {
            return failure.missing ? missing(failure.reason) : invalid(failure.reason)
        }

        let outcome = Self.sortBatch(ids, faults: faults)
        if let fault = outcome.requestFault {
            switch fault.kind {
            case .quotaExceeded:
                return refuse(200001, "The daily push limit of the app is reached", "超过日推送限额", tokens: ids.count)
            case .unavailable: return refuse(10002, "Service is busy, try again later", "服务暂停", tokens: ids.count)
            default: return refuse(10001, "System error", "系统错误", status: 500, tokens: ids.count)
            }
        }
        guard !outcome.accepted.isEmpty else {
            return refuse(20301, "Invalid regid: every registration_id is illegal", "非法的regid", tokens: ids.count)
        }
        let messageID = "sdm" + Self.randomAlphanumerics(19)
        recorder.update(.xiaomi) {
            $0.messagesRefused += outcome.illegal.count
            $0.messagesDelivered += outcome.accepted.count
        }
        let badIDs =
            outcome.illegal.isEmpty
            ? "" : #","bad_regids":\#(RequestLogLine.quoted(outcome.illegal.joined(separator: ",")))"#
        let json =
            #"{"result":"ok","trace_id":"\#(traceID)","code":0,"data":{"id":"\#(messageID)"\#(badIDs)},"description":"成功","info":"Received push messages for \#(outcome.accepted.count) REGID"}"#
        var response = answer(200, json, code: 0, target: app.packageName)
        response.principal = app.packageName
        response.tokenCount = ids.count
        acceptedPush(
            ReceivedAndroidMessage(
                service: .xiaomi, target: app.packageName, principal: app.packageName, tokens: outcome.accepted,
                refusedTokens: outcome.illegal, messageID: messageID, body: request.body,
                connectionID: request.connectionID, streamID: request.streamID, timestampHeader: nil,
                receivedAtMilliseconds: request.receivedAtMilliseconds))
        return response
    }

    /// The AppSecret of `Authorization: key=<AppSecret>`.
    static func xiaomiKey(_ authorization: String?) -> String? {
        guard let authorization, authorization.hasPrefix("key=") else { return nil }
        let key = String(authorization.dropFirst(4))
        return key.isEmpty ? nil : key
    }

    static func randomAlphanumerics(_ count: Int) -> String {
        randomString(
            count: count, alphabet: "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    }
}

/// Xiaomi's field checks on the form of `/v3/message/regid` (§8 of the reference).
enum XiaomiSchema {
    struct Failure {
        /// A required field is absent (21305) rather than malformed (10017).
        var missing: Bool
        var reason: String
    }

    static func failure(of form: [String: String]) -> Failure? {
        func invalid(_ reason: String) -> Failure { Failure(missing: false, reason: reason) }
        func present(_ name: String) -> String? {
            guard let value = form[name], !value.isEmpty else { return nil }
            return value
        }
        let passThrough = form["pass_through"] ?? "0"
        guard passThrough == "0" || passThrough == "1" else { return invalid("pass_through must be 0 or 1") }
        if passThrough == "0" {
            for name in ["title", "description"] where present(name) == nil {
                return Failure(missing: true, reason: "\(name) is required for a notification message")
            }
        } else if present("payload") == nil {
            return Failure(missing: true, reason: "payload is required for a pass-through message")
        }
        if let text = form["notify_type"] {
            guard let value = Int(text), (-1...7).contains(value) else {
                return invalid("notify_type must be -1 or a sum of 1 (sound), 2 (vibrate) and 4 (lights)")
            }
        }
        if let text = form["time_to_live"] {
            guard let value = Int(text), (1...XiaomiLookAlike.xiaomiMaximumTimeToLive).contains(value) else {
                return invalid("time_to_live is milliseconds, 1…\(XiaomiLookAlike.xiaomiMaximumTimeToLive)")
            }
        }
        if let text = form["notify_id"] {
            guard let value = Int(text), value >= 0 else { return invalid("notify_id must be a non-negative integer") }
        }
        if let text = form["extra.notify_foreground"], text != "0" && text != "1" {
            return invalid("extra.notify_foreground must be 0 or 1")
        }
        // Receipts (回执): `callback.param` at most 64 characters, `callback.type` a bitmask.
        if let param = form["extra.callback.param"], param.count > 64 {
            return invalid("extra.callback.param holds at most 64 characters")
        }
        if let type = form["extra.callback.type"], Int(type).map({ $0 > 0 }) != true {
            return invalid("extra.callback.type must be a positive bitmask (1 arrived, 2 clicked, 16 invalid target)")
        }
        if let text = form["extra.notify_effect"] {
            switch text {
            case "1": break
            case "2" where present("extra.intent_uri") == nil:
                return invalid("extra.notify_effect 2 needs extra.intent_uri")
            case "3" where present("extra.web_uri") == nil:
                return invalid("extra.notify_effect 3 needs extra.web_uri")
            case "2", "3": break
            default: return invalid("extra.notify_effect must be 1, 2 or 3")
            }
        }
        return nil
    }
}

extension LookAlikeConfiguration {
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

    /// Xiaomi MiPush apps (`POST /v3/message/regid` with `Authorization: key=<appSecret>`).
    public var xiaomiApps: [XiaomiApp] {
        get { lookAlikeList("xiaomiApps", of: XiaomiApp.self) }
        set { setLookAlikeList("xiaomiApps", newValue) }
    }
}

extension LookAlikeLocalSetup {
    /// A Xiaomi MiPush app (package `<bundleID>`: the set-up's app).
    public var xiaomiApp: LookAlikeConfiguration.XiaomiApp {
        lookAlikeMaterial("xiaomiApp", as: LookAlikeConfiguration.XiaomiApp.self)
    }
}

extension LookAlikeServer {
    /// Accepts sends keyed with this Xiaomi app's AppSecret from now on.
    public func trustXiaomiApp(_ app: LookAlikeConfiguration.XiaomiApp) {
        (lookAlike(.xiaomi) as? XiaomiLookAlike)?.trust(app)
    }
}

extension AndroidMockStatistics {
    public var xiaomi: AndroidServiceStatistics {
        get { self[.xiaomi] }
        set { self[.xiaomi] = newValue }
    }
}
