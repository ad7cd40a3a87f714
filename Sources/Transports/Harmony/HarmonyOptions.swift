import Foundation
import TuisongCore

/// A message's settings for HarmonyOS NEXT (Huawei Push Kit v3), the same for every device of
/// the message: its entry `PushOptions.services["harmony"]`, which the native API's `harmony`
/// object and Tencent IM's `HarmonyInfo` fill. The entry's keys are the native API's
/// (docs/api.md): `category`, `click_action`, `click_uri`, `badge_increment`, `image`,
/// `ignore_badge`, `test_message`, `notify_id`. Only the `harmony` transport reads them.
public struct HarmonyOptions: Sendable, Hashable {
    /// `notification.category` (`IM`, `VOIP`, `WORK`, `MARKETING`, … — Huawei's notification
    /// self-classification, which decides the quota and how the notification alerts); nil =
    /// the credential's default category, else `MARKETING` (the one that needs no entitlement).
    public var category: String?
    /// A page of the app a tap opens (`clickAction.actionType` 1 with `action`); nil = the
    /// app's home page (actionType 0).
    public var clickAction: String?
    /// The page by URI instead (`clickAction.actionType` 1 with `uri`); `clickAction` wins.
    public var clickURI: String?
    /// The content's badge is added to the icon's count (`badge.addNum`) instead of set
    /// (`badge.setNum`).
    public var badgeIncrement: Bool
    /// `notification.image` (https), instead of the content's image (Tencent's `HarmonyImage`).
    public var image: String?
    /// Leaves the app icon's badge alone whatever the content says (Tencent's
    /// `IgnoreHarmonyBadge`).
    public var ignoreBadge: Bool
    /// `pushOptions.testMessage`: a test message, outside the daily quota (at most 1,000 a day
    /// per project) — for apps still in development.
    public var testMessage: Bool
    /// `notification.notifyId`: the notification's id on the device, so that a later one with
    /// the same id replaces it; -1 asks Push Kit for a new id per message, as no id does
    /// (docs/reference/harmony.md §3). nil: none sent.
    public var notifyID: Int32?

    public init(
        category: String? = nil, clickAction: String? = nil, clickURI: String? = nil, badgeIncrement: Bool = false,
        image: String? = nil, ignoreBadge: Bool = false, testMessage: Bool = false, notifyID: Int32? = nil
    ) {
        self.category = category
        self.clickAction = clickAction
        self.clickURI = clickURI
        self.badgeIncrement = badgeIncrement
        self.image = image
        self.ignoreBadge = ignoreBadge
        self.testMessage = testMessage
        self.notifyID = notifyID
    }

    public var isEmpty: Bool { self == HarmonyOptions() }

    /// The documented key of each setting, and the Codable key a row stored before per-service
    /// options had it under (`PushOptions`'s old `harmony` member, read into the same entry;
    /// `notify_id` came later and has no other spelling).
    static let keys: [(entry: String, legacy: String)] = [
        ("category", "category"), ("click_action", "clickAction"), ("click_uri", "clickURI"),
        ("badge_increment", "badgeIncrement"), ("image", "image"), ("ignore_badge", "ignoreBadge"),
        ("test_message", "testMessage"), ("notify_id", "notify_id"),
    ]

    /// Push Kit's `notifyId` is an Integer (the server demo's Java `Integer`, 32 bits): -1, its
    /// "make one per message", or an id of the app's (docs/reference/harmony.md §3).
    public static let notifyIDRange: ClosedRange<Int64> = -1...Int64(Int32.max)

    /// The settings of a message's entry, in either spelling; none for no entry. A value of
    /// the wrong type reads as unset (the rule checked the entry when it was stored).
    public init(_ entry: JSONValue?) {
        self.init()
        guard case .object(let members)? = entry else { return }
        func value(_ key: String) -> JSONValue? {
            let legacy = Self.keys.first { $0.entry == key }?.legacy ?? key
            return members[key] ?? members[legacy]
        }
        category = value("category")?.stringValue
        clickAction = value("click_action")?.stringValue
        clickURI = value("click_uri")?.stringValue
        badgeIncrement = value("badge_increment")?.boolValue ?? false
        image = value("image")?.stringValue
        ignoreBadge = value("ignore_badge")?.boolValue ?? false
        testMessage = value("test_message")?.boolValue ?? false
        notifyID = value("notify_id")?.intValue.flatMap { Self.notifyIDRange.contains($0) ? Int32($0) : nil }
    }

    /// The entry in the documented keys, without the settings left at their defaults; nil when
    /// every one is.
    public var entry: JSONValue? {
        var members: [String: JSONValue] = [:]
        if let category { members["category"] = .string(category) }
        if let clickAction { members["click_action"] = .string(clickAction) }
        if let clickURI { members["click_uri"] = .string(clickURI) }
        if badgeIncrement { members["badge_increment"] = true }
        if let image { members["image"] = .string(image) }
        if ignoreBadge { members["ignore_badge"] = true }
        if testMessage { members["test_message"] = true }
        if let notifyID { members["notify_id"] = .int(Int64(notifyID)) }
        return members.isEmpty ? nil : .object(members)
    }

    /// The `harmony` transport's rule for its entry (docs/reference/harmony.md §8): the
    /// documented keys only, each of its type, a category of Huawei's, an https image, a
    /// `notify_id` Push Kit can take.
    public static let rule = ServiceOptionsRule { (value) throws(ServiceOptionsError) -> JSONValue? in
        let reader = try ServiceOptionsReader(value, known: Set(keys.map(\.entry)))
        let options = HarmonyOptions(
            category: try reader.string("category", limit: 64),
            clickAction: try reader.string("click_action", limit: 256),
            clickURI: try reader.string("click_uri", limit: 2048), badgeIncrement: try reader.bool("badge_increment"),
            image: try reader.string("image", limit: 2048), ignoreBadge: try reader.bool("ignore_badge"),
            testMessage: try reader.bool("test_message"),
            notifyID: try reader.integer("notify_id", in: notifyIDRange).map { Int32($0) })
        if let category = options.category, !categories.contains(category) {
            throw ServiceOptionsError(
                field: "category", "must be one of \(categories.sorted().joined(separator: ", "))")
        }
        if let image = options.image, !image.lowercased().hasPrefix("https://") {
            throw ServiceOptionsError(field: "image", "must be an https URL")
        }
        return options.entry
    }

    /// Huawei's notification categories (its server demo's `Notification.Category`;
    /// docs/reference/harmony.md §3).
    public static let categories: Set<String> = [
        "IM", "VOIP", "SUBSCRIPTION", "TRAVEL", "HEALTH", "WORK", "ACCOUNT", "EXPRESS", "FINANCE", "DEVICE_REMINDER",
        "SYSTEM_REMINDER", "MAIL", "CUSTOMER_SERVICE", "MARKETING", "NEWS", "CONTENT_RECOMMENDATION",
        "SOCIAL_DYNAMICS", "PROMO", "PLAY_VOICE",
    ]
}
