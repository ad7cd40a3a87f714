import Foundation
import TuisongCore

/// Baidu `message_type` / `msg_type`.
enum BaiduMessageType: Int, Sendable {
    /// A pass-through message: on iOS a silent background push carrying the message.
    case message = 0
    /// A notification the user sees.
    case notification = 1
}

/// One message as an app server sent it (`msg`, or one element of `messages`) and the
/// notification it becomes.
///
/// - An object with `aps` (Baidu's iOS format) keeps its `aps` fields — alert (text or
///   dictionary), badge, sound, content-available, mutable-content, category, thread-id,
///   target-content-id, interruption-level, relevance-score — and every other key as a
///   custom key next to `aps`.
/// - A JSON string is the alert text.
/// - An object without `aps` in Baidu's Android format (`title`, `description`,
///   `custom_content`) becomes an alert with that title and body and the custom content.
/// - As a pass-through message (type 0) the push is silent (`content-available: 1`): an
///   object's keys other than `aps` travel as custom keys, a string as `"message"`.
struct BaiduMessage: Sendable {
    /// The text to keep for `fetch_msg`: the string, or the object's JSON.
    let text: String
    let content: PushContent
    /// Where a tap leads on Android, from Baidu's Android fields (`open_type` 1 with `url`: the
    /// web page the notification opens; 2 with `pkg_content`: the intent); the content's click
    /// when pushed to `device_type` 3.
    let androidClick: PushContent.ClickAction?

    /// `original`: the text as the app server sent it, kept instead of the re-serialised
    /// value (what `fetch_msg` and `timer/query_list` show).
    init(_ value: JSONValue, original: String? = nil, type: BaiduMessageType, parameter: String) throws(BaiduError) {
        let (text, notification) = try Self.build(value, type: type, parameter: parameter)
        self.text = original ?? text
        self.content = notification
        androidClick = Self.androidClick(value)
    }

    /// Baidu's Android click behaviour: `open_type` 1 opens `url` (`.url`: each service's
    /// open-a-web-page click), 2 runs `pkg_content` (an intent URI, `.intent`), 0/3 opens the
    /// app (each service's default).
    private static func androidClick(_ value: JSONValue) -> PushContent.ClickAction? {
        var object = value
        if case .string(let string) = value, string.hasPrefix("{"), let parsed = try? JSONValue(parsing: string) {
            object = parsed
        }
        guard case .object(let members) = object else { return nil }
        let openType = members["open_type"]?.intValue ?? members["open_type"]?.stringValue.flatMap { Int64($0) }
        switch openType {
        case 1?:
            guard let url = members["url"]?.stringValue, !url.isEmpty else { return nil }
            return .url(url)
        case 2?:
            guard let intent = members["pkg_content"]?.stringValue, !intent.isEmpty else { return nil }
            return .intent(intent)
        default:
            return nil
        }
    }

    private static func build(_ value: JSONValue, type: BaiduMessageType, parameter: String) throws(BaiduError)
        -> (String, PushContent)
    {
        switch value {
        case .string(let string):
            // Python's SDK json.dumps() a message that is already JSON text: unwrap it.
            if string.hasPrefix("{"), let object = try? JSONValue(parsing: string), case .object = object {
                return (string, try build(object, type: type, parameter: parameter).1)
            }
            switch type {
            case .notification:
                return (string, PushContent(body: string))
            case .message:
                return (string, PushContent(data: ["message": .string(string)], background: true))
            }
        case .object(var members):
            let text = value.serializedString
            let aps = members.removeValue(forKey: "aps")
            if let aps, aps.objectValue == nil {
                throw .invalidParameter(parameter, "field aps must be an object")
            }
            switch type {
            case .message:
                return (text, PushContent(data: members, background: true))
            case .notification:
                guard let aps = aps?.objectValue else {
                    return (text, try notification(fromAndroidStyle: members, parameter: parameter))
                }
                var notification = try notification(fromAPS: aps, parameter: parameter)
                notification.data = members
                guard
                    notification.hasAlert || notification.subtitle != nil || notification.badge != nil
                        || notification.sound != nil || notification.background
                else {
                    throw .invalidParameter(
                        parameter, "aps has nothing to show: give alert, badge, sound or content-available")
                }
                return (text, notification)
            }
        default:
            throw .invalidParameter(parameter, "must be a JSON object or string")
        }
    }

    /// Parses the text of `msg` / an element of `messages`.
    init(text: String, type: BaiduMessageType, parameter: String) throws(BaiduError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text)
        } catch {
            throw .invalidParameter(parameter, "is not valid JSON (\(error.message) at byte \(error.offset))")
        }
        try self.init(value, original: text, type: type, parameter: parameter)
    }

    // MARK: aps

    /// `aps.interruption-level`'s values (Apple's).
    private static let interruptionLevels: Set<String> = ["passive", "active", "time-sensitive", "critical"]

    private static func notification(fromAPS aps: [String: JSONValue], parameter: String) throws(BaiduError)
        -> PushContent
    {
        func field(_ key: String) -> String { "\(parameter) field aps.\(key)" }
        func string(_ key: String) throws(BaiduError) -> String? {
            guard let value = aps[key], !value.isNull else { return nil }
            guard let text = value.stringValue else { throw .invalidParameter(field(key), "must be a string") }
            return text
        }
        func flag(_ key: String) throws(BaiduError) -> Bool {
            guard let value = aps[key], !value.isNull else { return false }
            if let number = value.intValue { return number != 0 }
            if let bool = value.boolValue { return bool }
            if let text = value.stringValue, let number = Int(text) { return number != 0 }
            throw .invalidParameter(field(key), "must be 0 or 1")
        }

        var notification = PushContent()
        switch aps["alert"] {
        case nil, .null?: break
        case .string(let text)?: notification.body = text
        case .object(let members)?:
            try alertFields(members, parameter: parameter, into: &notification)
            notification.set("alert_as_object", true, forService: .apns)
        default: throw .invalidParameter(field("alert"), "must be a string or an object")
        }
        switch aps["badge"] {
        case nil, .null?: break
        case let value?:
            guard let badge = value.intValue ?? value.stringValue.flatMap({ Int64($0) }), badge >= 0,
                badge <= Int64(Int32.max)
            else { throw .invalidParameter(field("badge"), "must be a non-negative integer") }
            notification.badge = Int(badge)
        }
        switch aps["sound"] {
        case nil, .null?: break
        // Baidu's examples send "sound": "" for no sound.
        case .string(let name)?: notification.sound = name.isEmpty ? nil : name
        case .object(let sound)?:
            guard let name = sound["name"]?.stringValue, let volume = (sound["volume"] ?? .double(1)).doubleValue,
                (0...1).contains(volume)
            else {
                throw .invalidParameter(field("sound"), "must be a name or {\"critical\":1,\"name\":…,\"volume\":0…1}")
            }
            notification.sound = name
            notification.set("critical_volume", .double(volume), forService: .apns)
        default: throw .invalidParameter(field("sound"), "must be a string or an object")
        }
        notification.background = try flag("content-available")
        if try flag("mutable-content") { notification.set("mutable_content", true, forService: .apns) }
        notification.category = try string("category")
        notification.thread = try string("thread-id")
        notification.set("target_content_id", try string("target-content-id").map(JSONValue.string), forService: .apns)
        if let level = try string("interruption-level") {
            guard interruptionLevels.contains(level) else {
                throw .invalidParameter(
                    field("interruption-level"), "must be passive, active, time-sensitive or critical")
            }
            notification.set("interruption_level", .string(level), forService: .apns)
        }
        if let score = aps["relevance-score"], !score.isNull {
            guard let value = score.doubleValue, (0...1).contains(value) else {
                throw .invalidParameter(field("relevance-score"), "must be a number within 0…1")
            }
            notification.set("relevance_score", .double(value), forService: .apns)
        }
        return notification
    }

    private static func alertFields(
        _ alert: [String: JSONValue], parameter: String, into fields: inout PushContent
    ) throws(BaiduError) {
        func field(_ key: String) -> String { "\(parameter) field aps.alert.\(key)" }
        func string(_ key: String) throws(BaiduError) -> String? {
            guard let value = alert[key], !value.isNull else { return nil }
            guard let text = value.stringValue else { throw .invalidParameter(field(key), "must be a string") }
            return text
        }
        func strings(_ key: String) throws(BaiduError) -> [String]? {
            guard let value = alert[key], !value.isNull else { return nil }
            guard let array = value.arrayValue else {
                throw .invalidParameter(field(key), "must be an array of strings")
            }
            var texts: [String] = []
            for element in array {
                // Format arguments are often numbers; iOS formats them as text.
                if let text = element.stringValue {
                    texts.append(text)
                } else if case .int(let number) = element {
                    texts.append(String(number))
                } else {
                    throw .invalidParameter(field(key), "must be an array of strings")
                }
            }
            return texts
        }
        fields.title = try string("title")
        fields.subtitle = try string("subtitle")
        fields.body = try string("body")
        fields.set("launch_image", try string("launch-image").map(JSONValue.string), forService: .apns)
        fields.titleLocKey = try string("title-loc-key")
        fields.titleLocArgs = try strings("title-loc-args")
        fields.subtitleLocKey = try string("subtitle-loc-key")
        fields.subtitleLocArgs = try strings("subtitle-loc-args")
        fields.bodyLocKey = try string("loc-key")
        fields.bodyLocArgs = try strings("loc-args")
        fields.set("action_loc_key", try string("action-loc-key").map(JSONValue.string), forService: .apns)
        fields.set("summary_arg", try string("summary-arg").map(JSONValue.string), forService: .apns)
        if let count = alert["summary-arg-count"], !count.isNull {
            guard let value = count.intValue, value >= 0, value <= Int64(Int32.max) else {
                throw .invalidParameter(field("summary-arg-count"), "must be a non-negative integer")
            }
            fields.set("summary_arg_count", .int(value), forService: .apns)
        }
    }

    /// `{"title": …, "description": …, "custom_content": {…}}`, Baidu's Android notification.
    /// An empty `title` is no title ("可以为空；如果为空则设为 appid 对应的应用名"): the services
    /// that show one show the app's name, as for a missing title.
    private static func notification(fromAndroidStyle members: [String: JSONValue], parameter: String)
        throws(BaiduError) -> PushContent
    {
        let title = members["title"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        let description = members["description"]?.stringValue
        guard title != nil || description != nil else {
            throw .invalidParameter(
                parameter, "an iOS notification needs \"aps\" (or Baidu's \"title\"/\"description\")")
        }
        var notification = PushContent(title: title, body: description)
        notification.set("alert_as_object", true, forService: .apns)
        if let custom = members["custom_content"] {
            guard let object = custom.objectValue else {
                throw .invalidParameter("\(parameter) field custom_content", "must be an object")
            }
            notification.data = object.filter { $0.key != "aps" }
        }
        return notification
    }
}

/// The APNs channel by the name its transport declares (a plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
}
