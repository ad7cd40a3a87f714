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

/// PushContent → APNs JSON, and the checks APNs would apply to it: the APNs transport's
/// rendering (the accept path uses it too, to refuse a notification too large for APNs).
public enum APNsPayload {
    /// The APNs JSON for `content`: deterministic (sorted keys, see `JSONValue`), with Apple's
    /// key names. Unset fields are left out; `aps` is always present. An alert with a body and
    /// nothing else is the plain string form (`"alert": "text"`) unless `apns.alertAsObject`,
    /// any other alert a dictionary.
    /// A custom `aps` key never overrides the real one (`PushContent.validate()` rejects it).
    ///
    ///     APNsPayload.render(PushContent(body: "Hi", badge: 1))
    ///     // {"aps":{"alert":"Hi","badge":1}}
    public static func render(_ content: PushContent) -> [UInt8] {
        var aps: [String: JSONValue] = [:]
        let options = content.apns
        if let alert = alert(content) { aps["alert"] = alert }
        if let badge = content.badge { aps["badge"] = .int(Int64(badge)) }
        if let sound = content.sound {
            if let volume = options.criticalVolume {
                aps["sound"] = .object(["critical": .int(1), "name": .string(sound), "volume": .double(volume)])
            } else {
                aps["sound"] = .string(sound)
            }
        }
        if content.background { aps["content-available"] = .int(1) }
        if options.mutableContent { aps["mutable-content"] = .int(1) }
        if let category = content.category { aps["category"] = .string(category) }
        if let thread = content.thread { aps["thread-id"] = .string(thread) }
        if let targetContentID = options.targetContentID { aps["target-content-id"] = .string(targetContentID) }
        if let level = options.interruptionLevel { aps["interruption-level"] = .string(level.rawValue) }
        if let score = options.relevanceScore { aps["relevance-score"] = .double(score) }
        if let timestamp = options.timestamp { aps["timestamp"] = .int(epochSeconds(timestamp)) }
        if let event = options.event { aps["event"] = .string(event.rawValue) }
        if let state = options.contentState { aps["content-state"] = .object(state) }
        if let stale = options.staleDate { aps["stale-date"] = .int(epochSeconds(stale)) }
        if let dismissal = options.dismissalDate { aps["dismissal-date"] = .int(epochSeconds(dismissal)) }
        if let attributesType = options.attributesType { aps["attributes-type"] = .string(attributesType) }
        if let attributes = options.attributes { aps["attributes"] = .object(attributes) }

        var root = content.data
        root["aps"] = .object(aps)
        return JSONValue.object(root).serialized()
    }

    private static func alert(_ content: PushContent) -> JSONValue? {
        let options = content.apns
        var object: [String: JSONValue] = [:]
        func set(_ key: String, _ value: String?) { if let value { object[key] = .string(value) } }
        func set(_ key: String, _ values: [String]?) {
            if let values { object[key] = .array(values.map(JSONValue.string)) }
        }
        set("title", content.title)
        set("subtitle", content.subtitle)
        set("body", content.body)
        set("launch-image", options.launchImage)
        set("title-loc-key", content.titleLocKey)
        set("title-loc-args", content.titleLocArgs)
        set("subtitle-loc-key", content.subtitleLocKey)
        set("subtitle-loc-args", content.subtitleLocArgs)
        set("loc-key", content.bodyLocKey)
        set("loc-args", content.bodyLocArgs)
        set("action-loc-key", options.actionLocKey)
        set("summary-arg", options.summaryArg)
        if let count = options.summaryArgCount { object["summary-arg-count"] = .int(Int64(count)) }
        if object.isEmpty { return nil }
        if object.count == 1, let body = content.body, !options.alertAsObject { return .string(body) }
        return .object(object)
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

    /// `content.validate()`, `render`, then `validate(_:pushType:)`: the bytes to send.
    public static func build(_ content: PushContent, pushType: PushType) throws(PayloadError) -> [UInt8] {
        try content.validate()
        let bytes = render(content)
        try validate(bytes, pushType: pushType)
        return bytes
    }
}
