import Foundation
import TuisongCore

/// JPush's platforms: `android` (every Android service), `ios` (APNs), `hmos` (HarmonyOS NEXT).
enum JPushPlatform: String, Sendable, Hashable, CaseIterable, Codable {
    case android, ios, hmos

    /// The platform of a device's push service.
    init(channel: PushChannel) {
        switch channel {
        case .apns: self = .ios
        case .harmony: self = .hmos
        default: self = .android
        }
    }
}

/// JPush's audience: `"all"`, or any of `tag` (OR), `tag_and` (AND), `tag_not` (NOT), `alias`
/// and `registration_id`, combined by AND.
struct JPushAudience: Sendable, Hashable {
    var all = false
    var tags: [String] = []
    var tagsAnd: [String] = []
    var tagsNot: [String] = []
    var aliases: [String] = []
    var registrationIDs: [String] = []

    /// Only one tag, nothing else: the core's own tag audience (paged, no id list).
    var singleTag: String? {
        tags.count == 1 && tagsAnd.isEmpty && tagsNot.isEmpty && aliases.isEmpty && registrationIDs.isEmpty
            ? tags[0] : nil
    }
}

/// `notification.ios.badge` (JPush's badge guide, docs.jiguang.cn/jpush/practice/set_badge):
/// JPush keeps a badge per device, which the app reports (`setBadge`; here the native device
/// API's `badge`), and a push either sets it (`N`, `0` or `""` clear it) or moves it (`"+N"`,
/// `"-N"`, N up to 99; below 0 is 0). The device is sent the badge it then has. JPush's
/// server SDKs send `"+1"` unless told otherwise.
enum JPushBadge: Sendable, Hashable, Codable {
    case set(Int)
    case add(Int)

    static let largest = 99_999

    /// nil when the push leaves the badge alone (no `badge`).
    init?(_ value: JSONValue?) throws(JPushError) {
        switch value {
        case nil, .null?: return nil
        case .int(let number)?:
            guard number >= 0, number <= Int64(Self.largest) else {
                throw .invalid("notification.ios.badge must be 0–99999, or a string \"+N\" or \"-N\" (N 0–99)")
            }
            self = .set(Int(number))
        case .string(let text)?:
            if text.isEmpty {
                self = .set(0)
            } else if let sign = text.first, sign == "+" || sign == "-" {
                let digits = text.dropFirst()
                guard !digits.isEmpty, digits.allSatisfy(Self.isDigit), let step = Int(digits), step <= 99 else {
                    throw .invalid(
                        "notification.ios.badge \"\(text)\": a relative badge is \"+N\" or \"-N\" with N 0–99")
                }
                self = .add(sign == "+" ? step : -step)
            } else {
                guard text.allSatisfy(Self.isDigit), let number = Int(text), number <= Self.largest else {
                    throw .invalid("notification.ios.badge \"\(text)\" must be a number 0–99999, \"+N\" or \"-N\"")
                }
                self = .set(number)
            }
        default: throw .invalid("notification.ios.badge must be a number or a string like \"+1\"")
        }
    }

    // Stored in the message's plan as `{"set": N}` or `{"add": N}`.
    private enum CodingKeys: String, CodingKey { case set, add }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let step = try c.decodeIfPresent(Int.self, forKey: .add) {
            self = .add(step)
        } else {
            self = .set(try c.decode(Int.self, forKey: .set))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .set(let value): try c.encode(value, forKey: .set)
        case .add(let step): try c.encode(step, forKey: .add)
        }
    }

    private static func isDigit(_ character: Character) -> Bool { ("0"..."9").contains(character) }

    /// The badge after this change, from `current`.
    func applied(to current: Int) -> Int {
        switch self {
        case .set(let value): value
        case .add(let step): min(max(current + step, 0), Self.largest)
        }
    }
}

/// One parsed push object (`POST /v3/push`, `/v3/push/validate`, a schedule's `push`, one
/// entry of a batch single push): what Tuisong sends and to whom.
struct JPushPush: Sendable {
    var platforms: Set<JPushPlatform>
    var audience: JPushAudience
    /// The content for each platform the push names (the same content when the push says
    /// the same thing everywhere).
    var contents: [JPushPlatform: PushContent]
    var options: PushOptions
    /// `options.apns_production`: JPush's iOS environment (production when not given); it
    /// does not select Android or HarmonyOS devices.
    var apnsProduction: Bool
    var sendno: String
    /// `cid`: the push's idempotency key (`GET /v3/push/cid`).
    var cid: String?
    /// `notification.ios.badge`, which JPush applies to the badge it keeps per device.
    var iosBadge: JPushBadge? = nil
    /// What this build does not carry out, said in the answer's log and docs/jpush.md.
    var ignored: [String] = []
}

/// The push object's rules, from JPush's push API page (docs/jpush.md): sizes, kinds and the
/// fields each platform's notification takes.
enum JPushPayload {
    /// JPush's limit on a notification (Android + iOS + HarmonyOS together) is 4,000 bytes of
    /// push object; a custom message may be larger, so the body is bounded at 8 KB.
    static let bodyLimit = 8 * 1024
    static let listLimit = 1000
    static let tagsPerPushLimit = 20

    static func parse(_ bytes: [UInt8], now: Date) throws(JPushError) -> JPushPush {
        guard !bytes.isEmpty else { throw .missing("the request body (a push object)") }
        let root: JSONValue
        do {
            root = try JSONValue(parsing: bytes)
        } catch {
            throw .invalid("the body is not JSON: \(error)")
        }
        return try parse(root, now: now)
    }

    static func parse(_ root: JSONValue, now: Date) throws(JPushError) -> JPushPush {
        guard case .object(let object) = root else { throw .invalid("the push object must be a JSON object") }
        let platforms = try platforms(object["platform"])
        let audience = try audience(object["audience"])
        var ignored: [String] = []
        if object["sms_message"] != nil { ignored.append("sms_message") }
        if object["inapp_message"] != nil { ignored.append("inapp_message") }
        if object["live_activity"] != nil { throw .notOffered("live_activity") }
        if object["callback"] != nil { ignored.append("callback") }

        let notification = object["notification"]
        let message = object["message"]
        if (notification == nil || notification == .null) && (message == nil || message == .null) {
            throw .missing("notification or message")
        }
        var contents: [JPushPlatform: PushContent] = [:]
        var iosBadge: JPushBadge?
        var services: [String: JSONValue] = [:]
        var android = AndroidOptions()
        var pushType = PushType.alert
        if let notification, notification != .null {
            guard case .object(let fields) = notification else { throw .invalid("notification must be an object") }
            if fields["winphone"] != nil {
                throw .invalid("notification.winphone: Windows Phone is not a platform here")
            }
            let common = try string(fields["alert"], "notification.alert")
            for platform in platforms {
                let key = platform.rawValue
                let own = fields[key]
                if own == nil || own == .null {
                    // A platform without its own object shows the common alert; without either,
                    // the custom message (if any) is what it gets.
                    if let common { contents[platform] = PushContent(body: common) }
                    continue
                }
                guard case .object(let platformFields) = own else {
                    throw .invalid("notification.\(key) must be an object")
                }
                switch platform {
                case .ios:
                    (contents[platform], iosBadge) = try iosContent(platformFields, common: common)
                case .android:
                    contents[platform] = try androidContent(platformFields, common: common, options: &android)
                case .hmos:
                    let (content, entry) = try hmosContent(platformFields, common: common)
                    contents[platform] = content
                    if let entry { services[PushChannel.harmony.rawValue] = entry }
                }
            }
        }
        if let message, message != .null {
            guard case .object(let fields) = message else { throw .invalid("message must be an object") }
            guard let text = try string(fields["msg_content"], "message.msg_content"), !text.isEmpty else {
                throw .missing("message.msg_content")
            }
            var data: [String: JSONValue] = ["msg_content": .string(text)]
            if let title = try string(fields["title"], "message.title") { data["title"] = .string(title) }
            if let type = try string(fields["content_type"], "message.content_type") {
                data["content_type"] = .string(type)
            }
            if let extras = try extras(fields["extras"], "message.extras") { data["extras"] = .object(extras) }
            // A custom message is JPush's in-app message; here it is a data push for the platforms
            // the notification leaves without content (a push with both sends the notification
            // and carries the message's fields as data).
            for platform in platforms {
                if var content = contents[platform] {
                    content.data.merge(data) { own, _ in own }
                    contents[platform] = content
                } else {
                    contents[platform] = PushContent(data: data, background: true)
                }
            }
            if contents.values.allSatisfy(\.background) { pushType = .background }
        }
        if contents.isEmpty { throw .missing("notification.alert (no platform of the push has content)") }

        var options = PushOptions(pushType: pushType)
        var apnsProduction = true
        var sendno = "0"
        if let raw = object["options"], raw != .null {
            guard case .object(let fields) = raw else { throw .invalid("options must be an object") }
            if let value = fields["sendno"], value != .null {
                guard let number = value.intValue, number >= 0, number <= Int64(Int32.max) else {
                    throw .invalid("options.sendno must be a non-negative 32-bit integer")
                }
                sendno = String(number)
            }
            if let value = fields["time_to_live"], value != .null {
                guard let seconds = value.intValue, seconds >= 0, seconds <= 15 * 86_400 else {
                    throw .invalid("options.time_to_live must be 0–1296000 seconds (15 days)")
                }
                // 0: JPush's "online devices only"; the services' closest is "do not keep".
                options.expiration = now.addingTimeInterval(TimeInterval(max(seconds, 1)))
            }
            if let value = fields["apns_production"], value != .null {
                guard case .bool(let production) = value else {
                    throw .invalid("options.apns_production must be true or false")
                }
                apnsProduction = production
            }
            if let value = fields["apns_collapse_id"], value != .null {
                guard let id = value.stringValue, id.utf8.count <= 64 else {
                    throw .invalid("options.apns_collapse_id must be a string of at most 64 bytes")
                }
                options.collapseID = id
            }
            if fields["override_msg_id"] != nil { ignored.append("options.override_msg_id") }
            if fields["big_push_duration"] != nil { ignored.append("options.big_push_duration") }
            if let channel = fields["third_party_channel"], channel != .null {
                try thirdPartyChannel(channel, into: &android, services: &services)
            }
        }
        if !android.isEmpty { options.android = android }
        options.services = services
        let cid = try string(object["cid"], "cid")
        return JPushPush(
            platforms: platforms, audience: audience, contents: contents, options: options,
            apnsProduction: apnsProduction, sendno: sendno, cid: cid, iosBadge: iosBadge, ignored: ignored)
    }

    // MARK: Platform and audience

    static func platforms(_ value: JSONValue?) throws(JPushError) -> Set<JPushPlatform> {
        switch value {
        case nil, .null?: throw .missing("platform")
        case .string("all")?: return Set(JPushPlatform.allCases)
        case .array(let items)?:
            var platforms = Set<JPushPlatform>()
            for item in items {
                guard let name = item.stringValue else { throw .invalid("platform must be \"all\" or a list of names") }
                if name == "winphone" || name == "quickapp" {
                    throw .invalid("platform \"\(name)\" is not served here (android, ios and hmos are)")
                }
                guard let platform = JPushPlatform(rawValue: name) else {
                    throw .invalid("platform \"\(name.prefix(32))\" is not one of android, ios, hmos")
                }
                platforms.insert(platform)
            }
            guard !platforms.isEmpty else { throw .invalid("platform names no platform") }
            return platforms
        default: throw .invalid("platform must be \"all\" or a list of android, ios, hmos")
        }
    }

    static func audience(_ value: JSONValue?) throws(JPushError) -> JPushAudience {
        switch value {
        case nil, .null?: throw .missing("audience")
        case .string("all")?: return JPushAudience(all: true)
        case .object(let fields)?:
            var audience = JPushAudience()
            for (key, list) in fields {
                switch key {
                case "tag": audience.tags = try names(list, key, limit: tagsPerPushLimit, rule: tagProblem)
                case "tag_and": audience.tagsAnd = try names(list, key, limit: tagsPerPushLimit, rule: tagProblem)
                case "tag_not": audience.tagsNot = try names(list, key, limit: tagsPerPushLimit, rule: tagProblem)
                case "alias": audience.aliases = try names(list, key, limit: listLimit, rule: aliasProblem)
                case "registration_id":
                    audience.registrationIDs = try names(list, key, limit: listLimit, rule: registrationIDProblem)
                case "segment", "abtest", "live_activity_id":
                    throw .notOffered("audience.\(key)")
                default: throw .invalid("audience.\(key.prefix(32)) is not an audience type")
                }
            }
            guard
                !(audience.tags.isEmpty && audience.tagsAnd.isEmpty && audience.tagsNot.isEmpty
                    && audience.aliases.isEmpty && audience.registrationIDs.isEmpty)
            else { throw .invalid("audience names no target") }
            return audience
        default: throw .invalid("audience must be \"all\" or an object")
        }
    }

    static func names(
        _ value: JSONValue, _ key: String, limit: Int, rule: (String) -> String?
    ) throws(JPushError) -> [String] {
        let items: [JSONValue]
        switch value {
        case .array(let list): items = list
        case .string(let one): items = [.string(one)]
        default: throw .invalid("audience.\(key) must be a list of strings")
        }
        guard !items.isEmpty else { throw .invalid("audience.\(key) is empty") }
        guard items.count <= limit else { throw .invalid("audience.\(key) may name at most \(limit)") }
        var names: [String] = []
        for item in items {
            guard let name = item.stringValue else { throw .invalid("audience.\(key) must be a list of strings") }
            if let problem = rule(name) { throw .invalid("audience.\(key) \"\(name.prefix(40))\" \(problem)") }
            names.append(name)
        }
        return names
    }

    /// Tags are the core's (`TagName`: letters, digits, `_ - .` and CJK, up to 128); JPush
    /// allows at most 40 bytes.
    static func tagProblem(_ name: String) -> String? {
        guard name.utf8.count <= 40 else { return "is longer than 40 bytes" }
        return TagName(name) == nil
            ? "may hold only letters, digits, CJK characters and _ - . @ ! # $ & * + = | ￥" : nil
    }

    /// Aliases: up to 40 bytes, no control characters.
    static func aliasProblem(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 40 else { return "must be 1–40 bytes" }
        return name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            ? "holds a control character" : nil
    }

    /// Registration ids: digits and letters, up to 64.
    static func registrationIDProblem(_ id: String) -> String? {
        guard (1...64).contains(id.utf8.count),
            id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) })
        else { return "is not a registration id (1–64 letters and digits)" }
        return nil
    }

    // MARK: Notifications

    static func iosContent(
        _ fields: [String: JSONValue], common: String?
    ) throws(JPushError) -> (PushContent, JPushBadge?) {
        var content = PushContent()
        switch fields["alert"] {
        case .string(let text)?: content.body = text
        case .object(let alert)?:
            content.title = try string(alert["title"], "notification.ios.alert.title")
            content.subtitle = try string(alert["subtitle"], "notification.ios.alert.subtitle")
            content.body = try string(alert["body"], "notification.ios.alert.body")
            content.titleLocKey = try string(alert["title-loc-key"], "notification.ios.alert.title-loc-key")
            content.bodyLocKey = try string(alert["loc-key"], "notification.ios.alert.loc-key")
            content.actionLocKeyIfAny(try string(alert["action-loc-key"], "notification.ios.alert.action-loc-key"))
            content.set(
                "launch_image",
                try string(alert["launch-image"], "notification.ios.alert.launch-image").map(JSONValue.string),
                forService: .apns)
        case nil, .null?: content.body = common
        default: throw .invalid("notification.ios.alert must be a string or an object")
        }
        switch fields["sound"] {
        case .string(let sound)?: content.sound = sound
        case .object(let sound)?:
            content.sound = try string(sound["name"], "notification.ios.sound.name")
            if let volume = sound["volume"]?.doubleValue {
                content.set("critical_volume", .double(volume), forService: .apns)
            }
        case nil, .null?: break
        default: throw .invalid("notification.ios.sound must be a string or an object")
        }
        let badge = try JPushBadge(fields["badge"])
        if case .set(let value)? = badge { content.badge = value }
        if flag(fields["content-available"]) { content.background = content.body == nil && content.title == nil }
        if flag(fields["mutable-content"]) { content.set("mutable_content", true, forService: .apns) }
        content.category = try string(fields["category"], "notification.ios.category")
        content.thread = try string(fields["thread-id"], "notification.ios.thread-id")
        if let level = try string(fields["interruption-level"], "notification.ios.interruption-level") {
            guard ["passive", "active", "time-sensitive", "critical"].contains(level) else {
                throw .invalid(
                    "notification.ios.interruption-level must be passive, active, time-sensitive or critical")
            }
            content.set("interruption_level", .string(level), forService: .apns)
        }
        if let extras = try extras(fields["extras"], "notification.ios.extras") { content.data = extras }
        return (content, badge)
    }

    static func androidContent(
        _ fields: [String: JSONValue], common: String?, options: inout AndroidOptions
    ) throws(JPushError) -> PushContent {
        var content = PushContent()
        content.body = try string(fields["alert"], "notification.android.alert") ?? common
        content.title = try string(fields["title"], "notification.android.title")
        if let channelID = try string(fields["channel_id"], "notification.android.channel_id") {
            for service in androidServices where options.channelIDs[service] == nil {
                options.channelIDs[service] = channelID
            }
        }
        if let sound = try string(fields["sound"], "notification.android.sound") { options.sound = sound }
        if let bigText = try string(fields["big_text"], "notification.android.big_text"), content.body == nil {
            content.body = bigText
        }
        if let picture = try string(fields["big_pic_path"], "notification.android.big_pic_path"),
            picture.hasPrefix("https://")
        {
            content.image = picture
        }
        if case .object(let intent)? = fields["intent"],
            let url = try string(intent["url"], "notification.android.intent.url")
        {
            content.click = url.hasPrefix("intent:") ? .intent(url) : .url(url)
        }
        if let extras = try extras(fields["extras"], "notification.android.extras") { content.data = extras }
        if let badge = fields["badge_set_num"]?.intValue, badge >= 0, badge <= 99 { content.badge = Int(badge) }
        return content
    }

    static func hmosContent(
        _ fields: [String: JSONValue], common: String?
    ) throws(JPushError) -> (PushContent, JSONValue?) {
        var content = PushContent()
        content.body = try string(fields["alert"], "notification.hmos.alert") ?? common
        content.title = try string(fields["title"], "notification.hmos.title")
        if case .object(let intent)? = fields["intent"],
            let url = try string(intent["url"], "notification.hmos.intent.url")
        {
            content.click = .url(url)
        }
        if let extras = try extras(fields["extras"], "notification.hmos.extras") { content.data = extras }
        if let badge = fields["badge_set_num"]?.intValue, badge >= 0, badge <= 99 { content.badge = Int(badge) }
        var members: [String: JSONValue] = [:]
        if let category = try string(fields["category"], "notification.hmos.category") {
            members["category"] = .string(category)
        }
        if flag(fields["test_message"]) { members["test_message"] = true }
        if let add = fields["badge_add_num"]?.intValue, add > 0 { members["badge_increment"] = true }
        guard !members.isEmpty else { return (content, nil) }
        do {
            return (content, try PushChannel.harmony.normaliseOptions(.object(members)))
        } catch {
            throw .invalid("notification.hmos: \(error)")
        }
    }

    /// `options.third_party_channel`: per Android service, its notification channel
    /// (`channel_id`), importance and category, and vivo's classification (the `vivo`
    /// transport's entry of `services`).
    static func thirdPartyChannel(
        _ value: JSONValue, into options: inout AndroidOptions, services: inout [String: JSONValue]
    ) throws(JPushError) {
        guard case .object(let vendors) = value else { throw .invalid("options.third_party_channel must be an object") }
        for (vendor, settings) in vendors {
            guard androidServices.contains(vendor) else { continue }
            guard case .object(let fields) = settings else {
                throw .invalid("options.third_party_channel.\(vendor) must be an object")
            }
            let at = "options.third_party_channel.\(vendor)"
            if let channel = try string(fields["channel_id"], "\(at).channel_id") {
                options.channelIDs[vendor] = channel
            }
            if let importance = try string(fields["importance"], "\(at).importance") {
                options.importance[vendor] = importance
            }
            if let category = try string(fields["category"], "\(at).category") { options.category[vendor] = category }
            if vendor == "vivo", let classification = fields["classification"]?.intValue {
                guard classification == 0 || classification == 1 else {
                    throw .invalid("\(at).classification must be 0 (operation) or 1 (system)")
                }
                do throws(ServiceOptionsError) {
                    let entry = try PushChannel.vivo.normaliseOptions(["classification": .int(classification)])
                    if let entry { services[PushChannel.vivo.rawValue] = entry }
                } catch {
                    throw .invalid("\(at).classification \(error.problem)")
                }
            }
        }
    }

    /// The Android services JPush's `third_party_channel` names, by the channel names their
    /// transports declare.
    static let androidServices: Set<String> = ["fcm", "huawei", "honor", "xiaomi", "oppo", "vivo"]

    // MARK: Values

    static func string(_ value: JSONValue?, _ field: String) throws(JPushError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw .invalid("\(field) must be a string")
        }
    }

    static func extras(_ value: JSONValue?, _ field: String) throws(JPushError) -> [String: JSONValue]? {
        switch value {
        case nil, .null?: return nil
        case .object(let members)?: return members.isEmpty ? nil : members
        default: throw .invalid("\(field) must be an object")
        }
    }

    /// JPush takes `true`/`false` and, from older SDKs, 1/0.
    static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .bool(let flag)?: flag
        case .int(let number)?: number != 0
        default: false
        }
    }
}

extension PushContent {
    fileprivate mutating func actionLocKeyIfAny(_ key: String?) {
        if let key { set("action_loc_key", .string(key), forService: .apns) }
    }
}

/// The services this vendor's fields map to, by the channel names their transports declare (a
/// plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
    fileprivate static let harmony = PushChannel("harmony")
    fileprivate static let vivo = PushChannel("vivo")
}
