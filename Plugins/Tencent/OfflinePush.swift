import TuisongCore

/// Who a message is from, as the push prefix needs it (seed 003).
enum PushOrigin: Sendable, Hashable {
    /// One-to-one: `Nick:content`, or just `content` when the sender has no nick.
    case oneToOne(senderNick: String?)
    /// Group: `Name(GroupName):content`, Name = the sender's NameCard in the group, else the
    /// nick, else the sender's identifier; a message with no sender (a system message) shows
    /// `(GroupName):content`.
    case group(senderName: String?, groupName: String)
    /// A push to every account (all_member_push): the sender's nick when it has one.
    case broadcast(senderNick: String?)
}

/// What a message's offline push looks like for every receiver but its badge: rendered once
/// when the message is accepted and kept with it (`MessageRecord.vendorContext`), so the
/// delivery policy only adds each receiver's badge.
struct OfflinePushTemplate: Sendable, Hashable {
    /// The sending account, which is never pushed its own message.
    var sender: String?
    /// `aps.alert` (or its `body` when there is a title).
    var alert: String
    var title: String?
    /// `OfflinePushInfo.Title` alone: Android devices get the common fields, never ApnsInfo's.
    var androidTitle: String?
    var subtitle: String?
    var sound: String?
    /// Top-level `ext`.
    var ext: String?
    /// Top-level `image` (ApnsInfo.Image), for the app's notification service extension.
    var image: String?
    var mutableContent = false
    /// Whether a push counts towards (and carries) the receiver's badge (BadgeMode 0).
    var countsBadge = true
    /// Why nobody gets this message (`push_flag`, `empty_content`), or nil.
    var suppressed: String?
    /// The intent an Android device's notification opens (the app's `huawei_intent` setting,
    /// `Ext` appended when `ExtAsHuaweiIntentParam` is 1): its content's click. A message kept
    /// before #29 has it in its `AndroidOptions` instead, which the transports still read.
    var androidIntent: String?

    /// The rules of seed 003 and Tencent's OfflinePushInfo.
    init(sender: String?, origin: PushOrigin, elements: [MessageElement], pushInfo: OfflinePushInfo?) {
        self.sender = sender
        let custom = MessageElement.custom(elements)
        var content = MessageElement.pushContent(elements)
        if let desc = pushInfo?.desc, !desc.isEmpty { content = desc }
        let isEmpty = content.isEmpty
        content = Self.shortened(content, toBytes: Self.contentLimit)

        switch origin {
        case .oneToOne(let nick), .broadcast(let nick):
            if let nick, !nick.isEmpty { alert = "\(nick):\(content)" } else { alert = content }
        case .group(let name, let groupName):
            alert = "\(name ?? "")(\(groupName)):\(content)"
        }
        androidTitle = Self.nonEmpty(pushInfo?.title)
        title = Self.nonEmpty(pushInfo?.apnsTitle) ?? androidTitle
        subtitle = Self.nonEmpty(pushInfo?.subtitle)
        sound = Self.nonEmpty(pushInfo?.apnsSound) ?? Self.nonEmpty(custom?.content["Sound"]?.stringValue)
        ext = Self.nonEmpty(pushInfo?.ext) ?? Self.nonEmpty(custom?.content["Ext"]?.stringValue)
        image = Self.nonEmpty(pushInfo?.image)
        mutableContent = pushInfo?.mutableContent ?? false
        countsBadge = (pushInfo?.badgeMode ?? 0) != 1
        if pushInfo?.pushFlag == 1 {
            suppressed = "push_flag"
        } else if isEmpty {
            suppressed = "empty_content"
        }
    }

    /// The most UTF-8 bytes of content a push carries. A message may hold up to 8 KB of text
    /// but an APNs payload only 4 KB: like Tencent, the push shows the beginning of a long
    /// message rather than refusing it.
    static let contentLimit = 2_000

    /// `text` cut on a character boundary to at most `limit` bytes, ending with "…" when cut.
    static func shortened(_ text: String, toBytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        let ellipsis = "…"
        var result = ""
        var size = ellipsis.utf8.count
        for character in text {
            let length = character.utf8.count
            guard size + length <= limit else { break }
            result.append(character)
            size += length
        }
        return result + ellipsis
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }

    /// The content for one receiver; `badge` nil leaves the badge out. An Android
    /// device's (`android`) has the common fields only: the alert with `OfflinePushInfo.Title`,
    /// the badge and `ext`; none of ApnsInfo's title, subtitle, sound, image or mutable-content,
    /// and not a custom element's `Sound` (an iOS sound file). Its sound is
    /// `AndroidInfo.Sound`, which reaches the transports in `PushOptions.android`.
    func content(badge: Int?, android: Bool = false) -> PushContent {
        var content = PushContent(body: alert, badge: badge)
        if android {
            content.title = androidTitle
            if let ext { content.data["ext"] = .string(ext) }
            if let androidIntent { content.click = .intent(androidIntent) }
            return content
        }
        content.title = title
        content.subtitle = subtitle
        content.sound = sound
        if mutableContent { content.set("mutable_content", true, forService: .apns) }
        if let ext { content.data["ext"] = .string(ext) }
        if let image { content.data["image"] = .string(image) }
        return content
    }

    // MARK: Kept with the message

    var vendorContext: JSONValue {
        var object: [String: JSONValue] = [
            "alert": .string(alert), "counts_badge": .bool(countsBadge), "mutable_content": .bool(mutableContent),
        ]
        func set(_ key: String, _ value: String?) { if let value { object[key] = .string(value) } }
        set("sender", sender)
        set("title", title)
        set("android_title", androidTitle)
        set("subtitle", subtitle)
        set("sound", sound)
        set("ext", ext)
        set("image", image)
        set("suppressed", suppressed)
        set("android_intent", androidIntent)
        return ["offline_push": .object(object)]
    }

    init?(vendorContext: JSONValue?) {
        guard let object = vendorContext?["offline_push"]?.objectValue, let alert = object["alert"]?.stringValue
        else { return nil }
        self.alert = alert
        sender = object["sender"]?.stringValue
        title = object["title"]?.stringValue
        androidTitle = object["android_title"]?.stringValue
        subtitle = object["subtitle"]?.stringValue
        sound = object["sound"]?.stringValue
        ext = object["ext"]?.stringValue
        image = object["image"]?.stringValue
        mutableContent = object["mutable_content"]?.boolValue ?? false
        countsBadge = object["counts_badge"]?.boolValue ?? true
        suppressed = object["suppressed"]?.stringValue
        androidIntent = object["android_intent"]?.stringValue
    }
}

/// Tencent's per-user `OpenPush` (set_config): 0 keeps the setting, 1 on, 2 off.
enum OpenPush: Int, Sendable {
    case keep = 0
    case on = 1
    case off = 2
}

/// Whether one receiver gets a message's offline push, from plain inputs (seed 003):
/// nobody when the message is suppressed (PushFlag 1, empty content); never the sender;
/// not an account that turned push off (OpenPush 2); not an account whose app is in the
/// foreground (it is online and the IM connection delivers). An account that never
/// reported a state is offline and is pushed.
enum OfflinePushRules {
    static func skipReason(
        suppressed: String?, account: String?, sender: String?, pushDisabled: Bool, appState: AppState?
    ) -> String? {
        if let suppressed { return suppressed }
        if let account, let sender, account == sender { return "sender" }
        if pushDisabled { return "push_disabled" }
        if appState == .foreground { return "foreground" }
        return nil
    }
}

/// The APNs channel by the name its transport declares (a plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
}
