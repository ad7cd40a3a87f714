import TuisongCore

/// One element of a `MsgBody` (`{"MsgType": "TIMTextElem", "MsgContent": {...}}`), checked
/// the way Tencent checks it: a known type, an object content, and the fields that type
/// needs with the right JSON types.
struct MessageElement: Sendable, Hashable {
    enum Kind: String, Sendable, CaseIterable {
        case text = "TIMTextElem"
        case location = "TIMLocationElem"
        case face = "TIMFaceElem"
        case custom = "TIMCustomElem"
        case sound = "TIMSoundElem"
        case image = "TIMImageElem"
        case file = "TIMFileElem"
        case video = "TIMVideoFileElem"
    }

    var kind: Kind
    var content: [String: JSONValue]

    /// What the element contributes to an offline push's content (seed 003): text as is,
    /// `[语音]`, `[文件]`, `[图片]`, a custom element's `Desc`; for the types the seed does not
    /// list, the words Tencent's clients show for them (`[位置]`, `[表情]`, `[视频]`).
    var pushText: String {
        switch kind {
        case .text: content["Text"]?.stringValue ?? ""
        case .location: "[位置]"
        case .face: "[表情]"
        case .custom: content["Desc"]?.stringValue ?? ""
        case .sound: "[语音]"
        case .image: "[图片]"
        case .file: "[文件]"
        case .video: "[视频]"
        }
    }

    /// Parses `MsgBody`: 90007 when it is not an array, 90002 for an empty one or a bad
    /// element (naming its index).
    static func parseBody(_ value: JSONValue?) throws(TencentError) -> [MessageElement] {
        guard case .array(let items)? = value else { throw .msgBodyNotArray }
        guard !items.isEmpty else { throw .badMsgBody("it holds no element") }
        var elements: [MessageElement] = []
        var customCount = 0
        for (index, item) in items.enumerated() {
            let element = try parse(item, index: index)
            if element.kind == .custom { customCount += 1 }
            elements.append(element)
        }
        // Tencent: "a combined message can contain only one TIMCustomElem".
        guard customCount <= 1 else { throw .badMsgBody("a message may hold only one TIMCustomElem") }
        return elements
    }

    static func parse(_ item: JSONValue, index: Int) throws(TencentError) -> MessageElement {
        let at = "MsgBody[\(index)]"
        guard case .object(let members) = item else { throw .badMsgBody("\(at) is not an object") }
        guard let typeName = members["MsgType"]?.stringValue else { throw .badMsgBody("\(at).MsgType is missing") }
        guard let kind = Kind(rawValue: typeName) else {
            throw .badMsgBody("\(at).MsgType \(typeName.prefix(40)) is not a known message element")
        }
        guard case .object(let content)? = members["MsgContent"] else {
            throw .badMsgBody("\(at).MsgContent must be an object")
        }
        func string(_ key: String, required: Bool = false) throws(TencentError) {
            switch content[key] {
            case .string?: return
            case nil where !required, .null? where !required: return
            case nil, .null?: throw .badMsgBody("\(at).MsgContent.\(key) is required")
            default: throw .badMsgBody("\(at).MsgContent.\(key) must be a string")
            }
        }
        func number(_ key: String, required: Bool = false) throws(TencentError) {
            switch content[key] {
            case .int?, .double?: return
            case nil where !required: return
            case nil: throw .badMsgBody("\(at).MsgContent.\(key) is required")
            default: throw .badMsgBody("\(at).MsgContent.\(key) must be a number")
            }
        }
        switch kind {
        case .text:
            try string("Text", required: true)
        case .location:
            try string("Desc")
            try number("Latitude", required: true)
            try number("Longitude", required: true)
        case .face:
            try number("Index", required: true)
            try string("Data")
        case .custom:
            for key in ["Data", "Desc", "Ext", "Sound"] { try string(key) }
        case .sound, .file, .video:
            for key in ["Url", "UUID"] { try string(key) }
        case .image:
            try string("UUID")
            if let images = content["ImageInfoArray"], images.arrayValue == nil {
                throw .badMsgBody("\(at).MsgContent.ImageInfoArray must be an array")
            }
        }
        return MessageElement(kind: kind, content: content)
    }

    /// The push content of a whole body: each element's words joined with nothing between.
    static func pushContent(_ elements: [MessageElement]) -> String {
        elements.map(\.pushText).joined()
    }

    /// The body's custom element, whose `Ext` and `Sound` reach APNs.
    static func custom(_ elements: [MessageElement]) -> MessageElement? {
        elements.first { $0.kind == .custom }
    }
}

/// `OfflinePushInfo`: how the offline push of one message looks, overriding what the body
/// would give.
struct OfflinePushInfo: Sendable, Hashable {
    /// 0 push, 1 do not push.
    var pushFlag = 0
    var title: String?
    /// Replaces the content rendered from the body (the sender prefix stays).
    var desc: String?
    /// Becomes the payload's top-level `ext`.
    var ext: String?
    var apnsSound: String?
    /// 1: this message does not count towards the badge.
    var badgeMode = 0
    var apnsTitle: String?
    var subtitle: String?
    var image: String?
    var mutableContent = false
    /// `AndroidInfo`, in the transports' words (`PushOptions.android`): the notification
    /// channel per service, importance, category, the sound.
    var android = AndroidOptions()
    /// `AndroidInfo.VIVOClassification`, as the `vivo` transport's entry of the message's
    /// per-service options (`PushOptions.services["vivo"]`, the native API's `vivo` object):
    /// `{"classification": 0 or 1}`. nil: none.
    var vivo: JSONValue?
    /// `AndroidInfo.ExtAsHuaweiIntentParam` 1: `Ext` travels as a parameter of the intent the
    /// app's Huawei notification opens (the app's `huawei_intent` setting), not only as data.
    var extAsHuaweiIntentParam = false
    /// `HarmonyInfo`, as the `harmony` transport's entry of the message's per-service options
    /// (`PushOptions.services["harmony"]`), in that entry's documented keys (the native API's
    /// `harmony` object, docs/api.md): `image`, `category`, `ignore_badge`, checked by the rule
    /// the transport declares. Tencent's SDK names these `HarmonyImage`, `HarmonyCategory`,
    /// `ignoreHarmonyBadge`; their REST names were not found, so the object is read as
    /// `ApnsInfo`/`AndroidInfo` are (docs/reference/harmony.md §6). nil: none.
    var harmony: JSONValue?

    /// The message's per-service options entries (`PushOptions.services`): `HarmonyInfo`'s and
    /// vivo's classification.
    var services: [String: JSONValue] {
        var services: [String: JSONValue] = [:]
        if let harmony { services[PushChannel.harmony.rawValue] = harmony }
        if let vivo { services[PushChannel.vivo.rawValue] = vivo }
        return services
    }

    init() {}

    static func parse(_ value: JSONValue?) throws(TencentError) -> OfflinePushInfo? {
        guard let value, value != .null else { return nil }
        guard case .object(let members) = value else { throw .badMsgBody("OfflinePushInfo must be an object") }
        var info = OfflinePushInfo()
        info.pushFlag = try flag(members["PushFlag"], "OfflinePushInfo.PushFlag")
        info.title = try string(members["Title"], "OfflinePushInfo.Title")
        info.desc = try string(members["Desc"], "OfflinePushInfo.Desc")
        info.ext = try string(members["Ext"], "OfflinePushInfo.Ext")
        switch members["ApnsInfo"] {
        case nil, .null?:
            break
        case .object(let apns)?:
            info.apnsSound = try string(apns["Sound"], "OfflinePushInfo.ApnsInfo.Sound")
            info.badgeMode = try flag(apns["BadgeMode"], "OfflinePushInfo.ApnsInfo.BadgeMode")
            info.apnsTitle = try string(apns["Title"], "OfflinePushInfo.ApnsInfo.Title")
            info.subtitle = try string(apns["SubTitle"], "OfflinePushInfo.ApnsInfo.SubTitle")
            info.image = try string(apns["Image"], "OfflinePushInfo.ApnsInfo.Image")
            info.mutableContent = try flag(apns["MutableContent"], "OfflinePushInfo.ApnsInfo.MutableContent") == 1
        default:
            throw .badMsgBody("OfflinePushInfo.ApnsInfo must be an object")
        }
        switch members["AndroidInfo"] {
        case nil, .null?:
            break
        case .object(let android)?:
            try info.readAndroidInfo(android)
        default:
            throw .badMsgBody("OfflinePushInfo.AndroidInfo must be an object")
        }
        switch members["HarmonyInfo"] {
        case nil, .null?:
            break
        case .object(let harmony)?:
            let at = "OfflinePushInfo.HarmonyInfo."
            var entry: [String: JSONValue] = [:]
            if let image = try string(harmony["Image"], at + "Image"), !image.isEmpty {
                entry["image"] = .string(image)
            }
            if let category = try string(harmony["Category"], at + "Category"), !category.isEmpty {
                entry["category"] = .string(category)
            }
            if try flag(harmony["IgnoreBadge"], at + "IgnoreBadge") == 1 { entry["ignore_badge"] = true }
            if !entry.isEmpty {
                do throws(ServiceOptionsError) {
                    info.harmony = try PushChannel.harmony.normaliseOptions(.object(entry))
                } catch {
                    // The entry's keys back to Tencent's names for the sentence.
                    let names = ["image": "Image", "category": "Category", "ignore_badge": "IgnoreBadge"]
                    let field = error.field.flatMap { names[$0] } ?? "Image"
                    throw .badMsgBody("\(at)\(field) \(error.problem)")
                }
            }
        default:
            throw .badMsgBody("OfflinePushInfo.HarmonyInfo must be an object")
        }
        return info
    }

    /// Tencent's AndroidInfo fields by the service (`AndroidOptions` key) they address. An
    /// empty string leaves the setting unset, as Tencent's "does not override the console".
    static let androidChannelIDs = [
        ("GoogleChannelID", "fcm"), ("HuaWeiChannelID", "huawei"), ("XiaoMiChannelID", "xiaomi"),
        ("OPPOChannelID", "oppo"),
    ]
    static let androidImportance = [("HuaWeiImportance", "huawei"), ("HonorImportance", "honor")]
    static let androidCategory = [("HuaWeiCategory", "huawei"), ("VIVOCategory", "vivo")]

    /// Fields Tencent documents that Tuisong does not render (images, styles, OPPO and vivo
    /// extras) are accepted and ignored, as Tencent ignores what a vendor does not take.
    private mutating func readAndroidInfo(_ members: [String: JSONValue]) throws(TencentError) {
        let at = "OfflinePushInfo.AndroidInfo."
        func text(_ key: String) throws(TencentError) -> String? {
            guard let value = try Self.string(members[key], at + key), !value.isEmpty else { return nil }
            guard value.utf8.count <= 256 else { throw .badMsgBody("\(at)\(key) must be at most 256 bytes") }
            return value
        }
        for (key, service) in Self.androidChannelIDs {
            if let value = try text(key) { android.channelIDs[service] = value }
        }
        for (key, service) in Self.androidImportance {
            guard let value = try text(key) else { continue }
            guard value == "LOW" || value == "NORMAL" else { throw .badMsgBody("\(at)\(key) must be LOW or NORMAL") }
            android.importance[service] = value
        }
        for (key, service) in Self.androidCategory {
            if let value = try text(key) { android.category[service] = value }
        }
        android.sound = try text("Sound")
        // An Integer in Tencent's table; Tencent's generated OpenAPI clients send "0"/"1".
        let classification: Int64?
        switch members["VIVOClassification"] {
        case nil, .null?: classification = nil
        case .string("0")?: classification = 0
        case .string("1")?: classification = 1
        case let value? where value.intValue == 0 || value.intValue == 1: classification = value.intValue
        default: throw .badMsgBody("\(at)VIVOClassification must be 0 (operation) or 1 (system)")
        }
        if let classification {
            do throws(ServiceOptionsError) {
                vivo = try PushChannel.vivo.normaliseOptions(["classification": .int(classification)])
            } catch {
                throw .badMsgBody("\(at)VIVOClassification \(error.problem)")
            }
        }
        extAsHuaweiIntentParam = try Self.flag(members["ExtAsHuaweiIntentParam"], at + "ExtAsHuaweiIntentParam") == 1
    }

    private static func string(_ value: JSONValue?, _ name: String) throws(TencentError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw .badMsgBody("\(name) must be a string")
        }
    }

    private static func flag(_ value: JSONValue?, _ name: String) throws(TencentError) -> Int {
        switch value {
        case nil, .null?: return 0
        case let number? where number.intValue == 0 || number.intValue == 1: return Int(number.intValue!)
        default: throw .badMsgBody("\(name) must be 0 or 1")
        }
    }
}

/// The services this vendor's fields map to, by the channel names their transports declare (a
/// plugin links no transport).
extension PushChannel {
    fileprivate static let harmony = PushChannel("harmony")
    fileprivate static let vivo = PushChannel("vivo")
}
