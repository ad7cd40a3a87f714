import Foundation
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

/// The body of Push Kit v3's `POST /v3/{projectId}/messages:send` for up to 1,000 tokens and
/// its `push-type`, rendered from the push's `PushContent`, the message's headers and the
/// credential's default category (docs/reference/harmony.md §3). Plain Swift, unit-tested
/// without sockets.
public enum HarmonyMessage {
    /// Huawei's limit on `target.token`.
    static let maxTokens = 1000
    /// Huawei's limit on `target.token` of a test message (`pushOptions.testMessage`).
    static let maxTestMessageTokens = 10
    /// Huawei keeps a message at most 15 days (`pushOptions.ttl`, seconds; assumed as for the
    /// Android Push Kit: docs/reference/harmony.md §3).
    static let maxTTL: Int64 = 1_296_000
    /// The category of a notification without one: the only one that needs no entitlement.
    public static let defaultCategory = "MARKETING"

    /// Whether a push goes as a test message (`pushOptions.testMessage`): the message asked
    /// for one (`harmony.test_message`), or its devices are sandbox ones (test phones).
    static func isTestMessage(headers: PushHeaders, environment: PushEnvironment) -> Bool {
        environment == .sandbox || HarmonyOptions(headers.options(for: HarmonyService.channel)).testMessage
    }

    /// `push-type` 0 (alert and badge refresh) and 6 (background).
    public static let alertPushType = 0
    public static let backgroundPushType = 6

    /// A message rendered once for every chunk of tokens of a push: only `target.token`
    /// differs, written after the rendered head (the serialisation sorts keys, so `target`
    /// follows `payload` and `pushOptions`).
    public struct Template: Sendable {
        /// The `push-type` header.
        public let pushType: Int
        /// `{"payload":…,"pushOptions":…` without the closing brace.
        private let head: [UInt8]

        init(
            content: PushContent, headers: PushHeaders, environment: PushEnvironment = .production,
            defaultCategory: String?, now: Date, biTag: String? = nil, receiptID: String? = nil
        ) {
            var body: [String: JSONValue] = [:]
            let harmony = HarmonyOptions(headers.options(for: HarmonyService.channel))
            var options: [String: JSONValue] = [:]
            if let seconds = headers.secondsToLive(now: now, atMost: HarmonyMessage.maxTTL) {
                options["ttl"] = .int(seconds)
            }
            if HarmonyMessage.isTestMessage(headers: headers, environment: environment) {
                options["testMessage"] = true
            }
            // Tuisong's tag of the message, which Push Kit returns in each V2 receipt status.
            if let biTag { options["biTag"] = .string(biTag) }
            // The receipt configuration of the project the receipts go to (nil: its default).
            if let receiptID { options["receiptId"] = .string(receiptID) }
            if !options.isEmpty { body["pushOptions"] = .object(options) }
            if content.hasAlert {
                pushType = HarmonyMessage.alertPushType
                body["payload"] = [
                    "notification": .object(
                        HarmonyMessage.notification(content, harmony: harmony, defaultCategory: defaultCategory))
                ]
            } else if !content.data.isEmpty {
                // A background message: the custom data as one JSON text (its values as they
                // are, not stringified), handed to the app.
                pushType = HarmonyMessage.backgroundPushType
                body["payload"] = ["extraData": .string(JSONValue.object(content.data).serializedString)]
            } else {
                // A badge refresh: push-type 0 with only the badge.
                pushType = HarmonyMessage.alertPushType
                body["payload"] = ["badge": HarmonyMessage.badge(content.badge ?? 0, harmony: harmony) ?? ["setNum": 0]]
            }
            head = Array(JSONValue.object(body).serialized().dropLast())
        }

        /// `{…,"target":{"token":[…]}}`.
        public func body(tokens: some Collection<String>) -> [UInt8] {
            var out = head
            out.reserveCapacity(head.count + tokens.count * 140 + 24)
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: #""target":{"token":"#.utf8)
            appendJSONStrings(tokens, to: &out)
            out.append(contentsOf: "}}".utf8)
            return out
        }
    }

    /// `payload.notification`: category, title and body (Huawei requires both: a push with
    /// only a title shows it as the body too), image (https only), the click that opens the
    /// app (or the options' page) with the custom data as `clickAction.data`, the badge, and
    /// the options' `notifyId` (a background or badge-only push has no notification to replace).
    static func notification(_ content: PushContent, harmony: HarmonyOptions, defaultCategory: String?)
        -> [String: JSONValue]
    {
        var notification: [String: JSONValue] = [:]
        notification["category"] = .string(harmony.category ?? defaultCategory ?? HarmonyMessage.defaultCategory)
        let title = content.title ?? content.titleLocKey ?? content.body ?? content.bodyLocKey ?? ""
        notification["title"] = .string(title)
        notification["body"] = .string(content.body ?? content.bodyLocKey ?? title)
        if let image = harmony.image ?? content.image, image.lowercased().hasPrefix("https://") {
            notification["image"] = .string(image)
        }
        var click: [String: JSONValue] = [:]
        if let action = harmony.clickAction {
            click = ["actionType": 1, "action": .string(action)]
        } else if let uri = harmony.clickURI {
            click = ["actionType": 1, "uri": .string(uri)]
        } else if case .url(let url)? = content.click {
            click = ["actionType": 1, "uri": .string(url)]
        } else {
            click = ["actionType": 0]
        }
        if !content.data.isEmpty { click["data"] = .object(content.data) }
        notification["clickAction"] = .object(click)
        if let count = content.badge, let badge = badge(count, harmony: harmony) { notification["badge"] = badge }
        if let id = harmony.notifyID { notification["notifyId"] = .int(Int64(id)) }
        return notification
    }

    /// `badge.setNum` (0…99) or, when the options say increment, `badge.addNum` (1…99); nil
    /// when the options ignore the badge or there is nothing to add.
    static func badge(_ count: Int, harmony: HarmonyOptions) -> JSONValue? {
        if harmony.ignoreBadge { return nil }
        if harmony.badgeIncrement {
            guard count > 0 else { return nil }
            return ["addNum": .int(Int64(min(count, 99)))]
        }
        return ["setNum": .int(Int64(min(max(count, 0), 99)))]
    }
}

/// What Push Kit v3's answer to one request means for its tokens (docs/reference/harmony.md
/// §4, Huawei's response codes).
enum HarmonyAnswer {
    /// Reasons of `illegalTokens` that say the token is no device of this project: dropped.
    static let invalidTokenReasons: Set<String> = ["tokenFormatError", "noRight", "tokenPlatformNotSupport"]
    /// Reasons that are the app's, not the device's: retried later.
    static let transientReasons: Set<String> = ["appinfoError"]

    static func read(status: Int, body: [UInt8], tokens: [String], retryAfter: String?, now: Date) -> TokenBatchAnswer {
        let json = try? JSONValue(parsing: body)
        let code = json?["code"]?.stringValue ?? json?["code"]?.intValue.map(String.init) ?? "HTTP\(status)"
        let requestID = json?["requestId"]?.stringValue
        let reason = SendReason.service(code)
        func all(_ outcome: SendOutcome) -> TokenBatchAnswer {
            .outcomes(Array(repeating: outcome, count: tokens.count))
        }
        /// Each token's reason from `msg`'s `illegalTokens` (`{"reason": [tokens]}`).
        func illegal() -> [String: String]? {
            guard let text = json?["msg"]?.stringValue, let detail = try? JSONValue(parsing: Array(text.utf8)),
                let groups = detail["illegalTokens"]?.objectValue
            else { return nil }
            var byToken: [String: String] = [:]
            for (why, list) in groups {
                for token in list.arrayValue?.compactMap(\.stringValue) ?? [] { byToken[token] = why }
            }
            return byToken
        }
        func outcome(_ why: String?, otherwise: SendOutcome) -> SendOutcome {
            guard let why else { return otherwise }
            if invalidTokenReasons.contains(why) { return .invalidate(.service(why), since: nil) }
            if transientReasons.contains(why) { return .retry(.service(why), after: nil) }
            return .failed(.service(why))
        }
        switch code {
        case "80000000":
            return all(.delivered(serviceMessageID: requestID))
        case "80100000":
            let refused = illegal() ?? [:]
            return .outcomes(
                tokens.map { outcome(refused[$0], otherwise: .delivered(serviceMessageID: requestID)) })
        case "80300007":
            // Every token refused: by reason when Huawei says, else all invalid.
            guard let refused = illegal(), !refused.isEmpty else { return all(.invalidate(reason, since: nil)) }
            return .outcomes(tokens.map { outcome(refused[$0], otherwise: .invalidate(reason, since: nil)) })
        case "80200001", "80200003", "80200005":
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
