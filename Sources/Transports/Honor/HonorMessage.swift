import Foundation
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

/// The body of Honor Push's `POST /api/v1/{appId}/sendMessage` for up to 1,000 tokens:
/// the message itself, no wrapper, camelCase inside `android` (docs/reference/android.md,
/// Honor). Plain Swift, unit-tested without sockets.
public enum HonorMessage {
    /// Honor's limit on `token`, as Push Kit's (the API Honor's derives from).
    static let maxTokens = 1000

    /// A message rendered once for every chunk of tokens of a push: `token` (the last key of
    /// the sorted serialisation) is written into the rendered bytes.
    public struct Template: Sendable {
        private let head: [UInt8]

        /// - Parameter biTag: Tuisong's tag of the message, which Honor returns in its receipts
        ///   (only when the app's Honor credential turns receipts on).
        init(content: PushContent, headers: PushHeaders, badgeClass: String?, now: Date, biTag: String? = nil) {
            var message: [String: JSONValue] = [:]
            var android: [String: JSONValue] = [:]
            // Honor refuses a TTL over 15 days.
            if let seconds = headers.secondsToLive(now: now, atMost: 1_296_000) {
                android["ttl"] = .string("\(seconds)s")
            }
            // Honor's data is one string: the custom keys as a JSON object's text.
            if let data = content.dataText { message["data"] = .string(data) }
            if !content.isDataOnly {
                android["notification"] = .object(
                    HonorMessage.notification(content, headers: headers, badgeClass: badgeClass))
            }
            if let biTag { android["biTag"] = .string(biTag) }
            if !android.isEmpty { message["android"] = .object(android) }
            var rendered = JSONValue.object(message).serialized()
            if message.isEmpty {
                head = [UInt8(ascii: "{")]
            } else {
                rendered.removeLast()  // the closing brace; the token member follows
                head = rendered + [UInt8(ascii: ",")]
            }
        }

        /// `{…,"token":[…]}`.
        func body(tokens: some Collection<String>) -> [UInt8] {
            var out = head
            out.reserveCapacity(head.count + tokens.count * 70 + 16)
            out.append(contentsOf: #""token":"#.utf8)
            appendJSONStrings(tokens, to: &out)
            out.append(UInt8(ascii: "}"))
            return out
        }
    }

    /// `android.notification`: title and body, a click that opens the app (or the intent, the
    /// web page, the category's action), importance, badge, the tag that replaces (the message's collapse id) and
    /// the group that stacks (its thread id).
    static func notification(_ content: PushContent, headers: PushHeaders, badgeClass: String?) -> [String:
        JSONValue]
    {
        var notification: [String: JSONValue] = [:]
        // Honor has no localisation keys: the key itself is better than nothing.
        if let title = content.title ?? content.titleLocKey { notification["title"] = .string(title) }
        if let body = content.body ?? content.bodyLocKey { notification["body"] = .string(body) }
        // type 1 an intent (or an intent action), 2 a web page, 3 the app.
        if let intent = content.intent(headers) {
            notification["clickAction"] = ["type": 1, "intent": .string(intent)]
        } else if let url = content.url(headers) {
            notification["clickAction"] = ["type": 2, "url": .string(url)]
        } else if let action = content.category {
            notification["clickAction"] = ["type": 1, "action": .string(action)]
        } else {
            notification["clickAction"] = ["type": 3]
        }
        notification["importance"] = .string(
            headers.android?.importance["honor"] ?? (headers.priority == .low ? "LOW" : "NORMAL"))
        if let badge = content.badge, let badgeClass {
            notification["badge"] = ["setNum": .int(Int64(badge)), "badgeClass": .string(badgeClass)]
        }
        if let tag = headers.collapseID { notification["tag"] = .string(tag) }
        if let group = content.thread { notification["group"] = .string(group) }
        return notification
    }
}

/// What Honor's answer to one request means for its tokens: `{"code", "message", "data":
/// {"sendResult", "requestId", "failTokens", "expireTokens"}}`, `code` 200 on success; errors
/// use Push Kit's numbers (docs/reference/android.md, Honor: the table is unverified).
enum HonorAnswer {
    static func read(status: Int, body: [UInt8], tokens: [String], retryAfter: String?, now: Date) -> TokenBatchAnswer {
        let json = try? JSONValue(parsing: body)
        let code = json?["code"]?.intValue.map(String.init) ?? json?["code"]?.stringValue ?? "HTTP\(status)"
        let reason = SendReason.service(code)
        func all(_ outcome: SendOutcome) -> TokenBatchAnswer {
            .outcomes(Array(repeating: outcome, count: tokens.count))
        }
        switch code {
        case "200", "0":
            let data = json?["data"]
            let requestID = data?["requestId"]?.stringValue
            // A token Honor calls expired or failed is no longer the device's.
            let expired = Set(data?["expireTokens"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            let failed = Set(data?["failTokens"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            return .outcomes(
                tokens.map { token in
                    if expired.contains(token) { return .invalidate(.service("ExpiredToken"), since: nil) }
                    if failed.contains(token) { return .invalidate(.service("FailedToken"), since: nil) }
                    return .delivered(serviceMessageID: requestID)
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
