import Foundation
import TuisongCore
import TuisongTransportKit

/// Parses the body of `POST /api/v1/push` into a `PushJob`, with an error naming the field.
///
///     {"audience": {"tag": "vip"},
///      "notification": {"alert": {"title": "Hi", "body": "There"}, "badge": 1, "custom": {"k": 1}},
///      "push_type": "alert", "priority": 10, "expiration": 1767225600, "collapse_id": "news",
///      "environment": "production"}
///
/// Besides these, each transport that declares options (`ChannelDeclaration.options`) takes an
/// object under its channel name (`"<channel>": {…}`), checked by its rule and
/// kept as the message's `PushOptions.services[name]`.
enum NativePushRequest {
    /// `body` as `JSONSerialization` objects (the admin API's normalised body, tests).
    static func parse(
        _ body: [String: Any], appID: Int64, now: Date, transports: TransportRegistry = .standard
    ) throws -> PushJob {
        guard case .object(let members)? = JSONValue(jsonObject: body) else {
            throw invalid("the JSON body must be an object")
        }
        return try parse(members, appID: appID, now: now, transports: transports)
    }

    static func parse(
        _ body: [String: JSONValue], appID: Int64, now: Date, transports: TransportRegistry = .standard
    ) throws -> PushJob {
        let serviceRules: [(name: String, rule: ServiceOptionsRule)] = transports.declarations.compactMap {
            declaration in
            declaration.channel.options.map { (declaration.name, $0) }
        }
        // The `android` keys one service alone takes, by the service whose entry they fill.
        let androidFields: [(service: String, field: ChannelDeclaration.AndroidField)] =
            transports.declarations.flatMap { declaration in
                declaration.channel.androidFields.map { (declaration.name, $0) }
            }
        let known: Set<String> = Set([
            "audience", "notification", "push_type", "priority", "expiration", "collapse_id", "environment", "send_at",
            "android",
        ]).union(serviceRules.map(\.name))
        if let unknown = body.keys.first(where: { !known.contains($0) }) {
            throw invalid("unknown field \"\(unknown)\"")
        }
        guard let audienceObject = body["audience"]?.objectValue else {
            throw invalid(
                "\"audience\" is required: {\"tokens\": [...]}, {\"devices\": [...]}, {\"tag\": \"...\"} or {\"all\": true}"
            )
        }
        let audience = try parseAudience(audienceObject)
        guard let notificationObject = body["notification"]?.objectValue else {
            throw invalid("\"notification\" is required and must be an object")
        }
        var content = try parseNotification(notificationObject, fields: notificationFields(transports))

        var options = PushOptions(pushType: content.suggestedPushType)
        if let raw = body["push_type"] {
            guard let name = raw.stringValue, let type = PushType(rawValue: name) else {
                throw invalid(
                    "\"push_type\" must be one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            options.pushType = type
        }
        if let raw = body["priority"] {
            guard let value = integer(raw), let priority = PushPriority(rawValue: value) else {
                throw invalid("\"priority\" must be 10, 5 or 1")
            }
            if priority == .immediate, content.isBackgroundOnly,
                let refusing = transports.declarations.first(where: \.refusesImmediateBackground)
            {
                throw invalid(
                    "priority 10 with a background-only notification is refused by \(refusing.channel.displayName); use 5"
                )
            }
            options.priority = priority
        } else if options.pushType == .background {
            options.priority = .powerAware
        }
        if let raw = body["expiration"] {
            guard let seconds = integer(raw), seconds >= 0 else {
                throw invalid("\"expiration\" must be epoch seconds (0 = deliver once, do not store)")
            }
            if seconds > 0, Double(seconds) < now.timeIntervalSince1970 {
                throw invalid("\"expiration\" \(seconds) is in the past")
            }
            options.expiration = seconds == 0 ? nil : Date(timeIntervalSince1970: Double(seconds))
        }
        if let raw = body["collapse_id"] {
            guard let id = raw.stringValue, !id.isEmpty, id.utf8.count <= 64 else {
                throw invalid("\"collapse_id\" must be a string of 1–64 bytes")
            }
            options.collapseID = id
        }
        if let raw = body["environment"] {
            guard let name = raw.stringValue, let environment = PushEnvironment(rawValue: name) else {
                throw invalid("\"environment\" must be \"sandbox\" or \"production\"")
            }
            options.environment = environment
        }
        if let raw = body["android"] {
            guard let object = raw.objectValue else { throw invalid("\"android\" must be an object") }
            let (android, intent) = try parseAndroid(object, serviceFields: androidFields.map(\.field.name))
            options.android = android
            // The intent is where a tap leads: the content's click, the one place it is said.
            if let intent { content.click = .intent(intent) }
        }
        for (name, rule) in serviceRules {
            guard let value = body[name] else { continue }
            do throws(ServiceOptionsError) {
                if let entry = try rule.normalise(value) { options.services[name] = entry }
            } catch {
                throw invalid(error.sentence(at: name))
            }
        }
        // A service's own key given in `android` fills its entry (unless its object set it too).
        if let object = body["android"]?.objectValue {
            for (service, field) in androidFields {
                guard let value = object[field.name],
                    let rule = serviceRules.first(where: { $0.name == service })?.rule
                else { continue }
                var entry = options.services[service]?.objectValue ?? [:]
                if entry[field.key] == nil { entry[field.key] = value }
                let refusal: String
                do throws(ServiceOptionsError) {
                    options.services[service] = try rule.normalise(.object(entry))
                    continue
                } catch {
                    // Named as the caller wrote it: `"android.<field>" must be …`.
                    refusal =
                        error.field == field.key
                        ? "\"android.\(field.name)\" \(error.problem)" : error.sentence(at: service)
                }
                throw invalid(refusal)
            }
        }
        var sendAt: Date?
        if let raw = body["send_at"] {
            guard let seconds = integer(raw), Double(seconds) >= now.timeIntervalSince1970 - 1 else {
                throw invalid("\"send_at\" must be epoch seconds, not in the past")
            }
            sendAt = Date(timeIntervalSince1970: Double(seconds))
        }
        return PushJob(
            appID: appID, vendor: "native", audience: audience, content: content, options: options,
            sendAt: sendAt)
    }

    static func parseAudience(_ object: [String: JSONValue]) throws -> Audience {
        guard object.count == 1, let (kind, value) = object.first else {
            throw invalid("\"audience\" must have exactly one of tokens, devices, tag, all")
        }
        switch kind {
        case "tokens":
            guard let list = value.arrayValue, !list.isEmpty else {
                throw invalid("\"audience.tokens\" must be a non-empty array")
            }
            guard list.count <= NativePushAPI.maxTokens else {
                throw invalid(
                    "\"audience.tokens\" has \(list.count) tokens; at most \(NativePushAPI.maxTokens) per push (use a tag)"
                )
            }
            var tokens: [String] = []
            var seen = Set<String>()
            for (index, item) in list.enumerated() {
                guard let raw = item.stringValue, let token = DeviceToken(addressing: raw) else {
                    throw NativeAPIError(
                        400, "invalid_token",
                        "audience.tokens[\(index)] is not a device token (64–200 hex digits, or an Android service's token)"
                    )
                }
                if seen.insert(token.hex).inserted { tokens.append(token.hex) }
            }
            return .tokens(tokens)
        case "devices":
            guard let list = value.arrayValue, !list.isEmpty, list.count <= NativePushAPI.maxTokens else {
                throw invalid(
                    "\"audience.devices\" must be a non-empty array of at most \(NativePushAPI.maxTokens) device ids")
            }
            var ids: [Int64] = []
            for (index, item) in list.enumerated() {
                guard let id = integer(item), id > 0 else {
                    throw invalid("audience.devices[\(index)] is not a device id")
                }
                ids.append(Int64(id))
            }
            return .devices(ids)
        case "tag":
            guard let raw = value.stringValue, let tag = TagName(raw) else {
                throw NativeAPIError(400, "invalid_tag", "\"audience.tag\" must be \(TagName.rule)")
            }
            return .tag(tag.value)
        case "all":
            guard value == .bool(true) else {
                throw invalid("\"audience.all\" must be true")
            }
            return .all
        default:
            throw invalid("unknown audience \"\(kind)\": use tokens, devices, tag or all")
        }
    }

    /// The keys of `notification` each transport of `transports` reads into its own content
    /// entry (`TransportDeclaration.notificationFields`), by its channel.
    static func notificationFields(_ transports: TransportRegistry) -> [(
        channel: PushChannel, field: NotificationField
    )] {
        transports.declarations.flatMap { declaration in
            declaration.notificationFields.map { (declaration.channel.channel, $0) }
        }
    }

    /// The native API's `notification` object (Apple's shape, snake-cased) as neutral content.
    /// The keys one service alone takes (`mutable_content`, `relevance_score`, the alert's
    /// `launch_image`, …) and a service's own reading of a shared key are its declaration's
    /// (`fields`, `TransportDeclaration.notificationFields`): each fills that service's entry of
    /// the content under its name, which its transport checks when the message is submitted (a
    /// value out of range: `invalid_notification`) and alone reads.
    static func parseNotification(
        _ object: [String: JSONValue], fields: [(channel: PushChannel, field: NotificationField)] = []
    ) throws -> PushContent {
        var n = PushContent()
        let own = Set(fields.filter { !$0.field.isShared && !$0.field.inAlert }.map(\.field.name))
        let ownInAlert = Set(fields.filter { !$0.field.isShared && $0.field.inAlert }.map(\.field.name))
        for (key, value) in object {
            switch key {
            case "alert":
                if let text = value.stringValue {
                    n.body = text
                } else if let alert = value.objectValue {
                    try parseAlert(alert, into: &n, ownKeys: ownInAlert)
                } else {
                    throw invalid("\"notification.alert\" must be a string or an object")
                }
            case "badge":
                guard let badge = integer(value), badge >= 0 else {
                    throw invalid("\"notification.badge\" must be an integer ≥ 0")
                }
                n.badge = badge
            case "sound":
                if let name = value.stringValue {
                    n.sound = name
                } else if let name = value["name"]?.stringValue {
                    n.sound = name
                } else {
                    throw invalid(
                        "\"notification.sound\" must be a sound name or {\"name\", \"volume\"} for a critical alert")
                }
            case "content_available": n.background = try flag(value, key)
            case "category": n.category = try string(value, key)
            case "thread_id": n.thread = try string(value, key)
            case "image": n.image = try string(value, key)
            case "custom":
                guard let custom = value.objectValue else {
                    throw invalid("\"notification.custom\" must be an object")
                }
                for (customKey, customValue) in custom { n.data[customKey] = customValue }
            default:
                guard own.contains(key) else { throw invalid("unknown field \"notification.\(key)\"") }
            }
        }
        for (channel, field) in fields {
            let container = field.inAlert ? object["alert"]?.objectValue : object
            guard let value = container?[field.name] else { continue }
            do throws(NotificationFieldError) {
                if let read = try field.read(value) { n.set(field.key, read, forService: channel) }
            } catch {
                throw invalid(error.message)
            }
        }
        do {
            try n.validate()
        } catch {
            throw NativeAPIError(400, "invalid_notification", error.message)
        }
        return n
    }

    static func parseAlert(_ object: [String: JSONValue], into f: inout PushContent, ownKeys: Set<String>) throws {
        for (key, value) in object {
            let path = "notification.alert.\(key)"
            switch key {
            case "title": f.title = try string(value, path)
            case "subtitle": f.subtitle = try string(value, path)
            case "body": f.body = try string(value, path)
            case "title_loc_key": f.titleLocKey = try string(value, path)
            case "title_loc_args": f.titleLocArgs = try strings(value, path)
            case "subtitle_loc_key": f.subtitleLocKey = try string(value, path)
            case "subtitle_loc_args": f.subtitleLocArgs = try strings(value, path)
            case "loc_key": f.bodyLocKey = try string(value, path)
            case "loc_args": f.bodyLocArgs = try strings(value, path)
            default: guard ownKeys.contains(key) else { throw invalid("unknown field \"\(path)\"") }
            }
        }
    }

    private static func invalid(_ message: String) -> NativeAPIError {
        NativeAPIError(400, "invalid_request", message)
    }

    /// `{"channel_ids": {"<channel>": "chat", …}, "importance": {"<channel>": "NORMAL"}, "category":
    /// {"<channel>": "IM"}, "sound": "ding", "intent": "intent://…"}`: the message's Android
    /// settings, and the intent a tap opens (which becomes the content's click). The keys one
    /// service alone takes (`serviceFields`, `ChannelDeclaration.androidFields`) are allowed
    /// here and read into that service's entry by `parse`.
    static func parseAndroid(_ object: [String: JSONValue], serviceFields: [String] = []) throws -> (
        AndroidOptions?, intent: String?
    ) {
        let known = Set(["channel_ids", "importance", "category", "sound", "intent"] + serviceFields)
        if let unknown = object.keys.first(where: { !known.contains($0) }) {
            throw invalid("unknown field \"android.\(unknown)\"")
        }
        let services = Set(PushChannel.allCases.filter(\.isAndroid).map(\.rawValue))
        func perService(_ key: String) throws -> [String: String] {
            guard let raw = object[key] else { return [:] }
            guard let map = raw.objectValue else {
                throw invalid("\"android.\(key)\" must be an object of service names to strings")
            }
            var result: [String: String] = [:]
            for (service, value) in map {
                guard services.contains(service) else {
                    throw invalid(
                        "\"android.\(key).\(service)\": the services are \(services.sorted().joined(separator: ", "))")
                }
                guard let text = value.stringValue, !text.isEmpty, text.utf8.count <= 256 else {
                    throw invalid("\"android.\(key).\(service)\" must be a string of 1–256 bytes")
                }
                result[service] = text
            }
            return result
        }
        func text(_ key: String, limit: Int) throws -> String? {
            guard let raw = object[key] else { return nil }
            guard let value = raw.stringValue, !value.isEmpty, value.utf8.count <= limit else {
                throw invalid("\"android.\(key)\" must be a string of 1–\(limit) bytes")
            }
            return value
        }
        let options = AndroidOptions(
            channelIDs: try perService("channel_ids"), importance: try perService("importance"),
            category: try perService("category"), sound: try text("sound", limit: 256))
        let intent = try text("intent", limit: 2048)
        return (options.isEmpty ? nil : options, intent)
    }

    /// A whole number of at most 15 digits, however it is written (`3`, `3.0`, `3e0`).
    private static func integer(_ value: JSONValue) -> Int? {
        guard let double = value.doubleValue, double.rounded() == double, abs(double) < 9e15 else { return nil }
        return Int(double)
    }

    private static func flag(_ value: JSONValue, _ key: String) throws -> Bool {
        if let flag = value.boolValue { return flag }
        if let n = integer(value), n == 0 || n == 1 { return n == 1 }
        throw invalid("\"notification.\(key)\" must be true or false")
    }

    private static func string(_ value: JSONValue, _ key: String) throws -> String {
        guard let s = value.stringValue else { throw invalid("\"\(key)\" must be a string") }
        return s
    }

    private static func strings(_ value: JSONValue, _ key: String) throws -> [String] {
        guard let list = value.arrayValue else { throw invalid("\"\(key)\" must be an array of strings") }
        var strings: [String] = []
        strings.reserveCapacity(list.count)
        for element in list {
            guard let s = element.stringValue else { throw invalid("\"\(key)\" must be an array of strings") }
            strings.append(s)
        }
        return strings
    }
}
