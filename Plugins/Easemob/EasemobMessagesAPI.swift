import Foundation
import TuisongCore
import TuisongHTTP

extension EasemobProvider {
    /// At most this many targets per send (Easemob's limit).
    static let maxTargets = 600

    // MARK: POST messages (the old API)

    func sendOld(_ request: Request) async -> Response {
        await serve(request, resource: "/messages", access: .app) { call in
            let body = try call.body()
            let targetType = try body.requiredString("target_type")
            guard ["users", "chatgroups", "chatrooms"].contains(targetType) else {
                throw EasemobError.illegalArgument("target_type can only be 'users' or 'chatgroups' or 'chatrooms'")
            }
            let targets = try Self.targets(body, key: "target")
            guard let msg = try body.object("msg") else { throw EasemobError.illegalArgument("msg is required") }
            let type = try msg.requiredString("type")
            var content = msg.members
            content["type"] = nil
            let from = try Self.sender(body)
            let ext = try Self.ext(body)
            let useMsgID = request.query["useMsgId"]?.lowercased() == "true"
            let sent: [String: String]
            switch targetType {
            case "users":
                sent = try await sendToUsers(
                    call, from: from, to: targets, type: type, body: .object(content), ext: ext)
            case "chatgroups":
                sent = try await sendToGroups(
                    call, from: from, to: targets, type: type, body: .object(content), ext: ext)
            default:
                sent = Dictionary(uniqueKeysWithValues: targets.map { ($0, EasemobIDs.messageID()) })
            }
            var data: [String: JSONValue] = [:]
            for (target, id) in sent { data[target] = .string(useMsgID ? id : "success") }
            return call.success(data: .object(data))
        }
    }

    // MARK: POST messages/users, messages/chatgroups (the new API)

    func send(_ request: Request, _ chatType: EasemobMessage.ChatType) async -> Response {
        await serve(request, resource: "/messages/\(chatType.rawValue)", access: .app) { call in
            let body = try call.body()
            let targets = try Self.targets(body, key: "to")
            let type = try body.requiredString("type")
            guard let content = body["body"], case .object = content else {
                throw EasemobError.illegalArgument("body must be an object")
            }
            let from = try Self.sender(body)
            let ext = try Self.ext(body)
            let sent =
                chatType == .users
                ? try await sendToUsers(call, from: from, to: targets, type: type, body: content, ext: ext)
                : try await sendToGroups(call, from: from, to: targets, type: type, body: content, ext: ext)
            return call.success(data: .object(sent.mapValues(JSONValue.string)))
        }
    }

    /// Chat rooms push nothing offline (a room's members are the ones online in it): the
    /// message is acknowledged with ids and not kept.
    func sendToRooms(_ request: Request) async -> Response {
        await serve(request, resource: "/messages/chatrooms", access: .app) { call in
            let body = try call.body()
            let targets = try Self.targets(body, key: "to")
            _ = try body.requiredString("type")
            _ = try Self.sender(body)
            return call.success(
                data: .object(Dictionary(uniqueKeysWithValues: targets.map { ($0, .string(EasemobIDs.messageID())) })))
        }
    }

    /// `target` / `to`: 1 to 600 names.
    static func targets(_ body: EasemobObject, key: String) throws(EasemobError) -> [String] {
        guard let targets = try body.strings(key), !targets.isEmpty else {
            throw .illegalArgument("\(key) must list at least one receiver")
        }
        guard targets.count <= maxTargets else {
            throw .illegalArgument("\(key) can hold at most \(maxTargets) receivers")
        }
        var seen: Set<String> = []
        return targets.filter { seen.insert($0).inserted }
    }

    /// `from`: missing or null means `admin`; an empty string is refused (Easemob's rule).
    static func sender(_ body: EasemobObject) throws(EasemobError) -> String {
        guard let from = try body.string("from") else { return "admin" }
        guard !from.isEmpty else { throw .illegalArgument("from can't be empty") }
        return try EasemobUsername.validated(from)
    }

    static func ext(_ body: EasemobObject) throws(EasemobError) -> JSONValue? {
        guard let ext = body["ext"] else { return nil }
        guard case .object = ext else { throw .illegalArgument("ext must be an object") }
        return ext
    }

    /// One message per receiving user; target → msg id.
    func sendToUsers(
        _ call: Call, from: String, to targets: [String], type: String, body: JSONValue, ext: JSONValue?
    ) async throws -> [String: String] {
        let names = try targets.map { name throws(EasemobError) in try EasemobUsername.validated(name) }
        // Once per request, before any badge is counted: every target's message or none.
        try await context.gateway.admit(appID: call.appID)
        let existing = try await store.existingUsers(appID: call.appID, among: names)
        var sent: [String: String] = [:]
        for (target, name) in zip(targets, names) {
            let message = EasemobMessage(
                msgID: EasemobIDs.messageID(), from: from, chatType: .users, groupID: nil, type: type, body: body,
                ext: ext)
            let receivers = existing.contains(name) && name != from ? [name] : []
            try await submit(call, message, audience: [name], counted: receivers)
            sent[target] = message.msgID
        }
        return sent
    }

    /// One message per group, to every member (the sender's devices are skipped as `sender`).
    func sendToGroups(
        _ call: Call, from: String, to groups: [String], type: String, body: JSONValue, ext: JSONValue?
    ) async throws -> [String: String] {
        try await context.gateway.admit(appID: call.appID)
        var members: [String: [String]] = [:]
        for group in groups {
            guard let list = try await store.members(appID: call.appID, groupID: group) else {
                throw EasemobError.notFound("group \(group.prefix(64)) does not exist")
            }
            members[group] = list
        }
        var sent: [String: String] = [:]
        for group in groups {
            let list = members[group] ?? []
            let message = EasemobMessage(
                msgID: EasemobIDs.messageID(), from: from, chatType: .chatgroups, groupID: group, type: type,
                body: body,
                ext: ext)
            try await submit(call, message, audience: list, counted: list.filter { $0 != from })
            sent[group] = message.msgID
        }
        return sent
    }

    /// Counts the message as offline for `counted` (the badge is the offline message count,
    /// whether or not a push follows), keeps each receiver's new count with the message, and
    /// hands it to the gateway; the delivery policy decides per receiver.
    func submit(_ call: Call, _ message: EasemobMessage, audience: [String], counted: [String]) async throws {
        let badges =
            counted.isEmpty ? [:] : try await accounts.incrementBadges(appID: call.appID, accounts: counted)
        guard case .object(var vendorContext) = message.context else { return }
        vendorContext["badges"] = .object(badges.mapValues { .int(Int64($0)) })
        // The message's own content (what its status shows), as an iPhone would see it;
        // each device's is decided by the policy for its own channel.
        let generic = EasemobPushContent.notification(
            message, receiver: EasemobReceiverDisplay(username: "", displayStyle: 0, language: nil),
            senderNickname: nil, template: nil, badge: nil, channel: .apns)
        var labels = ["chat_type": message.chatType.rawValue, "from": message.from, "type": message.type]
        if let group = message.groupID { labels["group"] = group }
        let job = PushJob(
            appID: call.appID, vendor: Self.name, vendorMessageID: message.msgID, audience: .accounts(audience),
            content: generic,
            options: PushOptions(
                pushType: .alert, priority: .immediate, android: EasemobAndroidOptions.options(ext: message.ext),
                services: EasemobHarmonyOptions.entry(ext: message.ext).map { ["harmony": $0] } ?? [:]),
            labels: labels,
            vendorContext: .object(vendorContext))
        do {
            _ = try await context.gateway.submit(job)
        } catch let error as PayloadError {
            throw EasemobError.illegalArgument("message is too large: \(error.message)")
        }
    }
}

/// The APNs channel by the name its transport declares (a plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
}
