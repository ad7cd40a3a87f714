import Foundation
import TuisongCore

/// One Easemob message as the gateway keeps it with the Tuisong message (`vendorContext`):
/// what the delivery policy needs to decide and render each receiver's push.
struct EasemobMessage: Sendable, Hashable {
    enum ChatType: String, Sendable, Hashable {
        case users
        case chatgroups
    }

    var msgID: String
    var from: String
    var chatType: ChatType
    /// The group of a group message.
    var groupID: String?
    /// `txt`, `img`, `audio`, `video`, `file`, `loc`, `cmd`, `custom`.
    var type: String
    /// The message body as sent (`{"msg": "…"}` for text).
    var body: JSONValue
    var ext: JSONValue?

    /// The vendor context stored with the Tuisong message.
    var context: JSONValue {
        var object: [String: JSONValue] = [
            "msg_id": .string(msgID), "from": .string(from), "chat_type": .string(chatType.rawValue),
            "type": .string(type), "body": body,
        ]
        if let groupID { object["group"] = .string(groupID) }
        if let ext { object["ext"] = ext }
        return .object(object)
    }

    init(
        msgID: String, from: String, chatType: ChatType, groupID: String?, type: String, body: JSONValue,
        ext: JSONValue?
    ) {
        self.msgID = msgID
        self.from = from
        self.chatType = chatType
        self.groupID = groupID
        self.type = type
        self.body = body
        self.ext = ext
    }

    /// Reads a stored vendor context back; nil when it is not one of ours.
    init?(context: JSONValue?) {
        guard let context, let msgID = context["msg_id"]?.stringValue, let from = context["from"]?.stringValue,
            let chatType = context["chat_type"]?.stringValue.flatMap(ChatType.init(rawValue:)),
            let type = context["type"]?.stringValue
        else { return nil }
        self.init(
            msgID: msgID, from: from, chatType: chatType, groupID: context["group"]?.stringValue, type: type,
            body: context["body"] ?? .object([:]), ext: context["ext"])
    }

    /// The conversation a receiver sees this message in: the group, or the sender (chattype
    /// `user`, key = the peer), as `PUT users/{u}/notification/{chattype}/{key}` names it.
    var conversation: (chatType: String, key: String) {
        if chatType == .chatgroups, let groupID { return ("chatgroup", groupID) }
        return ("user", from)
    }

    /// Command (`cmd`) messages are pass-through: Easemob never pushes them.
    var isCommand: Bool { type == "cmd" }

    var rules: EasemobMessageRules { EasemobMessageRules(from: from, ext: ext, isCommand: isCommand) }

    /// `ext.em_push_template`: the template to render, and its arguments.
    var template: (name: String, titleArguments: [String], contentArguments: [String])? {
        guard let object = ext?["em_push_template"], let name = object["name"]?.stringValue else { return nil }
        func strings(_ key: String) -> [String] {
            (object[key]?.arrayValue ?? []).compactMap { value in
                value.stringValue ?? value.intValue.map(String.init)
            }
        }
        return (name, strings("title_args"), strings("content_args"))
    }
}

/// A receiver's own display settings.
struct EasemobReceiverDisplay: Sendable, Hashable {
    var username: String
    /// `notification_display_style`: 0 SimpleBanner (`你有一条新消息`), 1 MessageSummary.
    var displayStyle: Int
    /// `translationLanguage`: push the message's translation in this language when it has one.
    var language: String?
}

/// Renders the APNs payload Easemob sends, per receiver:
///
///     {"aps":{"alert":{"body":"你有一条新消息"},"badge":1,"sound":"default"},
///      "f":"<from>","t":"<receiver>","g":"<group id>","m":"<msg id>","e":"<extern>"}
///
/// The alert body follows the receiver's display style (0: `你有一条新消息`, 1:
/// `<sender nickname, else username>:<content>`, the content in the receiver's language when
/// the message carries that translation), then `em_push_template`, then `em_push_ext`'s
/// `title` / `content`, then `em_apns_ext`'s `em_push_title` / `em_push_content` (Easemob's
/// "自定义显示", for every platform), then — on APNs only — `em_apns_ext`'s `em_alert_title`,
/// `em_alert_subTitle` and `em_alert_body`, each winning over what came before.
///
/// An Android device (`channel` FCM, Huawei, Honor, Xiaomi, OPPO, vivo) gets the same decision
/// and text: display style, language, template, `em_push_ext`, `em_push_title` /
/// `em_push_content` alike, and `em_apns_ext.extern` as `e` (Easemob's Android docs: `e` comes
/// from `em_apns_ext.extern`). The rest of `em_apns_ext` (the `em_alert_*` fields, sound,
/// mutable-content, category) is APNs's and stays out of its payload; its click action is
/// `em_android_push_ext`'s `huawei_click_action` / `honor_click_action` for its service,
/// carried as the payload's `category` (what the Android transports send as the click action).
enum EasemobPushContent {
    static let simpleBanner = "你有一条新消息"

    static func notification(
        _ message: EasemobMessage, receiver: EasemobReceiverDisplay, senderNickname: String?,
        template: PushTemplate?, badge: Int?, channel: PushChannel
    ) -> PushContent {
        var title: String?
        var subtitle: String?
        var body: String
        if receiver.displayStyle == 1 {
            let name = senderNickname.flatMap { $0.isEmpty ? nil : $0 } ?? message.from
            body = "\(name):\(content(of: message, language: receiver.language))"
        } else {
            body = simpleBanner
        }
        if let template, let arguments = message.template {
            title = TemplatePattern.render(template.titlePattern, arguments: arguments.titleArguments)
            body = TemplatePattern.render(template.bodyPattern, arguments: arguments.contentArguments)
        }
        var notification = PushContent(badge: badge, sound: "default")
        var custom: [String: JSONValue] = [
            "f": .string(message.from), "t": .string(receiver.username), "m": .string(message.msgID),
        ]
        if message.chatType == .chatgroups, let groupID = message.groupID { custom["g"] = .string(groupID) }
        // `em_push_ext`: a title and content for every platform, and `custom` as the `e` field.
        if let general = message.ext?["em_push_ext"], case .object = general {
            if let value = general["title"]?.stringValue, !value.isEmpty { title = value }
            if let value = general["content"]?.stringValue, !value.isEmpty { body = value }
            if let extern = general["custom"] { custom["e"] = extern }
        }
        // `em_apns_ext`: the fields Easemob reads on every platform.
        var apns: JSONValue?
        if let value = message.ext?["em_apns_ext"], case .object = value { apns = value }
        if let apns {
            if let extern = apns["extern"] { custom["e"] = extern }
            if let value = apns["em_push_title"]?.stringValue, !value.isEmpty { title = value }
            if let value = apns["em_push_content"]?.stringValue, !value.isEmpty { body = value }
        }
        if channel.isAndroid {
            let action: String? =
                switch channel {
                case .huawei: message.ext?["em_android_push_ext"]?["huawei_click_action"]?.stringValue
                case .honor: message.ext?["em_android_push_ext"]?["honor_click_action"]?.stringValue
                default: nil
                }
            if let action, !action.isEmpty { notification.category = action }
        } else if let apns {
            if let value = apns["em_alert_title"]?.stringValue { title = value }
            if let value = apns["em_alert_subTitle"]?.stringValue { subtitle = value }
            if let value = apns["em_alert_body"]?.stringValue { body = value }
            if let sound = apns["em_push_sound"]?.stringValue, !sound.isEmpty { notification.sound = sound }
            if EasemobMessageRules.flag(apns["em_push_mutable_content"]) {
                notification.set("mutable_content", true, forService: .apns)
            }
            if let category = apns["em_push_category"]?.stringValue, !category.isEmpty {
                notification.category = category
            }
        }
        notification.title = title
        notification.subtitle = subtitle
        notification.body = body
        notification.data = custom
        // Easemob's payload always has the dictionary form.
        notification.set("alert_as_object", true, forService: .apns)
        return notification
    }

    /// What a message says in a summary: the text (its translation in `language` when the body
    /// carries one), or a label for other types.
    static func content(of message: EasemobMessage, language: String?) -> String {
        switch message.type {
        case "txt":
            let original = message.body["msg"]?.stringValue ?? ""
            guard let language, !language.isEmpty, case .object(let translations)? = message.body["translations"]
            else { return original }
            let wanted = language.lowercased()
            for (code, text) in translations where code.lowercased() == wanted {
                if let text = text.stringValue { return text }
            }
            return original
        case "img": return "[图片]"
        case "audio": return "[语音]"
        case "video": return "[视频]"
        case "file": return "[文件]"
        case "loc": return "[位置]"
        default: return "[消息]"
        }
    }
}

/// The services this vendor's fields map to, by the channel names their transports declare (a
/// plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
    fileprivate static let huawei = PushChannel("huawei")
    fileprivate static let honor = PushChannel("honor")
}
