import Foundation

/// `apns-push-type`. The raw value is the header value.
public enum PushType: String, Sendable, Hashable, Codable, CaseIterable {
    case alert
    case background
    case location
    case voip
    case complication
    case fileprovider
    case mdm
    case liveactivity
    case pushtotalk
    case widgets
    case controls

    /// The suffix APNs expects on the bundle id in `apns-topic` for this push type.
    public var topicSuffix: String {
        switch self {
        case .alert, .background, .mdm: return ""
        case .voip: return ".voip"
        case .complication: return ".complication"
        case .fileprovider: return ".pushkit.fileprovider"
        case .location: return ".location-query"
        case .liveactivity: return ".push-type.liveactivity"
        case .pushtotalk: return ".voip-ptt"
        // Not in the reference table; WidgetKit and ControlKit pushes name their topic this way.
        case .widgets: return ".push-type.widgets"
        case .controls: return ".push-type.controls"
        }
    }

    /// `apns-topic` for an app: `com.example.app` + the type's suffix. A bundle id that
    /// already ends with the suffix is used as is. (MDM topics come from the MDM certificate
    /// and are passed through unchanged.)
    ///
    ///     PushType.voip.topic(forBundleID: "com.example.app")  // "com.example.app.voip"
    public func topic(forBundleID bundleID: String) -> String {
        let suffix = topicSuffix
        if suffix.isEmpty || bundleID.hasSuffix(suffix) { return bundleID }
        return bundleID + suffix
    }

    /// The largest payload APNs accepts for this type, in bytes.
    public var payloadLimit: Int { self == .voip ? 5120 : 4096 }

    /// The priority to send with when the caller names none: background pushes must not
    /// use 10 (APNs rejects it), everything else is delivered immediately.
    public var defaultPriority: APNsPriority { self == .background ? .powerAware : .immediate }
}

/// `apns-priority`.
public enum APNsPriority: Int, Sendable, Hashable, Codable, CaseIterable {
    /// 10: deliver now.
    case immediate = 10
    /// 5: deliver when power considerations allow.
    case powerAware = 5
    /// 1: lowest; may be grouped and delayed.
    case low = 1
}

/// Why a payload cannot be sent.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Over the push type's limit (`size` and `limit` are set). APNs: 413 PayloadTooLarge.
        case tooLarge
        /// Not a JSON object. APNs: 400 (or PayloadEmpty).
        case invalidJSON
        /// No `aps` dictionary where the push type needs one.
        case missingAPS
        /// A custom key that collides with `aps`.
        case reservedKey
        /// A value out of range (badge, relevance score, volume).
        case invalidValue
        /// Contents the push type does not allow (an alert in a background push, a Live
        /// Activity update without `event`/`timestamp`).
        case invalidForPushType
    }

    public let code: Code
    public let message: String
    /// The payload size in bytes, for `tooLarge`.
    public let size: Int?
    /// The push type's limit in bytes, for `tooLarge`.
    public let limit: Int?

    public init(_ code: Code, _ message: String, size: Int? = nil, limit: Int? = nil) {
        self.code = code
        self.message = message
        self.size = size
        self.limit = limit
    }

    public var description: String { message }
}

/// PushNotification → APNs JSON, and the checks APNs would apply to it.
public enum APNsPayload {
    /// The APNs JSON for `notification`: deterministic (sorted keys, see `JSONValue`), with
    /// Apple's key names. Unset fields are left out; `aps` is always present. A custom `aps`
    /// key never overrides the real one (`PushNotification.validate()` rejects it).
    ///
    ///     APNsPayload.render(PushNotification(alert: .plain("Hi"), badge: 1))
    ///     // {"aps":{"alert":"Hi","badge":1}}
    public static func render(_ notification: PushNotification) -> [UInt8] {
        var aps: [String: JSONValue] = [:]
        if let alert = notification.alert { aps["alert"] = render(alert) }
        if let badge = notification.badge { aps["badge"] = .int(Int64(badge)) }
        if let sound = notification.sound {
            switch sound {
            case .named(let name):
                aps["sound"] = .string(name)
            case .critical(let name, let volume):
                aps["sound"] = .object(["critical": .int(1), "name": .string(name), "volume": .double(volume)])
            }
        }
        if notification.contentAvailable { aps["content-available"] = .int(1) }
        if notification.mutableContent { aps["mutable-content"] = .int(1) }
        if let category = notification.category { aps["category"] = .string(category) }
        if let threadID = notification.threadID { aps["thread-id"] = .string(threadID) }
        if let targetContentID = notification.targetContentID { aps["target-content-id"] = .string(targetContentID) }
        if let level = notification.interruptionLevel { aps["interruption-level"] = .string(level.rawValue) }
        if let score = notification.relevanceScore { aps["relevance-score"] = .double(score) }
        if let timestamp = notification.timestamp { aps["timestamp"] = .int(epochSeconds(timestamp)) }
        if let event = notification.event { aps["event"] = .string(event.rawValue) }
        if let state = notification.contentState { aps["content-state"] = .object(state) }
        if let stale = notification.staleDate { aps["stale-date"] = .int(epochSeconds(stale)) }
        if let dismissal = notification.dismissalDate { aps["dismissal-date"] = .int(epochSeconds(dismissal)) }
        if let attributesType = notification.attributesType { aps["attributes-type"] = .string(attributesType) }
        if let attributes = notification.attributes { aps["attributes"] = .object(attributes) }

        var root = notification.custom
        root["aps"] = .object(aps)
        return JSONValue.object(root).serialized()
    }

    private static func render(_ alert: PushNotification.Alert) -> JSONValue {
        switch alert {
        case .plain(let text):
            return .string(text)
        case .fields(let fields):
            var object: [String: JSONValue] = [:]
            func set(_ key: String, _ value: String?) { if let value { object[key] = .string(value) } }
            func set(_ key: String, _ values: [String]?) {
                if let values { object[key] = .array(values.map(JSONValue.string)) }
            }
            set("title", fields.title)
            set("subtitle", fields.subtitle)
            set("body", fields.body)
            set("launch-image", fields.launchImage)
            set("title-loc-key", fields.titleLocKey)
            set("title-loc-args", fields.titleLocArgs)
            set("subtitle-loc-key", fields.subtitleLocKey)
            set("subtitle-loc-args", fields.subtitleLocArgs)
            set("loc-key", fields.locKey)
            set("loc-args", fields.locArgs)
            set("action-loc-key", fields.actionLocKey)
            set("summary-arg", fields.summaryArg)
            if let count = fields.summaryArgCount { object["summary-arg-count"] = .int(Int64(count)) }
            return .object(object)
        }
    }

    private static func epochSeconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

    /// Checks bytes about to be sent as `pushType`: within the size limit, a JSON object,
    /// `aps` a dictionary (required for alert, background and liveactivity pushes), a
    /// background push carrying only `content-available: 1` (no alert, badge or sound), a
    /// Live Activity push carrying `event` and `timestamp`.
    public static func validate(_ bytes: [UInt8], pushType: PushType) throws(PayloadError) {
        let limit = pushType.payloadLimit
        guard bytes.count <= limit else {
            throw PayloadError(
                .tooLarge,
                "payload is \(bytes.count) bytes, over the \(limit)-byte limit for \(pushType.rawValue) pushes",
                size: bytes.count, limit: limit)
        }
        guard !bytes.isEmpty else { throw PayloadError(.invalidJSON, "payload is empty") }
        let root: JSONValue
        do {
            root = try JSONValue(parsing: bytes)
        } catch {
            throw PayloadError(.invalidJSON, "payload is not JSON: \(error)")
        }
        guard case .object(let members) = root else {
            throw PayloadError(.invalidJSON, "payload must be a JSON object")
        }
        let aps: [String: JSONValue]
        switch members["aps"] {
        case .object(let dictionary)?:
            aps = dictionary
        case nil:
            if [.alert, .background, .liveactivity].contains(pushType) {
                throw PayloadError(.missingAPS, "a \(pushType.rawValue) push needs an \"aps\" dictionary")
            }
            return
        default:
            throw PayloadError(.missingAPS, "\"aps\" must be a dictionary")
        }
        switch pushType {
        case .background:
            guard aps["content-available"]?.intValue == 1 else {
                throw PayloadError(.invalidForPushType, "a background push needs \"content-available\": 1")
            }
            let visible = ["alert", "badge", "sound"].filter { aps[$0] != nil }
            guard visible.isEmpty else {
                throw PayloadError(
                    .invalidForPushType,
                    "a background push must not carry \(visible.joined(separator: ", ")); send it as an alert push")
            }
        case .liveactivity:
            guard aps["event"]?.stringValue != nil, aps["timestamp"]?.intValue != nil else {
                throw PayloadError(.invalidForPushType, "a Live Activity push needs \"event\" and \"timestamp\"")
            }
        default:
            break
        }
    }

    /// `notification.validate()`, `render`, then `validate(_:pushType:)`: the bytes to send.
    public static func build(_ notification: PushNotification, pushType: PushType) throws(PayloadError) -> [UInt8] {
        try notification.validate()
        let bytes = render(notification)
        try validate(bytes, pushType: pushType)
        return bytes
    }
}
