import TuisongCore

/// What an Android push service is told of a push, read from the APNs payload every policy
/// decides (`OutgoingPush.payload`): Android transports render their service's message from
/// this, so a vendor's rules (templates, do-not-disturb, per-recipient badges) reach Android
/// devices exactly as they reach iOS ones.
///
/// The mapping: `aps.alert` (a string, or `title`/`subtitle`/`body` and their `-loc-key` and
/// `-loc-args`) → title and body; `aps.badge` → the notification count; `aps.sound` (a name,
/// or a critical-sound object's `name`) → the sound; `aps.thread-id` → the tag that groups and
/// replaces; `aps.category` → the click action; a payload whose `aps` has no alert is a data
/// message (`content-available` pushes). Every key outside `aps` is data: a string as it is,
/// anything else as its JSON text (FCM's and Huawei's data values are strings).
public struct AndroidContent: Sendable, Hashable {
    public var title: String?
    public var subtitle: String?
    public var body: String?
    public var titleLocKey: String?
    public var titleLocArgs: [String]?
    public var bodyLocKey: String?
    public var bodyLocArgs: [String]?
    public var badge: Int?
    public var sound: String?
    public var threadID: String?
    public var category: String?
    /// No alert: the app is woken with data only (APNs's background push).
    public var isDataOnly: Bool
    /// Custom keys, sorted by key.
    public var data: [DataEntry]

    public struct DataEntry: Sendable, Hashable {
        public var key: String
        public var value: String
    }

    /// A payload that is not an APNs payload.
    public struct NotAnAPNsPayload: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Reads an APNs payload; throws when it is not a JSON object with an `aps` object (the
    /// gateway never builds such a payload, so that is a policy's bug, answered as a failure).
    public init(apnsPayload: [UInt8]) throws(NotAnAPNsPayload) {
        let root: JSONValue
        do {
            root = try JSONValue(parsing: apnsPayload)
        } catch {
            throw NotAnAPNsPayload(description: error.description)
        }
        guard let object = root.objectValue, let aps = object["aps"]?.objectValue else {
            throw NotAnAPNsPayload(description: "an APNs payload is an object with an aps object")
        }
        switch aps["alert"] {
        case .string(let text)?:
            body = text
        case .object(let alert)?:
            title = alert["title"]?.stringValue
            subtitle = alert["subtitle"]?.stringValue
            body = alert["body"]?.stringValue
            titleLocKey = alert["title-loc-key"]?.stringValue
            titleLocArgs = alert["title-loc-args"]?.arrayValue?.compactMap(Self.text)
            bodyLocKey = alert["loc-key"]?.stringValue
            bodyLocArgs = alert["loc-args"]?.arrayValue?.compactMap(Self.text)
        default:
            break
        }
        isDataOnly = title == nil && body == nil && titleLocKey == nil && bodyLocKey == nil
        badge = aps["badge"]?.intValue.map { Int(clamping: $0) }
        switch aps["sound"] {
        case .string(let name)?: sound = name
        case .object(let critical)?: sound = critical["name"]?.stringValue
        default: break
        }
        threadID = aps["thread-id"]?.stringValue
        category = aps["category"]?.stringValue
        data = object.filter { $0.key != "aps" }.map { DataEntry(key: $0.key, value: Self.text($0.value) ?? "") }
            .sorted { $0.key < $1.key }
    }

    /// A string as it is; a number or boolean as its JSON; an object or array as its JSON text.
    private static func text(_ value: JSONValue) -> String? {
        if case .string(let string) = value { return string }
        return value.serializedString
    }
}
