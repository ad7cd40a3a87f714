import Foundation

/// What a push says, in no service's words: the one content the native API and the vendor
/// policies produce, stored with the message (and per recipient where a policy decided its
/// own), and rendered by each transport into its service's wire format (a JSON payload, a JSON
/// message or a form). Nothing reads one service's payload back to build another's. What one
/// service alone takes of the content is that service's entry in `services`.
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
public struct PushContent: Sendable, Hashable, Codable, JSONValueRepresentable {
    /// Where a tap on the notification leads, where the service takes one: the one spelling of
    /// "open this" (the native API's `android.intent`, Baidu's `open_type` 1/2, Tencent's
    /// per-service intent all land here); each transport renders it in its service's words.
    public enum ClickAction: Sendable, Hashable, Codable, JSONValueRepresentable {
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

        public func encode(to encoder: any Encoder) throws { try jsonValue().encode(to: encoder) }

        public func jsonValue() -> JSONValue {
            switch self {
            case .openApp: .string("app")
            case .url(let url): .object([CodingKeys.url.stringValue: .string(url)])
            case .intent(let intent): .object([CodingKeys.intent.stringValue: .string(intent)])
            }
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
    /// Groups notifications (an iOS thread, Android's group or tag).
    public var thread: String?
    /// The app's own keys (iOS: next to `aps`; Android: the message's data). The key `aps` is
    /// reserved (see `validate()`).
    public var data: [String: JSONValue]
    /// Wake the app in the background (iOS: `content-available: 1`; Android: a data message
    /// where the service has one).
    public var background: Bool
    /// Where a tap leads; nil = the service's default (open the app).
    public var click: ClickAction?
    /// What one transport alone takes of the content, by its channel name: iOS's presentation
    /// hints, critical sounds and Live Activities, … Each entry is an object in that transport's
    /// documented keys (the native API's names of the fields), filled by the native API and the
    /// vendor plugins, checked by that transport's `PushTransport.check` when a message is
    /// accepted and read by that transport only; Core knows none of them.
    public var services: [String: JSONValue]

    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil, titleLocKey: String? = nil,
        titleLocArgs: [String]? = nil, subtitleLocKey: String? = nil, subtitleLocArgs: [String]? = nil,
        bodyLocKey: String? = nil, bodyLocArgs: [String]? = nil, badge: Int? = nil, sound: String? = nil,
        image: String? = nil, category: String? = nil, thread: String? = nil, data: [String: JSONValue] = [:],
        background: Bool = false, click: ClickAction? = nil, services: [String: JSONValue] = [:]
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
        self.services = services
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
        case services
    }

    /// Any key of a stored row's content object.
    private struct StoredKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
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
        services = try c.decodeIfPresent([String: JSONValue].self, forKey: .services) ?? [:]
        // Rows written before per-service content kept a service's fields beside the shared ones,
        // under the service's name, in the keys its entry has now: read into its entry. An entry
        // under `services` wins.
        let stored = try decoder.container(keyedBy: StoredKey.self)
        for key in stored.allKeys where CodingKeys(rawValue: key.stringValue) == nil && services[key.stringValue] == nil
        {
            let value = try stored.decode(JSONValue.self, forKey: key)
            if value != .null { services[key.stringValue] = value }
        }
    }

    public func encode(to encoder: any Encoder) throws { try jsonValue().encode(to: encoder) }

    /// The stored form: what is unset is left out.
    public func jsonValue() -> JSONValue {
        var members: [String: JSONValue] = [:]
        func put(_ key: CodingKeys, _ text: String?) { if let text { members[key.stringValue] = .string(text) } }
        func put(_ key: CodingKeys, _ list: [String]?) {
            if let list { members[key.stringValue] = .array(list.map(JSONValue.string)) }
        }
        put(.title, title)
        put(.subtitle, subtitle)
        put(.body, body)
        put(.titleLocKey, titleLocKey)
        put(.titleLocArgs, titleLocArgs)
        put(.subtitleLocKey, subtitleLocKey)
        put(.subtitleLocArgs, subtitleLocArgs)
        put(.bodyLocKey, bodyLocKey)
        put(.bodyLocArgs, bodyLocArgs)
        if let badge { members[CodingKeys.badge.stringValue] = .int(Int64(badge)) }
        put(.sound, sound)
        put(.image, image)
        put(.category, category)
        put(.thread, thread)
        if !data.isEmpty { members[CodingKeys.data.stringValue] = .object(data) }
        if background { members[CodingKeys.background.stringValue] = .bool(true) }
        if let click { members[CodingKeys.click.stringValue] = click.jsonValue() }
        if !services.isEmpty { members[CodingKeys.services.stringValue] = .object(services) }
        return .object(members)
    }

    /// Something for a person to read: a title, a body or one of their localisation keys.
    public var hasAlert: Bool { title != nil || body != nil || titleLocKey != nil || bodyLocKey != nil }

    /// Nothing for the user to see or hear: only `background` (and custom data).
    public var isBackgroundOnly: Bool {
        background && !hasAlert && subtitle == nil && subtitleLocKey == nil && badge == nil && sound == nil
    }

    /// The push type this content most likely needs: `.background` when it is background-only,
    /// otherwise `.alert`.
    public var suggestedPushType: PushType { isBackgroundOnly ? .background : .alert }

    /// Sets `key` of `channel`'s entry in `services` (creating the entry), for the native API and
    /// a vendor plugin mapping a field of theirs onto the one service that takes it; nil removes
    /// the key, and the entry once it is empty. A whole number is kept as it reads back
    /// (`JSONValue.number`), so the content equals itself stored and read again.
    ///
    ///     content.set("mutable_content", true, forService: channel)
    public mutating func set(_ key: String, _ value: JSONValue?, forService channel: PushChannel) {
        var members = services[channel.rawValue]?.objectValue ?? [:]
        if case .double(let number)? = value {
            members[key] = .number(number)
        } else {
            members[key] = value
        }
        services[channel.rawValue] = members.isEmpty ? nil : .object(members)
    }

    /// Checks what every service would reject or silently misread: the reserved data key `aps`
    /// and a negative badge. Each transport checks its own entry of `services`.
    public func validate() throws(PayloadError) {
        if data["aps"] != nil {
            throw PayloadError(.reservedKey, "\"aps\" cannot be a custom key; it is the notification itself")
        }
        if let badge, badge < 0 { throw PayloadError(.invalidValue, "badge must be 0 or more, got \(badge)") }
    }
}
