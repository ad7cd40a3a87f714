import Foundation
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

/// The body of Huawei Push Kit's `POST /v1/{appId}/messages:send` for up to 1,000 tokens,
/// rendered from the push's `PushContent` and the message's headers (docs/reference/
/// android.md, Huawei). Plain Swift, unit-tested without sockets.
public enum HuaweiMessage {
    /// Huawei's limit on `message.token`.
    static let maxTokens = 1000

    /// A message rendered once for every chunk of tokens of a push: only `token` differs,
    /// written into the rendered bytes (the serialisation sorts keys, so `token` is the
    /// message's last member and `validate_only` follows the message).
    public struct Template: Sendable {
        /// `{"message":{…` up to the token member.
        private let head: [UInt8]

        /// - Parameter badgeClass: the app's launcher activity (`badge.class`): Huawei shows
        ///   a badge number only with it.
        /// - Parameter biTag: Tuisong's tag of the message, which Huawei returns in its receipts.
        /// - Parameter receiptID: the receipt configuration (of those of the app's project in
        ///   AppGallery Connect) the receipts go to; nil: the project's default one.
        init(
            content: PushContent, headers: PushHeaders, badgeClass: String?, now: Date, biTag: String? = nil,
            receiptID: String? = nil
        ) {
            var message: [String: JSONValue] = [:]
            var android: [String: JSONValue] = [
                "urgency": .string(HuaweiMessage.urgency(headers, content))
            ]
            // Huawei keeps a message at most 15 days.
            if let seconds = headers.secondsToLive(now: now, atMost: 1_296_000) {
                android["ttl"] = .string("\(seconds)s")
            }
            // Huawei's data is one string: the custom keys as a JSON object's text.
            if let data = content.dataText { message["data"] = .string(data) }
            if !content.isDataOnly {
                android["notification"] = .object(
                    HuaweiMessage.notification(content, headers: headers, badgeClass: badgeClass))
            }
            // Huawei's self-classification (IM, VOIP, …) decides the message's quota and display.
            if let category = headers.android?.category["huawei"] { android["category"] = .string(category) }
            if let biTag { android["bi_tag"] = .string(biTag) }
            if let receiptID { android["receipt_id"] = .string(receiptID) }
            message["android"] = .object(android)
            head = Array(JSONValue.object(["message": .object(message)]).serialized().dropLast(2))
        }

        /// `{"message":{…,"token":[…]},"validate_only":false}`.
        func body(tokens: some Collection<String>) -> [UInt8] {
            var out = head
            out.reserveCapacity(head.count + tokens.count * 70 + 40)
            out.append(contentsOf: #","token":"#.utf8)
            appendJSONStrings(tokens, to: &out)
            out.append(contentsOf: #"},"validate_only":false}"#.utf8)
            return out
        }
    }

    /// HIGH wakes the device at once (priority 10, or an alert without a priority); NORMAL
    /// otherwise.
    static func urgency(_ headers: PushHeaders, _ content: PushContent) -> String {
        switch headers.priority {
        case .immediate?: "HIGH"
        case .powerAware?, .low?: "NORMAL"
        case nil: content.isDataOnly || headers.pushType == .background ? "NORMAL" : "HIGH"
        }
    }

    /// `android.notification`: title and body (or their localisation keys), a click that
    /// opens the app (or the intent, the https page, the category's action), importance, badge, sound, and the
    /// tag that replaces (the message's collapse id) and the group that stacks (its thread id).
    static func notification(_ content: PushContent, headers: PushHeaders, badgeClass: String?) -> [String:
        JSONValue]
    {
        var notification: [String: JSONValue] = [:]
        if let title = content.title { notification["title"] = .string(title) }
        if let body = content.body { notification["body"] = .string(body) }
        if let image = content.image { notification["image"] = .string(image) }
        if let key = content.titleLocKey { notification["title_loc_key"] = .string(key) }
        if let args = content.titleLocArgs { notification["title_loc_args"] = .array(args.map(JSONValue.string)) }
        if let key = content.bodyLocKey { notification["body_loc_key"] = .string(key) }
        if let args = content.bodyLocArgs { notification["body_loc_args"] = .array(args.map(JSONValue.string)) }
        // type 1 starts the app's activity for an intent (or an intent action), type 2 opens a web
        // page (Huawei takes https URLs only), type 3 opens the app.
        if let intent = content.intent(headers) {
            notification["click_action"] = ["type": 1, "intent": .string(intent)]
        } else if let url = content.url(headers), url.lowercased().hasPrefix("https://") {
            notification["click_action"] = ["type": 2, "url": .string(url)]
        } else if let action = content.category {
            notification["click_action"] = ["type": 1, "action": .string(action)]
        } else {
            notification["click_action"] = ["type": 3]
        }
        notification["importance"] = .string(
            headers.android?.importance["huawei"] ?? (headers.priority == .low ? "LOW" : "NORMAL"))
        if let channelID = headers.android?.channelIDs["huawei"] { notification["channel_id"] = .string(channelID) }
        if let badge = content.badge, let badgeClass {
            notification["badge"] = ["set_num": .int(Int64(badge)), "class": .string(badgeClass)]
        }
        if let sound = headers.android?.sound {
            notification["sound"] = .string(sound)
            notification["default_sound"] = false
        } else if let sound = content.sound, sound != "default" {
            notification["sound"] = .string(sound)
            notification["default_sound"] = false
        } else if content.sound != nil {
            notification["default_sound"] = true
        }
        if let tag = headers.collapseID { notification["tag"] = .string(tag) }
        if let group = content.thread { notification["group"] = .string(group) }
        return notification
    }
}

/// What Huawei's answer to one request means for its tokens (docs/reference/android.md,
/// Huawei result codes).
enum HuaweiAnswer {
    static func read(status: Int, body: [UInt8], tokens: [String], retryAfter: String?, now: Date) -> TokenBatchAnswer {
        let json = try? JSONValue(parsing: body)
        let code = json?["code"]?.stringValue ?? json?["code"]?.intValue.map(String.init) ?? "HTTP\(status)"
        let requestID = json?["requestId"]?.stringValue
        let reason = SendReason.service(code)
        func all(_ outcome: SendOutcome) -> TokenBatchAnswer {
            .outcomes(Array(repeating: outcome, count: tokens.count))
        }
        switch code {
        case "80000000":
            return all(.delivered(serviceMessageID: requestID))
        case "80100000":
            // Partial success: `msg` is a JSON text naming the tokens Huawei refused.
            let detail = (json?["msg"]?.stringValue).flatMap { try? JSONValue(parsing: Array($0.utf8)) }
            let illegal = Set(detail?["illegal_tokens"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            return .outcomes(
                tokens.map {
                    illegal.contains($0)
                        ? .invalidate(.service("80300007"), since: nil) : .delivered(serviceMessageID: requestID)
                })
        case "80300007":
            return all(.invalidate(reason, since: nil))
        case "80200001", "80200003":
            return .refreshAuth(reason)
        case "80300002":
            return .credentialRefused(reason)
        case "81000001":
            return all(.retry(reason, after: RetryAfter.parse(retryAfter, now: now)))
        default:
            if status == 429 || status >= 500 {
                return all(.retry(reason, after: RetryAfter.parse(retryAfter, now: now)))
            }
            if status == 401 { return .refreshAuth(reason) }
            return all(.failed(reason))
        }
    }
}
