import Foundation
import Synchronization
internal import TuisongCrypto

/// The receipt configuration an operator enters in a service's console (AppGallery Connect's
/// callback address, user name and key), as local mode's look-alike of the service holds it.
public struct LookAlikeReceiptConfiguration: Sendable, Equatable {
    /// Where the service posts its receipts.
    public var url: String
    /// The callback user name and key the service signs `X-HUAWEI-CALLBACK-ID` with.
    public var callbackUserName: String
    public var callbackKey: String

    public init(url: String, callbackUserName: String, callbackKey: String) {
        self.url = url
        self.callbackUserName = callbackUserName
        self.callbackKey = callbackKey
    }
}

/// One receipt POST a look-alike makes, shaped and signed as its service does.
public struct LookAlikeReceiptPost: Sendable {
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
}

/// What local mode's look-alikes need to send delivery receipts as the services do (the gateway
/// provides it: `APNsMockServer.sendReceipts(to:)`). A real service knows its receipt
/// configuration from its console; local mode's look-alikes stand in for every app at once, so
/// they ask which configuration the push with `tag` belongs to.
public protocol LookAlikeReceiptSink: Sendable {
    /// The receipt configuration of the app that sent the push tagged `tag` on `service`
    /// (nil: none, no receipt is sent).
    func configuration(service: AndroidPushService, tag: String) async -> LookAlikeReceiptConfiguration?
    /// Sends one receipt POST (its answer is the sink's business: a service retries, a look-alike does not).
    func post(_ post: LookAlikeReceiptPost) async
}

/// The receipts a look-alike sends for an accepted push: every accepted token arrived, at the
/// moment the push was accepted. Services whose receipts this build does not imitate send none.
enum LookAlikeReceipts {
    /// What a receipt of `message` needs: the tag the send carried, and how to make the POSTs.
    static func plan(for message: ReceivedAndroidMessage) -> (
        tag: String, make: (LookAlikeReceiptConfiguration) -> [LookAlikeReceiptPost]
    )? {
        guard !message.tokens.isEmpty, let body = MockJSON.parse(message.body) else { return nil }
        switch message.service {
        case .huawei:
            // Huawei V1: `android.bi_tag` comes back as each status's `biTag`; up to 1,000 a POST.
            guard let tag = body["message"]?["android"]?["bi_tag"]?.stringValue, !tag.isEmpty else { return nil }
            return (
                tag,
                { configuration in
                    chunks(message.tokens, of: 1000).map { tokens in
                        let statuses: [[String: Any]] = tokens.map { token in
                            [
                                "biTag": tag, "appid": message.target, "token": token, "status": 0,
                                "timestamp": message.receivedAtMilliseconds, "requestId": message.messageID,
                            ]
                        }
                        return signedPost(["statuses": statuses], configuration)
                    }
                }
            )
        case .harmony:
            // HarmonyOS V2: `pushOptions.biTag` back in each status, `deliveryStatus {result,
            // timestamp}`; up to 100 a POST.
            guard let tag = body["pushOptions"]?["biTag"]?.stringValue, !tag.isEmpty else { return nil }
            return (
                tag,
                { configuration in
                    chunks(message.tokens, of: 100).map { tokens in
                        let statuses: [[String: Any]] = tokens.map { token in
                            [
                                "token": token, "pushType": message.harmonyPushType ?? 0,
                                "appPackageName": "tuisong.local", "biTag": tag, "requestId": message.messageID,
                                "deliveryStatus": ["result": 0, "timestamp": message.receivedAtMilliseconds],
                            ]
                        }
                        return signedPost(["statuses": statuses], configuration)
                    }
                }
            )
        case .vivo:
            // vivo: `extra.callback` names the receipt id the console made for the receipt
            // address (local mode's one stands for every app's); `callback.param` comes back
            // as each task's `param`, the accepted regIds as its `targets`.
            guard let extra = body["extra"], extra["callback"]?.stringValue?.isEmpty == false,
                let param = extra["callback.param"]?.stringValue, !param.isEmpty
            else { return nil }
            return (
                param,
                { configuration in
                    let task: [String: Any] = [
                        "param": param, "targets": message.tokens.joined(separator: ","),
                        "ackTime": message.receivedAtMilliseconds, "ackType": 1,
                    ]
                    return [jsonPost([message.messageID: task], to: configuration.url)]
                }
            )
        default:
            return nil
        }
    }

    /// The receipt POSTs of a service whose pushes name the receipt URL themselves (Xiaomi's
    /// `extra.callback`, OPPO's `call_back_url`): nothing to look up, nothing signed.
    static func posts(for message: ReceivedAndroidMessage) -> [LookAlikeReceiptPost] {
        guard !message.tokens.isEmpty else { return [] }
        switch message.service {
        case .xiaomi:
            // A form whose `data` is JSON keyed by Xiaomi's message id: `param`, `type` (1
            // arrived), `targets` (the accepted regIds), `jobkey`, `barStatus`, `timestamp`.
            guard let form = FormBody.parse(message.body), let url = form["extra.callback"], !url.isEmpty,
                let param = form["extra.callback.param"], (Int(form["extra.callback.type"] ?? "") ?? 0) & 1 == 1
            else { return [] }
            let entry: [String: Any] = [
                "param": param, "type": 1, "targets": message.tokens.joined(separator: ","),
                "jobkey": form["jobkey"] ?? "", "barStatus": "Enable", "timestamp": message.receivedAtMilliseconds,
            ]
            let data = (try? JSONSerialization.data(withJSONObject: [message.messageID: entry])) ?? Data()
            let body = "data=" + formEscaped(String(decoding: data, as: UTF8.self))
            return [
                LookAlikeReceiptPost(
                    url: url, headers: [(name: "Content-Type", value: "application/x-www-form-urlencoded")],
                    body: Array(body.utf8))
            ]
        case .oppo:
            // One event per message that asked for receipts, grouped into a POST per URL:
            // `messageId`, `appId`, `taskId`, `registrationIds`, `eventTime`, `param`, `eventType`.
            guard let form = FormBody.parse(message.body),
                let parsed = MockJSON.parse(Array((form["messages"] ?? form["message"] ?? "").utf8))
            else { return [] }
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
            return order.map { jsonPost(events[$0] ?? [], to: $0) }
        default:
            return []
        }
    }

    static func jsonPost(_ object: Any, to url: String) -> LookAlikeReceiptPost {
        let body = (try? JSONSerialization.data(withJSONObject: object)).map { Array($0) } ?? []
        return LookAlikeReceiptPost(url: url, headers: [(name: "Content-Type", value: "application/json")], body: body)
    }

    /// `application/x-www-form-urlencoded` escaping of a value.
    static func formEscaped(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "*"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                output += String(format: "%%%02X", byte)
            }
        }
        return output
    }

    static func chunks(_ tokens: [String], of size: Int) -> [ArraySlice<String>] {
        stride(from: 0, to: tokens.count, by: size).map { tokens[$0..<min($0 + size, tokens.count)] }
    }

    /// A JSON POST signed with `X-HUAWEI-CALLBACK-ID` as Huawei's receipt API documents it:
    /// value = Base64(HMAC-SHA256(callback key, timestamp + nonce + callback user name)).
    static func signedPost(_ object: [String: Any], _ configuration: LookAlikeReceiptConfiguration)
        -> LookAlikeReceiptPost
    {
        let body = (try? JSONSerialization.data(withJSONObject: object)).map { Array($0) } ?? []
        let timestamp = String(Int64(Date().timeIntervalSince1970 * 1000))
        let nonce = UUID().uuidString.lowercased()
        let value = Data(
            HMAC.sha256(
                key: Array(configuration.callbackKey.utf8),
                message: Array((timestamp + nonce + configuration.callbackUserName).utf8))
        ).base64EncodedString()
        return LookAlikeReceiptPost(
            url: configuration.url,
            headers: [
                (name: "Content-Type", value: "application/json"),
                (name: "X-HUAWEI-CALLBACK-ID", value: "timestamp=\(timestamp);nonce=\(nonce);value=\(value)"),
            ], body: body)
    }
}

extension AndroidServices {
    /// Records an accepted push and, when a sink is set, sends its receipts in the background
    /// (a real service sends them later than its answer, too).
    func acceptedPush(_ message: ReceivedAndroidMessage) {
        recorder.record(message)
        guard let sink = receiptSink.withLock({ $0 }) else { return }
        let direct = LookAlikeReceipts.posts(for: message)
        if !direct.isEmpty {
            Task { for post in direct { await sink.post(post) } }
            return
        }
        guard let plan = LookAlikeReceipts.plan(for: message) else { return }
        Task {
            guard let configuration = await sink.configuration(service: message.service, tag: plan.tag) else {
                return
            }
            for post in plan.make(configuration) { await sink.post(post) }
        }
    }
}
