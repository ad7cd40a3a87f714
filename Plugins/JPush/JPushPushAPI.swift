import Foundation
import TuisongCore
import TuisongHTTP

/// `/v3/push`, `/v3/push/validate`, `/v3/push/cid` and the batch single pushes.
extension JPushProvider {
    /// `POST /v3/push`: `{"sendno", "msg_id"}` once the message is durable; `/v3/push/validate`
    /// checks the same and sends nothing (`msg_id` "0").
    func push(_ call: Call, validateOnly: Bool) async throws -> Response {
        guard call.request.body.count <= JPushPayload.bodyLimit else { throw JPushError.bodyTooLarge }
        let push = try JPushPayload.parse(call.request.body, now: now)
        let msgID = try await submit(push, app: call.app, validateOnly: validateOnly)
        return JPushReply.ok(["sendno": .string(push.sendno), "msg_id": .string(msgID)])
    }

    /// Resolves the audience and submits the message; the msg_id (the message's id). Throws
    /// 1011 when no device of the app matches.
    func submit(_ push: JPushPush, app: App, validateOnly: Bool, sendAt: Date? = nil) async throws -> String {
        let audience = try await resolve(push.audience, appID: app.id)
        let empty: Bool
        switch audience {
        case .devices(let ids): empty = ids.isEmpty
        default:
            empty = try await store.audienceCount(appID: app.id, audience: audience, environment: nil, upTo: 1) == 0
        }
        if empty { throw JPushError.noTarget(msgID: "0", sendno: push.sendno) }
        if !push.ignored.isEmpty {
            logger.info(
                "jpush: fields this gateway does not carry out were ignored",
                metadata: ["app": "\(app.id)", "fields": "\(push.ignored.joined(separator: ","))"])
        }
        let job = try job(push, app: app, audience: audience, sendAt: sendAt)
        if validateOnly {
            // What submit would refuse (content APNs cannot carry, a payload too large) without
            // committing anything.
            try gateway.check(job.content, options: job.options)
            return "0"
        }
        // Once per message, before anything of it is written (a batch's refused entries say so).
        try await gateway.admit(appID: app.id)
        let record = try await gateway.submit(job)
        return String(record.id)
    }

    func job(_ push: JPushPush, app: App, audience: Audience, sendAt: Date?) throws -> PushJob {
        let plan = JPushPlan(push: push)
        return PushJob(
            appID: app.id, vendor: Self.name, audience: audience, content: plan.messageContent, options: push.options,
            sendAt: sendAt, labels: ["sendno": push.sendno], vendorContext: try plan.encoded(),
            idempotencyKey: push.cid)
    }

    /// JPush's audience over the core's devices: `"all"`, a lone tag and any combination of
    /// `tag`, `tag_and` and `tag_not` are the core's own audiences, paged when the message is
    /// sent (no list is built, and a schedule reaches the devices tagged by then); with `alias`
    /// or `registration_id` (at most 1,000 each) the devices they name are resolved here and
    /// kept when their tags match.
    func resolve(_ audience: JPushAudience, appID: Int64) async throws -> Audience {
        if audience.all { return .all }
        if let tag = audience.singleTag { return .tag(tag) }
        let selection = TagSelection(anyOf: audience.tags, allOf: audience.tagsAnd, noneOf: audience.tagsNot)
        guard !audience.aliases.isEmpty || !audience.registrationIDs.isEmpty else {
            return .tagSelection(selection)
        }
        var matching: Set<Int64>?
        func narrow(_ ids: Set<Int64>) { matching = matching.map { $0.intersection(ids) } ?? ids }
        if !audience.aliases.isEmpty { narrow(try await jpushStore.deviceIDs(appID: appID, aliases: audience.aliases)) }
        if !audience.registrationIDs.isEmpty {
            let devices = try await jpushStore.devices(appID: appID, registrationIDs: audience.registrationIDs)
            narrow(Set(devices.map(\.deviceID)))
        }
        var ids = matching ?? []
        if selection != TagSelection(), !ids.isEmpty {
            let tags = try await jpushStore.tags(appID: appID, deviceIDs: Array(ids))
            ids = ids.filter { selection.matches(tags[$0] ?? []) }
        }
        return .devices(ids.sorted())
    }

    /// `GET /v3/push/cid?count=N&type=push|schedule`: ids a push names as `cid` so that a
    /// repeated call makes one message (the message's idempotency key).
    func cids(_ call: Call) async throws -> Response {
        let count: Int
        if let text = call.request.query["count"], !text.isEmpty {
            guard let value = Int(text), (1...1000).contains(value) else {
                throw JPushError.invalid("count must be 1–1000")
            }
            count = value
        } else {
            count = 1
        }
        if let type = call.request.query["type"], !type.isEmpty, type != "push", type != "schedule" {
            throw JPushError.invalid("type must be push or schedule")
        }
        let appKey = call.app.vendorSettings[JPushKeys.vendor]?["app_key"] ?? ""
        let list = (0..<count).map { _ in JSONValue.string("\(appKey)-\(UUID().uuidString.lowercased())") }
        return JPushReply.ok(["cidlist": .array(list)])
    }

    /// `POST /v3/push/batch/{regid|alias}/single`: `{"pushlist": {cid: {platform, target,
    /// notification, message, options}}}`, up to 500, each one message to one registration id
    /// or alias; the answer is per cid, a `msg_id` or an `error`.
    func batchSingle(_ call: Call, byAlias: Bool) async throws -> Response {
        let body = try Self.object(call)
        guard case .object(let list)? = body["pushlist"] else { throw JPushError.missing("pushlist") }
        guard !list.isEmpty else { throw JPushError.invalid("pushlist is empty") }
        guard list.count <= 500 else { throw JPushError.invalid("pushlist may hold at most 500 pushes") }
        var answers: [String: JSONValue] = [:]
        for (cid, entry) in list.sorted(by: { $0.key < $1.key }) {
            do {
                guard case .object(var fields) = entry else {
                    throw JPushError.invalid("pushlist.\(cid) must be an object")
                }
                guard let target = fields.removeValue(forKey: "target")?.stringValue, !target.isEmpty else {
                    throw JPushError.missing("pushlist.\(cid).target")
                }
                fields["audience"] = [byAlias ? "alias" : "registration_id": [.string(target)]]
                fields["cid"] = .string(cid)
                let push = try JPushPayload.parse(.object(fields), now: now)
                answers[cid] = ["msg_id": .string(try await submit(push, app: call.app, validateOnly: false))]
            } catch let error as JPushError {
                answers[cid] = ["error": ["code": .int(Int64(error.code)), "message": .string(error.message)]]
            } catch let error as BacklogFull {
                answers[cid] = ["error": ["code": 2002, "message": .string(error.explanation)]]
            }
        }
        return JPushReply.ok(answers)
    }
}

/// What a JPush message carries for `JPushDeliveryPolicy` in its `vendorContext`: the platforms
/// it goes to, the iOS environment, and each platform's content where it differs from the
/// message's own.
struct JPushPlan: Sendable, Hashable, Codable {
    var platforms: Set<JPushPlatform>
    var apnsProduction: Bool
    var contents: [JPushPlatform: PushContent]
    /// The message's content: iOS's when the push has one (the gateway checks it as APNs
    /// renders it), else Android's, else HarmonyOS's.
    var messageContent: PushContent
    /// The iOS badge change, applied per device when the message is sent (`JPushBadge`).
    var iosBadge: JPushBadge?

    init(push: JPushPush) {
        // A platform the push gives no content is not pushed.
        platforms = push.platforms.filter { push.contents[$0] != nil }
        apnsProduction = push.apnsProduction
        let first = [JPushPlatform.ios, .android, .hmos].first { push.contents[$0] != nil } ?? .ios
        let message = push.contents[first] ?? PushContent()
        messageContent = message
        contents = push.contents.filter { $0.value != message }
        iosBadge = push.platforms.contains(.ios) ? push.iosBadge : nil
    }

    private enum CodingKeys: String, CodingKey {
        case platforms
        case apnsProduction = "apns_production"
        case contents
        case iosBadge = "ios_badge"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        platforms = try c.decode(Set<JPushPlatform>.self, forKey: .platforms)
        apnsProduction = try c.decode(Bool.self, forKey: .apnsProduction)
        let byName = try c.decodeIfPresent([String: PushContent].self, forKey: .contents) ?? [:]
        contents = Dictionary(
            uniqueKeysWithValues: byName.compactMap { key, value in
                JPushPlatform(rawValue: key).map { ($0, value) }
            })
        messageContent = PushContent()
        iosBadge = try c.decodeIfPresent(JPushBadge.self, forKey: .iosBadge)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(platforms.map(\.rawValue).sorted(), forKey: .platforms)
        try c.encode(apnsProduction, forKey: .apnsProduction)
        if !contents.isEmpty {
            try c.encode(
                Dictionary(uniqueKeysWithValues: contents.map { ($0.key.rawValue, $0.value) }), forKey: .contents)
        }
        try c.encodeIfPresent(iosBadge, forKey: .iosBadge)
    }

    func encoded() throws -> JSONValue {
        try JSONValue(parsing: Array(try JSONEncoder().encode(self)))
    }

    static func decoded(_ value: JSONValue?) -> JPushPlan? {
        guard let value else { return nil }
        return try? JSONDecoder().decode(JPushPlan.self, from: Data(value.serialized()))
    }
}

/// Per device: only the platforms the push names; on iOS only the environment
/// `apns_production` names (JPush's rule: it does not select Android or HarmonyOS devices); the
/// platform's own content where it differs; on iOS the badge the push gives each device
/// (`JPushBadge`, kept per device by `JPushStore.applyBadge`).
struct JPushDeliveryPolicy: DeliveryPolicy {
    /// Where devices' badges are kept; nil only in tests of pushes without a badge change.
    let jpushStore: JPushStore?

    func decide(_ recipients: [Recipient], message: MessageRecord) async throws -> [DeliveryDecision] {
        guard let plan = JPushPlan.decoded(message.vendorContext) else {
            return Array(repeating: .send, count: recipients.count)
        }
        let iosEnvironment: PushEnvironment = plan.apnsProduction ? .production : .sandbox
        var decisions: [DeliveryDecision] = recipients.map { recipient in
            let platform = JPushPlatform(channel: recipient.channel)
            guard plan.platforms.contains(platform) else { return .skip(reason: "platform") }
            if platform == .ios, recipient.environment != iosEnvironment { return .skip(reason: "other_environment") }
            if let content = plan.contents[platform] { return .sendContent(content) }
            return .send
        }
        guard let badge = plan.iosBadge, let jpushStore else { return decisions }
        let iphones = recipients.indices.filter { index in
            guard JPushPlatform(channel: recipients[index].channel) == .ios else { return false }
            if case .skip = decisions[index] { return false }
            return true
        }
        guard !iphones.isEmpty else { return decisions }
        // One statement for the page's iPhones; a page decided again gets what it was given.
        let badges = try await jpushStore.applyBadge(
            badge, messageID: message.id, deviceIDs: iphones.compactMap { recipients[$0].deviceID })
        let iosContent = plan.contents[.ios] ?? message.content
        for index in iphones {
            var content = iosContent
            content.badge = recipients[index].deviceID.flatMap { badges[$0] } ?? badge.applied(to: 0)
            decisions[index] = .sendContent(content)
        }
        return decisions
    }
}
