import Foundation

/// Who a push goes to. Vendor adapters translate their own addressing (users, channels,
/// IM accounts) into one of these.
public enum Audience: Sendable, Hashable, Codable, JSONValueRepresentable {
    /// Explicit device tokens, registered or not (validated; hex tokens in lower case).
    case tokens([String])
    /// Registered device ids of the app.
    case devices([Int64])
    /// Every valid device carrying the tag.
    case tag(String)
    /// Every valid device of the app.
    case all
    /// Devices bound to these IM accounts / users (an IM vendor's identifiers or
    /// usernames; a vendor's own user ids are resolved by its adapter to `devices`). One account may have
    /// several devices; pages carry each device's account, app state, locale and selector.
    case accounts([String])
    /// Every valid device bound to any account of the app (an IM "push to everyone").
    case allAccounts
    /// Every valid device whose tags satisfy the selection (JPush's `tag`, `tag_and` and
    /// `tag_not`), read page by page when the message is sent, as a tag is: no device list is
    /// built when the push is accepted.
    case tagSelection(TagSelection)

    public func encode(to encoder: any Encoder) throws { try jsonValue().encode(to: encoder) }

    /// The text Swift's synthesized `Codable` writes (`{"tokens":{"_0":[…]}}`, `{"all":{}}`),
    /// which decoding (still synthesized) reads: every stored message's audience is in it.
    public func jsonValue() -> JSONValue {
        func payload(_ value: JSONValue) -> JSONValue { .object(["_0": value]) }
        let (key, value): (String, JSONValue) =
            switch self {
            case .tokens(let tokens): ("tokens", payload(.array(tokens.map(JSONValue.string))))
            case .devices(let ids): ("devices", payload(.array(ids.map(JSONValue.int))))
            case .tag(let tag): ("tag", payload(.string(tag)))
            case .all: ("all", .object([:]))
            case .accounts(let accounts): ("accounts", payload(.array(accounts.map(JSONValue.string))))
            case .allAccounts: ("allAccounts", .object([:]))
            case .tagSelection(let selection): ("tagSelection", payload(selection.jsonValue()))
            }
        return .object([key: value])
    }

    /// A short label for logs and the console, never the whole list.
    public var summary: String {
        switch self {
        case .tokens(let t): "\(t.count) token(s)"
        case .devices(let d): "\(d.count) device(s)"
        case .tag(let tag): "tag \(tag)"
        case .all: "all devices"
        case .accounts(let a): "\(a.count) account(s)"
        case .allAccounts: "all accounts"
        case .tagSelection(let selection): selection.summary
        }
    }
}

/// Devices chosen by their tags: carrying any of `anyOf` (when it is not empty), all of
/// `allOf`, and none of `noneOf`. An empty selection is every valid device of the app.
public struct TagSelection: Sendable, Hashable, Codable, JSONValueRepresentable {
    public var anyOf: [String]
    public var allOf: [String]
    public var noneOf: [String]

    public func encode(to encoder: any Encoder) throws { try jsonValue().encode(to: encoder) }

    /// The synthesized text: all three lists, empty ones included.
    public func jsonValue() -> JSONValue {
        [
            "anyOf": .array(anyOf.map(JSONValue.string)), "allOf": .array(allOf.map(JSONValue.string)),
            "noneOf": .array(noneOf.map(JSONValue.string)),
        ]
    }

    public init(anyOf: [String] = [], allOf: [String] = [], noneOf: [String] = []) {
        self.anyOf = anyOf
        self.allOf = allOf
        self.noneOf = noneOf
    }

    /// Whether a device carrying `tags` is selected.
    public func matches(_ tags: Set<String>) -> Bool {
        (anyOf.isEmpty || anyOf.contains(where: tags.contains)) && allOf.allSatisfy(tags.contains)
            && !noneOf.contains(where: tags.contains)
    }

    /// A short label for logs and the console: the tags, not every device.
    public var summary: String {
        var parts: [String] = []
        if !anyOf.isEmpty { parts.append("any of \(anyOf.joined(separator: ", "))") }
        if !allOf.isEmpty { parts.append("all of \(allOf.joined(separator: ", "))") }
        if !noneOf.isEmpty { parts.append("none of \(noneOf.joined(separator: ", "))") }
        return parts.isEmpty ? "all devices" : "tags: " + parts.joined(separator: "; ")
    }
}

/// How a message is to be delivered; the same for every device of the message.
public struct PushOptions: Sendable, Hashable, Codable, JSONValueRepresentable {
    public var pushType: PushType
    public var priority: PushPriority?
    /// When the services may stop trying; `nil` = the gateway's default (24 h). Retries stop
    /// then too.
    public var expiration: Date?
    public var collapseID: String?
    /// `nil` = every device in its own environment; set = only the devices of that
    /// environment, whatever their channel: the others are skipped `other_environment`, and
    /// an explicit token no device registered is sent there.
    public var environment: PushEnvironment?
    /// What Android services share (notification channels, importance, category, sound): a
    /// vendor API's Android fields. `nil` = none. A field one service alone takes is that
    /// service's entry in `services`.
    public var android: AndroidOptions?
    /// What one transport alone takes, by its channel name: a service's category, click
    /// action, badge increment, classification, … Each entry is an object in that transport's documented keys
    /// (the native API's object of the same name), checked by the rule its declaration gives
    /// (`ChannelDeclaration.options`) and read by that transport only; Core knows none of them.
    public var services: [String: JSONValue]

    public init(
        pushType: PushType = .alert, priority: PushPriority? = nil, expiration: Date? = nil,
        collapseID: String? = nil, environment: PushEnvironment? = nil, android: AndroidOptions? = nil,
        services: [String: JSONValue] = [:]
    ) {
        self.android = android
        self.services = services
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.environment = environment
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case pushType, priority, expiration, collapseID, environment, android, services
    }

    /// Any key of a stored row's options object.
    private struct StoredKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pushType = try c.decode(PushType.self, forKey: .pushType)
        priority = try c.decodeIfPresent(PushPriority.self, forKey: .priority)
        expiration = try c.decodeIfPresent(Date.self, forKey: .expiration)
        collapseID = try c.decodeIfPresent(String.self, forKey: .collapseID)
        environment = try c.decodeIfPresent(PushEnvironment.self, forKey: .environment)
        android = try c.decodeIfPresent(AndroidOptions.self, forKey: .android)
        services = try c.decodeIfPresent([String: JSONValue].self, forKey: .services) ?? [:]
        // Rows written before per-service options kept a service's settings beside the shared
        // ones, under the service's name, in its transport's own Codable keys: read into its
        // entry, which that transport reads in either spelling. An entry under `services` wins.
        let known = Set(CodingKeys.allCases.map(\.stringValue))
        let stored = try decoder.container(keyedBy: StoredKey.self)
        for key in stored.allKeys where !known.contains(key.stringValue) && services[key.stringValue] == nil {
            let value = try stored.decode(JSONValue.self, forKey: key)
            if value != .null { services[key.stringValue] = value }
        }
    }

    public func encode(to encoder: any Encoder) throws { try jsonValue().encode(to: encoder) }

    public func jsonValue() -> JSONValue {
        var members: [String: JSONValue] = [CodingKeys.pushType.stringValue: .string(pushType.rawValue)]
        if let priority { members[CodingKeys.priority.stringValue] = .int(Int64(priority.rawValue)) }
        if let expiration {
            // As `Date` encodes itself (`JSONEncoder`'s default): seconds since 2001.
            members[CodingKeys.expiration.stringValue] = .double(expiration.timeIntervalSinceReferenceDate)
        }
        if let collapseID { members[CodingKeys.collapseID.stringValue] = .string(collapseID) }
        if let environment { members[CodingKeys.environment.stringValue] = .string(environment.rawValue) }
        if let android { members[CodingKeys.android.stringValue] = android.jsonValue() }
        if !services.isEmpty { members[CodingKeys.services.stringValue] = .object(services) }
        return .object(members)
    }
}

/// A message's settings for Android services, the same for every device of the message
/// (Tencent IM's `OfflinePushInfo.AndroidInfo`, the native API's `android` object). Each
/// service's transport takes what it understands and ignores the rest.
public struct AndroidOptions: Sendable, Hashable, Codable, JSONValueRepresentable {
    /// Per service: the Android notification channel (Android 8+) the notification shows in,
    /// by channel name.
    public var channelIDs: [String: String]
    /// Per service: the notification's importance in the service's words (`NORMAL` or `LOW`
    /// where it takes one).
    public var importance: [String: String]
    /// Per service: the message's category in the service's words (`IM`, `VOIP`,
    /// `ACCOUNT`, …).
    public var category: [String: String]
    /// The Android sound resource to play, for every Android service (the content's `sound` is
    /// an iOS file).
    public var sound: String?
    /// Where a tap led, as a message stored before #29 said it here (`intent`, `url`: Baidu's
    /// `open_type`, the native API's `android.intent`, Tencent's per-service intent). Messages now
    /// say it once, in their content (`PushContent.click`); the transports take this only when
    /// the content has none. Read from the old keys (an intent winning over a URL, as it did)
    /// and written back under them; never set for a new message.
    public var legacyClick: PushContent.ClickAction?
    /// Keys a row stored by an older build has here that this build's Core no longer reads (a
    /// field one service alone took, which now lives in that service's `PushOptions.services`
    /// entry), kept verbatim and written back: the transport they were for reads them when the
    /// message has no entry of its own. Never set for a new message.
    public var olderFields: [String: JSONValue] = [:]

    public init(
        channelIDs: [String: String] = [:], importance: [String: String] = [:], category: [String: String] = [:],
        sound: String? = nil
    ) {
        self.channelIDs = channelIDs
        self.importance = importance
        self.category = category
        self.sound = sound
    }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case channelIDs, importance, category, sound, intent, url
    }

    /// Any key of a stored row's Android object.
    private struct StoredKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        channelIDs = try container.decodeIfPresent([String: String].self, forKey: .channelIDs) ?? [:]
        importance = try container.decodeIfPresent([String: String].self, forKey: .importance) ?? [:]
        category = try container.decodeIfPresent([String: String].self, forKey: .category) ?? [:]
        sound = try container.decodeIfPresent(String.self, forKey: .sound)
        if let intent = try container.decodeIfPresent(String.self, forKey: .intent) {
            legacyClick = .intent(intent)
        } else if let url = try container.decodeIfPresent(String.self, forKey: .url) {
            legacyClick = .url(url)
        }
        let known = Set(CodingKeys.allCases.map(\.stringValue))
        let stored = try decoder.container(keyedBy: StoredKey.self)
        for key in stored.allKeys where !known.contains(key.stringValue) {
            olderFields[key.stringValue] = try stored.decode(JSONValue.self, forKey: key)
        }
    }

    public func encode(to encoder: any Encoder) throws { try jsonValue().encode(to: encoder) }

    public func jsonValue() -> JSONValue {
        // One object of any keys: the older ones, and the named fields over them.
        var members = olderFields
        func map(_ values: [String: String]) -> JSONValue { .object(values.mapValues(JSONValue.string)) }
        members[CodingKeys.channelIDs.stringValue] = map(channelIDs)
        members[CodingKeys.importance.stringValue] = map(importance)
        members[CodingKeys.category.stringValue] = map(category)
        if let sound { members[CodingKeys.sound.stringValue] = .string(sound) }
        switch legacyClick {
        case .intent(let intent)?: members[CodingKeys.intent.stringValue] = .string(intent)
        case .url(let url)?: members[CodingKeys.url.stringValue] = .string(url)
        case .openApp?, nil: break
        }
        return .object(members)
    }

    public var isEmpty: Bool { self == AndroidOptions() }
}

/// What a provider (or the native API) asks the gateway to send.
public struct PushJob: Sendable, Hashable {
    public var appID: Int64
    /// `native` or a provider's `name`: whose API accepted it.
    public var vendor: String
    /// The vendor's own id for the message (a `msg_id`, …) if it has one, for lookups.
    public var vendorMessageID: String?
    public var audience: Audience
    /// What the push says, stored once with the message; each transport renders its
    /// service's message from it.
    public var content: PushContent
    public var options: PushOptions
    /// Scheduled send (a vendor's `send_time`); `nil` = now.
    public var sendAt: Date?
    /// Free-form labels kept with the message for statistics (a `topic_id`, …).
    public var labels: [String: String]
    /// The vendor's own description of the message (sender, group id, elements, ext…), kept
    /// with it for the vendor's `DeliveryPolicy` to read back. `nil` for one-payload vendors.
    public var vendorContext: JSONValue?
    /// The caller's `Idempotency-Key` (`IdempotencyKey`): while the app has a message under this
    /// key from the last 24 hours, `MessageStore.createMessage` answers that message instead of
    /// creating another. The key is committed with the message, in one transaction.
    public var idempotencyKey: String?

    public init(
        appID: Int64, vendor: String, vendorMessageID: String? = nil, audience: Audience,
        content: PushContent, options: PushOptions, sendAt: Date? = nil,
        labels: [String: String] = [:], vendorContext: JSONValue? = nil, idempotencyKey: String? = nil
    ) {
        self.idempotencyKey = idempotencyKey
        self.appID = appID
        self.vendor = vendor
        self.vendorMessageID = vendorMessageID
        self.audience = audience
        self.content = content
        self.options = options
        self.sendAt = sendAt
        self.labels = labels
        self.vendorContext = vendorContext
    }
}

/// The life of a message.
public enum MessageState: String, Sendable, Codable, Hashable {
    /// Accepted; waiting for its `sendAt`.
    case scheduled
    /// Accepted; the dispatcher has not started it.
    case queued
    /// Being expanded and sent.
    case sending
    /// Every device was tried; retries, quotas and holds may remain (see counts, and
    /// `MessageStatus.state`, which says `completed` only once none does).
    case completed
    /// Cancelled before it was sent (scheduled pushes).
    case cancelled
}

/// Where one device's delivery stands.
public enum DeliveryState: String, Sendable, Codable, Hashable, CaseIterable {
    case queued, sending, delivered, failed, skipped, held
}

/// Per-state counts of one message.
public struct DeliveryCounts: Sendable, Hashable, Codable {
    public var queued = 0
    public var sending = 0
    public var delivered = 0
    public var failed = 0
    public var skipped = 0
    public var held = 0

    public init() {}

    public subscript(state: DeliveryState) -> Int {
        get {
            switch state {
            case .queued: queued
            case .sending: sending
            case .delivered: delivered
            case .failed: failed
            case .skipped: skipped
            case .held: held
            }
        }
        set {
            switch state {
            case .queued: queued = newValue
            case .sending: sending = newValue
            case .delivered: delivered = newValue
            case .failed: failed = newValue
            case .skipped: skipped = newValue
            case .held: held = newValue
            }
        }
    }

    public var total: Int { queued + sending + delivered + failed + skipped + held }
}
