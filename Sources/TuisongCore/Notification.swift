import Foundation

/// The canonical notification every vendor adapter produces and `APNsPayload.render` turns
/// into APNs JSON. Field names follow Apple's `aps` keys (camel-cased); `custom` holds the
/// app's own keys, which sit next to `aps` in the payload.
///
///     var n = PushNotification(alert: .fields(.init(title: "订单", body: "已发货")), badge: 3)
///     n.sound = .named("default")
///     n.custom = ["order_id": 42]
///
/// Named `PushNotification`, not `Notification`, so files importing Foundation (which has its
/// own `Notification`) can name it without qualification.
public struct PushNotification: Sendable, Hashable, Codable {
    /// `aps.alert`: a plain string (shown as the body) or a dictionary of fields.
    public enum Alert: Sendable, Hashable, Codable {
        /// Rendered as `"alert": "text"`.
        case plain(String)
        /// Rendered as `"alert": {…}` with only the fields that are set.
        case fields(Fields)

        public struct Fields: Sendable, Hashable, Codable {
            public var title: String?
            public var subtitle: String?
            public var body: String?
            public var launchImage: String?
            public var titleLocKey: String?
            public var titleLocArgs: [String]?
            public var subtitleLocKey: String?
            public var subtitleLocArgs: [String]?
            public var locKey: String?
            public var locArgs: [String]?
            public var actionLocKey: String?
            public var summaryArg: String?
            public var summaryArgCount: Int?

            public init(
                title: String? = nil, subtitle: String? = nil, body: String? = nil, launchImage: String? = nil,
                titleLocKey: String? = nil, titleLocArgs: [String]? = nil, subtitleLocKey: String? = nil,
                subtitleLocArgs: [String]? = nil, locKey: String? = nil, locArgs: [String]? = nil,
                actionLocKey: String? = nil, summaryArg: String? = nil, summaryArgCount: Int? = nil
            ) {
                self.title = title
                self.subtitle = subtitle
                self.body = body
                self.launchImage = launchImage
                self.titleLocKey = titleLocKey
                self.titleLocArgs = titleLocArgs
                self.subtitleLocKey = subtitleLocKey
                self.subtitleLocArgs = subtitleLocArgs
                self.locKey = locKey
                self.locArgs = locArgs
                self.actionLocKey = actionLocKey
                self.summaryArg = summaryArg
                self.summaryArgCount = summaryArgCount
            }
        }

        /// The text a person would read as the body, whichever form the alert has.
        public var body: String? {
            switch self {
            case .plain(let text): return text
            case .fields(let fields): return fields.body
            }
        }

        /// The title, when the alert has one.
        public var title: String? {
            if case .fields(let fields) = self { return fields.title }
            return nil
        }

        // Stored as a JSON string or object, the same shapes as on the wire.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .plain(text)
            } else {
                self = .fields(try container.decode(Fields.self))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .plain(let text): try container.encode(text)
            case .fields(let fields): try container.encode(fields)
            }
        }
    }

    /// `aps.sound`.
    public enum Sound: Sendable, Hashable, Codable {
        /// A sound file in the app bundle, or `"default"`.
        case named(String)
        /// A critical alert sound (needs Apple's entitlement); `volume` 0…1.
        case critical(name: String, volume: Double)

        public var name: String {
            switch self {
            case .named(let name), .critical(let name, _): return name
            }
        }

        private enum CodingKeys: String, CodingKey { case name, volume, critical }

        // Stored as a string or `{"critical":true,"name":…,"volume":…}`.
        public init(from decoder: any Decoder) throws {
            if let name = try? decoder.singleValueContainer().decode(String.self) {
                self = .named(name)
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self = .critical(
                name: try container.decode(String.self, forKey: .name),
                volume: try container.decode(Double.self, forKey: .volume))
        }

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .named(let name):
                var container = encoder.singleValueContainer()
                try container.encode(name)
            case .critical(let name, let volume):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(true, forKey: .critical)
                try container.encode(name, forKey: .name)
                try container.encode(volume, forKey: .volume)
            }
        }
    }

    /// `aps.interruption-level` (iOS 15+).
    public enum InterruptionLevel: String, Sendable, Hashable, Codable, CaseIterable {
        case passive
        case active
        case timeSensitive = "time-sensitive"
        case critical
    }

    /// `aps.event` of a Live Activity push.
    public enum LiveActivityEvent: String, Sendable, Hashable, Codable, CaseIterable {
        case start
        case update
        case end
    }

    public var alert: Alert?
    /// The app icon badge; 0 clears it.
    public var badge: Int?
    public var sound: Sound?
    /// `content-available: 1`: wake the app in the background.
    public var contentAvailable: Bool
    /// `mutable-content: 1`: let a notification service extension modify it.
    public var mutableContent: Bool
    public var category: String?
    public var threadID: String?
    public var targetContentID: String?
    public var interruptionLevel: InterruptionLevel?
    /// 0…1; the system's ordering hint in notification summaries.
    public var relevanceScore: Double?

    // Live Activity (push type `liveactivity`).
    /// When the content state was produced; rendered as epoch seconds.
    public var timestamp: Date?
    public var event: LiveActivityEvent?
    public var contentState: [String: JSONValue]?
    public var staleDate: Date?
    public var dismissalDate: Date?
    /// With `event == .start`: the ActivityAttributes type name and its values.
    public var attributesType: String?
    public var attributes: [String: JSONValue]?

    /// The app's own keys, next to `aps`. The key `aps` itself is reserved (see `validate()`).
    public var custom: [String: JSONValue]

    public init(
        alert: Alert? = nil, badge: Int? = nil, sound: Sound? = nil, contentAvailable: Bool = false,
        mutableContent: Bool = false, category: String? = nil, threadID: String? = nil, targetContentID: String? = nil,
        interruptionLevel: InterruptionLevel? = nil, relevanceScore: Double? = nil, timestamp: Date? = nil,
        event: LiveActivityEvent? = nil, contentState: [String: JSONValue]? = nil, staleDate: Date? = nil,
        dismissalDate: Date? = nil, attributesType: String? = nil, attributes: [String: JSONValue]? = nil,
        custom: [String: JSONValue] = [:]
    ) {
        self.alert = alert
        self.badge = badge
        self.sound = sound
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.category = category
        self.threadID = threadID
        self.targetContentID = targetContentID
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.timestamp = timestamp
        self.event = event
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.attributesType = attributesType
        self.attributes = attributes
        self.custom = custom
    }

    /// Nothing for the user to see or hear: only `content-available` (and custom data).
    public var isBackgroundOnly: Bool { contentAvailable && alert == nil && badge == nil && sound == nil }

    /// The push type this notification most likely needs: `.liveactivity` with an event,
    /// `.background` when it is background-only, otherwise `.alert`.
    public var suggestedPushType: PushType {
        if event != nil { return .liveactivity }
        return isBackgroundOnly ? .background : .alert
    }

    /// Checks what APNs or iOS would reject or silently misread: the reserved custom key
    /// `aps`, a negative badge, a relevance score or critical volume outside 0…1.
    public func validate() throws(PayloadError) {
        if custom["aps"] != nil {
            throw PayloadError(.reservedKey, "\"aps\" cannot be a custom key; it is the notification itself")
        }
        if let badge, badge < 0 { throw PayloadError(.invalidValue, "badge must be 0 or more, got \(badge)") }
        if let relevanceScore, !(0...1).contains(relevanceScore) {
            throw PayloadError(.invalidValue, "relevance-score must be within 0…1, got \(relevanceScore)")
        }
        if case .critical(_, let volume) = sound, !(0...1).contains(volume) {
            throw PayloadError(.invalidValue, "critical sound volume must be within 0…1, got \(volume)")
        }
    }
}
