import Foundation
import Synchronization
import TuisongCore
internal import TuisongCrypto

/// The receipt configuration an operator enters in a service's console (a callback address, user
/// name and key), as local mode's look-alike of the service holds it.
public struct LookAlikeReceiptConfiguration: Sendable, Equatable {
    /// Where the service posts its receipts.
    public var url: String
    /// The callback user name and key the service signs its receipts with.
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

    package init(url: String, headers: [(name: String, value: String)], body: [UInt8]) {
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What local mode's look-alikes need to send delivery receipts as the services do (the gateway
/// provides it: `LookAlikeServer.sendReceipts(to:)`). A real service knows its receipt
/// configuration from its console; local mode's look-alikes stand in for every app at once, so
/// they ask which configuration the push with `tag` belongs to.
public protocol LookAlikeReceiptSink: Sendable {
    /// The receipt configuration of the app that sent the push tagged `tag` on `service`
    /// (nil: none, no receipt is sent).
    func configuration(service: AndroidPushService, tag: String) async -> LookAlikeReceiptConfiguration?
    /// Sends one receipt POST (its answer is the sink's business: a service retries, a look-alike does not).
    func post(_ post: LookAlikeReceiptPost) async
}

/// The receipts an accepted push asks for, as its look-alike declares them
/// (`LookAlikeService.receipts(for:)`).
public enum LookAlikeReceiptPlan {
    /// POSTs to URLs the push named itself: nothing to look up, nothing signed.
    case direct([LookAlikeReceiptPost])
    /// POSTs to the app's receipt configuration (the sink finds it from `tag`, the tag the
    /// push carried), made by `make`.
    case configured(tag: String, make: @Sendable (LookAlikeReceiptConfiguration) -> [LookAlikeReceiptPost])
}

/// What the look-alikes' receipts share.
package enum LookAlikeReceipts {
    package static func jsonPost(_ object: Any, to url: String) -> LookAlikeReceiptPost {
        let body = (try? JSONSerialization.data(withJSONObject: object)).map { Array($0) } ?? []
        return LookAlikeReceiptPost(url: url, headers: [(name: "Content-Type", value: "application/json")], body: body)
    }

    /// `application/x-www-form-urlencoded` escaping of a value.
    package static func formEscaped(_ text: String) -> String {
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

    /// The receipts of a Push Kit V1 service (Huawei's; Honor's as inferred) for an accepted
    /// push that carried `tag`: status 0 for every token, up to 1,000 a POST, signed in `header`
    /// under the app's receipt configuration.
    package static func pushKitV1(_ message: ReceivedAndroidMessage, tag: String, header: String)
        -> LookAlikeReceiptPlan
    {
        .configured(
            tag: tag,
            make: { configuration in
                let status: [String: JSONValue] = [
                    "biTag": .string(tag), "appid": .string(message.target), "status": 0,
                    "timestamp": .int(message.receivedAtMilliseconds), "requestId": .string(message.messageID),
                ]
                return chunks(message.tokens, of: 1000).map { tokens in
                    signedPost(statusesBody(tokens, template: status), configuration, header: header)
                }
            }
        )
    }

    package static func chunks(_ tokens: [String], of size: Int) -> [ArraySlice<String>] {
        stride(from: 0, to: tokens.count, by: size).map { tokens[$0..<min($0 + size, tokens.count)] }
    }

    /// `{"statuses":[…]}` with one status per token: `template` with its `"token"` member set
    /// to each token. The template is serialized once and each status is its text with the
    /// token written in, so a POST of 1,000 statuses costs 1,000 copies, not 1,000 dictionaries
    /// through `JSONSerialization` (which made the look-alike cost more per receipt than the
    /// gateway recording it).
    package static func statusesBody(_ tokens: some Collection<String>, template: [String: JSONValue]) -> [UInt8] {
        var withMarker = template
        withMarker["token"] = .string(tokenMarker)
        let text = JSONValue.object(withMarker).serialized()
        var marker: [UInt8] = []
        JSONValue.writeString(tokenMarker, into: &marker)
        guard let at = text.indices.first(where: { text[$0...].starts(with: marker) }) else {
            preconditionFailure("the template's token is written as the marker")
        }
        let before = text[..<at]
        let after = text[(at + marker.count)...]
        var body: [UInt8] = []
        body.reserveCapacity(16 + tokens.count * (text.count + 160))
        body.append(contentsOf: #"{"statuses":["#.utf8)
        for (index, token) in tokens.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: before)
            JSONValue.writeString(token, into: &body)
            body.append(contentsOf: after)
        }
        body.append(contentsOf: "]}".utf8)
        return body
    }

    /// Stands for the token in a serialized template (a control character: escaped, so its
    /// text occurs nowhere else).
    private static let tokenMarker = "\u{1}tuisong-token\u{1}"

    /// A JSON POST of `body` signed in the header `header` with the callback user name and key:
    /// `timestamp=<ms>;nonce=<uuid>;value=<Base64(HMAC-SHA256(key, timestamp + nonce + user name))>`.
    package static func signedPost(
        _ body: [UInt8], _ configuration: LookAlikeReceiptConfiguration, header: String
    ) -> LookAlikeReceiptPost {
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
                (name: header, value: "timestamp=\(timestamp);nonce=\(nonce);value=\(value)"),
            ], body: body)
    }
}
