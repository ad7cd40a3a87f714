import Foundation
import TuisongCore

/// PushContent → APNs JSON, and the checks APNs would apply to it: the APNs transport's
/// rendering, which the accept path reaches through `PushTransport.check` (a notification too
/// large for APNs is refused before it is stored) and the console through the declaration's
/// `sharedPayload`.
public enum APNsPayload {
    /// The APNs JSON for `content`: deterministic (sorted keys, see `JSONValue`), with Apple's
    /// key names. Unset fields are left out; `aps` is always present. An alert with a body and
    /// nothing else is the plain string form (`"alert": "text"`) unless the content's APNs entry
    /// says `alert_as_object` (`APNsContent`), any other alert a dictionary.
    /// A custom `aps` key never overrides the real one (`PushContent.validate()` rejects it).
    /// The entry is read once per call, and a message's pushes share one call
    /// (`SharedContent.rendered(for:_:)`).
    ///
    ///     APNsPayload.render(PushContent(body: "Hi", badge: 1))
    ///     // {"aps":{"alert":"Hi","badge":1}}
    public static func render(_ content: PushContent) -> [UInt8] {
        render(content, content.apns)
    }

    private static func render(_ content: PushContent, _ options: APNsContent) -> [UInt8] {
        var aps: [String: JSONValue] = [:]
        if let alert = alert(content, options) { aps["alert"] = alert }
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

    private static func alert(_ content: PushContent, _ options: APNsContent) -> JSONValue? {
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
        let limit = pushType.apnsPayloadLimit
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

    /// `content.validate()`, the check of its APNs entry (`APNsContent.checked`), `render`, then
    /// `validate(_:pushType:)`: the bytes to send.
    public static func build(_ content: PushContent, pushType: PushType) throws(PayloadError) -> [UInt8] {
        try content.validate()
        let options = try APNsContent.checked(content.services[APNsContent.service.rawValue])
        let bytes = render(content, options)
        try validate(bytes, pushType: pushType)
        return bytes
    }
}
