import Foundation

/// What a push says, in no service's words: the one content the native API and the vendor
/// policies produce, stored with the message (and per recipient where a policy decided its
/// own), and rendered by each transport into its service's wire format (APNs JSON by the APNs
/// transport, a JSON message or a form by each other service's own). Nothing reads one service's
/// payload back to build another's.
///
///     var c = PushContent(title: "订单", body: "已发货", badge: 3)
///     c.sound = "default"
///     c.data = ["order_id": 42]
///
/// Kinds of content, as the transports treat them (docs/reference/android.md §12):
/// an **alert** has a title, body or one of their localisation keys; **background** content
/// (`background`, no alert, badge or sound) wakes the app; **badge-only** content sets the
/// badge and shows nothing; **data-only** content is custom keys alone.
///
/// What is the message's rather than the content's (push type, priority, expiry, collapse id,
/// environment, the Android channel and importance settings) stays in `PushOptions`: the same
/// for every recipient of a message, whichever content a policy decides for each.
public struct PushContent: Sendable, Hashable, Codable {
    /// Where a tap on the notification leads, where the service takes one: the one spelling of
    /// "open this" (the native API's `android.intent`, Baidu's `open_type` 1/2, Tencent's
    /// per-service intent all land here); each transport renders it in its service's words.
    public enum ClickAction: Sendable, Hashable, Codable {
        /// Open the app (every service's default).
        case openApp
        /// Open a web address.
        case url(String)
        /// Open an Android intent URI (`intent://…#Intent;…;end`).
        case intent(String)

        private enum CodingKeys: String, CodingKey { case url, intent }

        // Stored as `"app"`, `{"url": …}` or `{"intent": …}`.
        public init(from decoder: any Decoder) throws {
            if let text = try? decoder.singleValueContainer().decode(String.self), text == "app" {
                self = .openApp
                return
            }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let url = try container.decodeIfPresent(String.self, forKey: .url) {
                self = .url(url)
            } else {
                self = .intent(try container.decode(String.self, forKey: .intent))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .openApp:
                var container = encoder.singleValueContainer()
                try container.encode("app")
            case .url(let url):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(url, forKey: .url)
            case .intent(let intent):
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(intent, forKey: .intent)
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

    /// What only APNs takes: iOS's presentation hints, the alert fields no other service has,
    /// critical sounds and Live Activities. The other transports ignore it.
    public struct APNs: Sendable, Hashable, Codable {
        public var interruptionLevel: InterruptionLevel?
        /// 0…1; the system's ordering hint in notification summaries.
        public var relevanceScore: Double?
        /// `mutable-content: 1`: let a notification service extension modify it.
        public var mutableContent: Bool
        public var targetContentID: String?
        public var launchImage: String?
        public var actionLocKey: String?
        /// Render an alert that has only a body as `{"body": …}` rather than the plain string
        /// (the form a vendor's API gave, e.g. Easemob's; iOS shows both alike).
        public var alertAsObject: Bool
        public var summaryArg: String?
        public var summaryArgCount: Int?
        /// With a sound: play it as a critical alert (Apple's entitlement) at this volume, 0…1.
        public var criticalVolume: Double?
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

        public init(
            interruptionLevel: InterruptionLevel? = nil, relevanceScore: Double? = nil, mutableContent: Bool = false,
            targetContentID: String? = nil, launchImage: String? = nil, actionLocKey: String? = nil,
            alertAsObject: Bool = false, summaryArg: String? = nil, summaryArgCount: Int? = nil,
            criticalVolume: Double? = nil,
            timestamp: Date? = nil, event: LiveActivityEvent? = nil, contentState: [String: JSONValue]? = nil,
            staleDate: Date? = nil, dismissalDate: Date? = nil, attributesType: String? = nil,
            attributes: [String: JSONValue]? = nil
        ) {
            self.interruptionLevel = interruptionLevel
            self.relevanceScore = relevanceScore
            self.mutableContent = mutableContent
            self.targetContentID = targetContentID
            self.launchImage = launchImage
            self.actionLocKey = actionLocKey
            self.alertAsObject = alertAsObject
            self.summaryArg = summaryArg
            self.summaryArgCount = summaryArgCount
            self.criticalVolume = criticalVolume
            self.timestamp = timestamp
            self.event = event
            self.contentState = contentState
            self.staleDate = staleDate
            self.dismissalDate = dismissalDate
            self.attributesType = attributesType
            self.attributes = attributes
        }

        /// Nothing set.
        public var isEmpty: Bool { self == APNs() }

        enum CodingKeys: String, CodingKey {
            case interruptionLevel = "interruption_level"
            case relevanceScore = "relevance_score"
            case mutableContent = "mutable_content"
            case targetContentID = "target_content_id"
            case launchImage = "launch_image"
            case actionLocKey = "action_loc_key"
            case summaryArg = "summary_arg"
            case alertAsObject = "alert_as_object"
            case summaryArgCount = "summary_arg_count"
            case criticalVolume = "critical_volume"
            case timestamp
            case event
            case contentState = "content_state"
            case staleDate = "stale_date"
            case dismissalDate = "dismissal_date"
            case attributesType = "attributes_type"
            case attributes
        }

        // Dates as epoch seconds; every key optional (null or missing: unset).
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            func date(_ key: CodingKeys) throws -> Date? {
                try c.decodeIfPresent(Double.self, forKey: key).map(Date.init(timeIntervalSince1970:))
            }
            interruptionLevel = try c.decodeIfPresent(InterruptionLevel.self, forKey: .interruptionLevel)
            relevanceScore = try c.decodeIfPresent(Double.self, forKey: .relevanceScore)
            mutableContent = try c.decodeIfPresent(Bool.self, forKey: .mutableContent) ?? false
            targetContentID = try c.decodeIfPresent(String.self, forKey: .targetContentID)
            launchImage = try c.decodeIfPresent(String.self, forKey: .launchImage)
            actionLocKey = try c.decodeIfPresent(String.self, forKey: .actionLocKey)
            alertAsObject = try c.decodeIfPresent(Bool.self, forKey: .alertAsObject) ?? false
            summaryArg = try c.decodeIfPresent(String.self, forKey: .summaryArg)
            summaryArgCount = try c.decodeIfPresent(Int.self, forKey: .summaryArgCount)
            criticalVolume = try c.decodeIfPresent(Double.self, forKey: .criticalVolume)
            timestamp = try date(.timestamp)
            event = try c.decodeIfPresent(LiveActivityEvent.self, forKey: .event)
            contentState = try c.decodeIfPresent([String: JSONValue].self, forKey: .contentState)
            staleDate = try date(.staleDate)
            dismissalDate = try date(.dismissalDate)
            attributesType = try c.decodeIfPresent(String.self, forKey: .attributesType)
            attributes = try c.decodeIfPresent([String: JSONValue].self, forKey: .attributes)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeIfPresent(interruptionLevel, forKey: .interruptionLevel)
            try c.encodeIfPresent(relevanceScore, forKey: .relevanceScore)
            if mutableContent { try c.encode(true, forKey: .mutableContent) }
            try c.encodeIfPresent(targetContentID, forKey: .targetContentID)
            try c.encodeIfPresent(launchImage, forKey: .launchImage)
            try c.encodeIfPresent(actionLocKey, forKey: .actionLocKey)
            if alertAsObject { try c.encode(true, forKey: .alertAsObject) }
            try c.encodeIfPresent(summaryArg, forKey: .summaryArg)
            try c.encodeIfPresent(summaryArgCount, forKey: .summaryArgCount)
            try c.encodeIfPresent(criticalVolume, forKey: .criticalVolume)
            try c.encodeIfPresent(timestamp?.timeIntervalSince1970, forKey: .timestamp)
            try c.encodeIfPresent(event, forKey: .event)
            try c.encodeIfPresent(contentState, forKey: .contentState)
            try c.encodeIfPresent(staleDate?.timeIntervalSince1970, forKey: .staleDate)
            try c.encodeIfPresent(dismissalDate?.timeIntervalSince1970, forKey: .dismissalDate)
            try c.encodeIfPresent(attributesType, forKey: .attributesType)
            try c.encodeIfPresent(attributes, forKey: .attributes)
        }
    }

    public var title: String?
    public var subtitle: String?
    public var body: String?
    public var titleLocKey: String?
    public var titleLocArgs: [String]?
    public var subtitleLocKey: String?
    public var subtitleLocArgs: [String]?
    public var bodyLocKey: String?
    public var bodyLocArgs: [String]?
    /// The app icon badge (Android: the notification count where the service has one); 0 clears it.
    public var badge: Int?
    /// A sound name (an iOS bundle file or `"default"`; Android services take the message's
    /// `AndroidOptions.sound` first).
    public var sound: String?
    /// A picture shown with the notification, by URL, where the service takes one.
    public var image: String?
    /// The notification's category (iOS actions; an Android click action).
    public var category: String?
    /// Groups notifications (APNs `thread-id`, Android's group or tag).
    public var thread: String?
    /// The app's own keys (APNs: next to `aps`; Android: the message's data). The key `aps` is
    /// reserved (see `validate()`).
    public var data: [String: JSONValue]
    /// Wake the app in the background (APNs `content-available: 1`; Android: a data message
    /// where the service has one).
    public var background: Bool
    /// Where a tap leads; nil = the service's default (open the app).
    public var click: ClickAction?
    /// What only APNs takes.
    public var apns: APNs

    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil, titleLocKey: String? = nil,
        titleLocArgs: [String]? = nil, subtitleLocKey: String? = nil, subtitleLocArgs: [String]? = nil,
        bodyLocKey: String? = nil, bodyLocArgs: [String]? = nil, badge: Int? = nil, sound: String? = nil,
        image: String? = nil, category: String? = nil, thread: String? = nil, data: [String: JSONValue] = [:],
        background: Bool = false, click: ClickAction? = nil, apns: APNs = APNs()
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.subtitleLocKey = subtitleLocKey
        self.subtitleLocArgs = subtitleLocArgs
        self.bodyLocKey = bodyLocKey
        self.bodyLocArgs = bodyLocArgs
        self.badge = badge
        self.sound = sound
        self.image = image
        self.category = category
        self.thread = thread
        self.data = data
        self.background = background
        self.click = click
        self.apns = apns
    }

    enum CodingKeys: String, CodingKey {
        case title
        case subtitle
        case body
        case titleLocKey = "title_loc_key"
        case titleLocArgs = "title_loc_args"
        case subtitleLocKey = "subtitle_loc_key"
        case subtitleLocArgs = "subtitle_loc_args"
        case bodyLocKey = "body_loc_key"
        case bodyLocArgs = "body_loc_args"
        case badge
        case sound
        case image
        case category
        case thread
        case data
        case background
        case click
        case apns
    }

    // Every key optional (null or missing: unset), so the stored form may leave out what is unset.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        title = try c.decodeIfPresent(String.self, forKey: .title)
        subtitle = try c.decodeIfPresent(String.self, forKey: .subtitle)
        body = try c.decodeIfPresent(String.self, forKey: .body)
        titleLocKey = try c.decodeIfPresent(String.self, forKey: .titleLocKey)
        titleLocArgs = try c.decodeIfPresent([String].self, forKey: .titleLocArgs)
        subtitleLocKey = try c.decodeIfPresent(String.self, forKey: .subtitleLocKey)
        subtitleLocArgs = try c.decodeIfPresent([String].self, forKey: .subtitleLocArgs)
        bodyLocKey = try c.decodeIfPresent(String.self, forKey: .bodyLocKey)
        bodyLocArgs = try c.decodeIfPresent([String].self, forKey: .bodyLocArgs)
        badge = try c.decodeIfPresent(Int.self, forKey: .badge)
        sound = try c.decodeIfPresent(String.self, forKey: .sound)
        image = try c.decodeIfPresent(String.self, forKey: .image)
        category = try c.decodeIfPresent(String.self, forKey: .category)
        thread = try c.decodeIfPresent(String.self, forKey: .thread)
        data = try c.decodeIfPresent([String: JSONValue].self, forKey: .data) ?? [:]
        background = try c.decodeIfPresent(Bool.self, forKey: .background) ?? false
        click = try c.decodeIfPresent(ClickAction.self, forKey: .click)
        apns = try c.decodeIfPresent(APNs.self, forKey: .apns) ?? APNs()
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(title, forKey: .title)
        try c.encodeIfPresent(subtitle, forKey: .subtitle)
        try c.encodeIfPresent(body, forKey: .body)
        try c.encodeIfPresent(titleLocKey, forKey: .titleLocKey)
        try c.encodeIfPresent(titleLocArgs, forKey: .titleLocArgs)
        try c.encodeIfPresent(subtitleLocKey, forKey: .subtitleLocKey)
        try c.encodeIfPresent(subtitleLocArgs, forKey: .subtitleLocArgs)
        try c.encodeIfPresent(bodyLocKey, forKey: .bodyLocKey)
        try c.encodeIfPresent(bodyLocArgs, forKey: .bodyLocArgs)
        try c.encodeIfPresent(badge, forKey: .badge)
        try c.encodeIfPresent(sound, forKey: .sound)
        try c.encodeIfPresent(image, forKey: .image)
        try c.encodeIfPresent(category, forKey: .category)
        try c.encodeIfPresent(thread, forKey: .thread)
        if !data.isEmpty { try c.encode(data, forKey: .data) }
        if background { try c.encode(true, forKey: .background) }
        try c.encodeIfPresent(click, forKey: .click)
        if !apns.isEmpty { try c.encode(apns, forKey: .apns) }
    }

    /// Something for a person to read: a title, a body or one of their localisation keys.
    public var hasAlert: Bool { title != nil || body != nil || titleLocKey != nil || bodyLocKey != nil }

    /// Nothing for the user to see or hear: only `background` (and custom data).
    public var isBackgroundOnly: Bool {
        background && !hasAlert && subtitle == nil && subtitleLocKey == nil && badge == nil && sound == nil
    }

    /// The APNs push type this content most likely needs: `.liveactivity` with an event,
    /// `.background` when it is background-only, otherwise `.alert`.
    public var suggestedPushType: PushType {
        if apns.event != nil { return .liveactivity }
        return isBackgroundOnly ? .background : .alert
    }

    /// Checks what a service would reject or silently misread: the reserved data key `aps`, a
    /// negative badge, a relevance score or critical volume outside 0…1.
    public func validate() throws(PayloadError) {
        if data["aps"] != nil {
            throw PayloadError(.reservedKey, "\"aps\" cannot be a custom key; it is the notification itself")
        }
        if let badge, badge < 0 { throw PayloadError(.invalidValue, "badge must be 0 or more, got \(badge)") }
        if let relevanceScore = apns.relevanceScore, !(0...1).contains(relevanceScore) {
            throw PayloadError(.invalidValue, "relevance-score must be within 0…1, got \(relevanceScore)")
        }
        if let volume = apns.criticalVolume, !(0...1).contains(volume) {
            throw PayloadError(.invalidValue, "critical sound volume must be within 0…1, got \(volume)")
        }
    }
}
