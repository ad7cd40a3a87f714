import Foundation

/// A message's settings for HarmonyOS NEXT (Huawei Push Kit v3), the same for every device of
/// the message: the native API's `harmony` object, Tencent IM's HarmonyOS offline-push fields.
/// The `harmony` transport reads them; every other transport ignores them.
public struct HarmonyOptions: Sendable, Hashable, Codable {
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

    public init(
        category: String? = nil, clickAction: String? = nil, clickURI: String? = nil, badgeIncrement: Bool = false,
        image: String? = nil, ignoreBadge: Bool = false, testMessage: Bool = false
    ) {
        self.category = category
        self.clickAction = clickAction
        self.clickURI = clickURI
        self.badgeIncrement = badgeIncrement
        self.image = image
        self.ignoreBadge = ignoreBadge
        self.testMessage = testMessage
    }

    private enum CodingKeys: String, CodingKey {
        case category, clickAction, clickURI, badgeIncrement, image, ignoreBadge, testMessage
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        category = try c.decodeIfPresent(String.self, forKey: .category)
        clickAction = try c.decodeIfPresent(String.self, forKey: .clickAction)
        clickURI = try c.decodeIfPresent(String.self, forKey: .clickURI)
        badgeIncrement = try c.decodeIfPresent(Bool.self, forKey: .badgeIncrement) ?? false
        image = try c.decodeIfPresent(String.self, forKey: .image)
        ignoreBadge = try c.decodeIfPresent(Bool.self, forKey: .ignoreBadge) ?? false
        testMessage = try c.decodeIfPresent(Bool.self, forKey: .testMessage) ?? false
    }

    public var isEmpty: Bool { self == HarmonyOptions() }

    /// Huawei's notification categories (its server demo's `Notification.Category`;
    /// docs/reference/harmony.md §3).
    public static let categories: Set<String> = [
        "IM", "VOIP", "SUBSCRIPTION", "TRAVEL", "HEALTH", "WORK", "ACCOUNT", "EXPRESS", "FINANCE", "DEVICE_REMINDER",
        "SYSTEM_REMINDER", "MAIL", "CUSTOMER_SERVICE", "MARKETING", "NEWS", "CONTENT_RECOMMENDATION",
        "SOCIAL_DYNAMICS", "PROMO", "PLAY_VOICE",
    ]
}
