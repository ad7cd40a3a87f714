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
        default:
            return nil
        }
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
        guard let sink = receiptSink.withLock({ $0 }), let plan = LookAlikeReceipts.plan(for: message) else { return }
        Task {
            guard let configuration = await sink.configuration(service: message.service, tag: plan.tag) else {
                return
            }
            for post in plan.make(configuration) { await sink.post(post) }
        }
    }
}
