import Foundation
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

/// The body of FCM HTTP v1's `POST /v1/projects/{project}/messages:send` for one token,
/// rendered from the push's `PushContent` and the message's headers (docs/reference/
/// android.md, FCM). Plain Swift, unit-tested without sockets.
enum FCMMessage {
    /// `{"message": {android{priority, ttl?, collapse_key?, notification?}, data?,
    /// notification?, token}}`. A data-only push has no `notification` (the app handles it).
    static func body(token: String, content: PushContent, headers: PushHeaders, now: Date) -> [UInt8] {
        Template(content: content, headers: headers, now: now).body(token: token)
    }

    /// A message rendered once for every device of a push: only the token differs, written
    /// into the rendered bytes (the serialisation sorts keys, so `token` is the message's last).
    /// FCM refuses a message whose data (keys and values) and notification texts exceed
    /// 4,096 bytes ("Android message is too big", `INVALID_ARGUMENT`; docs/reference/android.md §2).
    static let payloadLimit = 4096

    struct Template {
        /// `{"message":{…` up to the token member.
        private let head: [UInt8]
        /// What FCM counts against `payloadLimit`: the data's keys and values and the
        /// notifications' texts.
        let payloadBytes: Int

        init(content: PushContent, headers: PushHeaders, now: Date) {
            var message: [String: JSONValue] = [:]
            if !content.isDataOnly {
                var notification: [String: JSONValue] = [:]
                if let title = content.title { notification["title"] = .string(title) }
                if let body = content.body { notification["body"] = .string(body) }
                if let image = content.image { notification["image"] = .string(image) }
                if !notification.isEmpty { message["notification"] = .object(notification) }
            }
            if !content.data.isEmpty { message["data"] = content.dataObject }
            var android: [String: JSONValue] = ["priority": .string(FCMMessage.priority(headers, content))]
            // FCM refuses a TTL over four weeks.
            if let seconds = headers.secondsToLive(now: now, atMost: 2_419_200) {
                android["ttl"] = .string("\(seconds)s")
            }
            if let collapseID = headers.collapseID { android["collapse_key"] = .string(collapseID) }
            var notification = FCMMessage.androidNotification(content)
            // The message's collapse id replaces a shown notification, as FCM's tag does; a thread
            // (grouping) has no FCM counterpart.
            if let collapseID = headers.collapseID { notification["tag"] = .string(collapseID) }
            if let channelID = headers.android?.channelIDs["fcm"] { notification["channel_id"] = .string(channelID) }
            if let sound = headers.android?.sound { notification["sound"] = .string(sound) }
            if !content.isDataOnly, !notification.isEmpty { android["notification"] = .object(notification) }
            message["android"] = .object(android)
            var bytes = 0
            if case .object(let data)? = message["data"] {
                for (key, value) in data { bytes += key.utf8.count + (value.stringValue?.utf8.count ?? 0) }
            }
            for case .object(let texts)? in [message["notification"], android["notification"]] {
                for value in texts.values { bytes += value.stringValue?.utf8.count ?? 0 }
            }
            payloadBytes = bytes
            // "android" is always there, so the object is never empty: drop its closing braces.
            head = Array(JSONValue.object(["message": .object(message)]).serialized().dropLast(2))
        }

        func body(token: String) -> [UInt8] {
            var out = head
            out.reserveCapacity(head.count + token.utf8.count + 14)
            out.append(contentsOf: #","token":"#.utf8)
            out.append(contentsOf: JSONValue.string(token).serialized())
            out.append(contentsOf: "}}".utf8)
            return out
        }
    }

    /// Priority 10 (or no priority on an alert) is FCM's HIGH, which wakes the device; 5 and 1,
    /// and data-only pushes without a priority, are NORMAL (a background push is never urgent,
    /// `PushType.defaultPriority`).
    static func priority(_ headers: PushHeaders, _ content: PushContent) -> String {
        switch headers.priority {
        case .immediate?: "HIGH"
        case .powerAware?, .low?: "NORMAL"
        case nil: content.isDataOnly || headers.pushType == .background ? "NORMAL" : "HIGH"
        }
    }

    /// `android.notification`: what has no place in the common `notification`.
    static func androidNotification(_ content: PushContent) -> [String: JSONValue] {
        var notification: [String: JSONValue] = [:]
        if let sound = content.sound { notification["sound"] = .string(sound) }
        if let action = content.category { notification["click_action"] = .string(action) }
        if let badge = content.badge { notification["notification_count"] = .int(Int64(badge)) }
        if let key = content.titleLocKey { notification["title_loc_key"] = .string(key) }
        if let args = content.titleLocArgs { notification["title_loc_args"] = .array(args.map(JSONValue.string)) }
        if let key = content.bodyLocKey { notification["body_loc_key"] = .string(key) }
        if let args = content.bodyLocArgs { notification["body_loc_args"] = .array(args.map(JSONValue.string)) }
        return notification
    }
}

/// What FCM's answer to one send means for the device (docs/reference/android.md, FCM errors).
enum FCMAnswer: Equatable {
    case delivered(messageName: String?)
    case outcome(SendOutcome)
    /// The access token was refused (401 UNAUTHENTICATED): refresh it and send again, once.
    case refreshAuth(SendReason)
    /// The credential itself is refused (403 PERMISSION_DENIED, a second 401): hold the push
    /// and mark the credential failing.
    case credentialRefused(SendReason)

    /// Reads FCM's answer. `retryAfter` is the `Retry-After` header, in seconds or an HTTP date.
    static func read(status: Int, body: [UInt8], retryAfter: String?, now: Date) -> FCMAnswer {
        if status == 200 {
            let name = plainMessageName(body) ?? (try? JSONValue(parsing: body))?["name"]?.stringValue
            return .delivered(messageName: name)
        }
        let error = (try? JSONValue(parsing: body))?["error"]
        let statusName = error?["status"]?.stringValue
        // The FcmError detail's errorCode is the precise one (UNREGISTERED under NOT_FOUND).
        let detailCode = error?["details"]?.arrayValue?.lazy.compactMap { detail -> String? in
            guard detail["@type"]?.stringValue?.hasSuffix("google.firebase.fcm.v1.FcmError") == true else {
                return nil
            }
            return detail["errorCode"]?.stringValue
        }.first
        let code = detailCode ?? statusName ?? "HTTP\(status)"
        let message = error?["message"]?.stringValue ?? ""
        let reason = SendReason.service(code)
        let delay = RetryAfter.parse(retryAfter, now: now)
        switch code {
        case "UNREGISTERED":
            return .outcome(.invalidate(reason, since: nil))
        case "INVALID_ARGUMENT":
            // The same code answers a malformed message and a malformed token; only the token
            // is the device's fault.
            if message.localizedCaseInsensitiveContains("registration token") {
                return .outcome(.invalidate(reason, since: nil))
            }
            return .outcome(.failed(reason))
        case "QUOTA_EXCEEDED":
            return .outcome(.retry(reason, after: delay ?? .seconds(60)))
        case "UNAVAILABLE", "INTERNAL":
            return .outcome(.retry(reason, after: delay))
        case "UNAUTHENTICATED":
            return .refreshAuth(reason)
        case "PERMISSION_DENIED", "THIRD_PARTY_AUTH_ERROR":
            return .credentialRefused(reason)
        default:
            if status >= 500 { return .outcome(.retry(reason, after: delay)) }
            if status == 401 { return .refreshAuth(reason) }
            return .outcome(.failed(reason))
        }
    }

    /// The name of a success answer shaped `{"name": "projects/…/messages/…"}` (any whitespace
    /// around the tokens) whose name is printable ASCII without escapes, read without building a
    /// JSON tree — every delivered push has one. Nil for any other shape; the JSON parser reads
    /// those.
    static func plainMessageName(_ body: [UInt8]) -> String? {
        body.withUnsafeBufferPointer { bytes -> String? in
            var index = 0
            func skipSpace() {
                while index < bytes.count,
                    bytes[index] == 32 || bytes[index] == 10 || bytes[index] == 13 || bytes[index] == 9
                {
                    index += 1
                }
            }
            func take(_ literal: StaticString) -> Bool {
                let count = literal.utf8CodeUnitCount
                guard bytes.count - index >= count else { return false }
                for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { return false }
                index += count
                return true
            }
            skipSpace()
            guard take("{") else { return nil }
            skipSpace()
            guard take(#""name""#) else { return nil }
            skipSpace()
            guard take(":") else { return nil }
            skipSpace()
            guard take(#"""#) else { return nil }
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\"),
                bytes[index] >= 0x20, bytes[index] < 0x7F
            {
                index += 1
            }
            let end = index
            guard take(#"""#) else { return nil }
            skipSpace()
            guard take("}") else { return nil }
            skipSpace()
            guard index == bytes.count else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }
}
