import Foundation
import TuisongCore
import TuisongHTTP

/// Channel REST API 2.0: `POST /rest/2.0/channel/{channel_id|channel}` with `method`.
/// `push_msg`, `set_tag`, `fetch_tag`, `delete_tag` and `query_user_tags` always use
/// `/channel` (a channel id goes in the body); the other methods take the channel id in
/// the path, as Baidu's SDKs send them.
enum ChannelMethod: String, CaseIterable, Sendable {
    case pushMessage = "push_msg"
    case setTag = "set_tag"
    case fetchTag = "fetch_tag"
    case deleteTag = "delete_tag"
    case queryUserTags = "query_user_tags"
    case queryBindList = "query_bindlist"
    case verifyBind = "verify_bind"
    case queryDeviceType = "query_device_type"
    case fetchMessage = "fetch_msg"
    case fetchMessageCount = "fetch_msgcount"
    case deleteMessage = "delete_msg"

    /// Queries may come as GET; what changes something is POST only.
    var allowsGET: Bool {
        switch self {
        case .pushMessage, .setTag, .deleteTag, .deleteMessage: false
        default: true
        }
    }

    var takesChannelInBody: Bool {
        switch self {
        case .pushMessage, .setTag, .fetchTag, .deleteTag, .queryUserTags: true
        default: false
        }
    }
}

/// One authenticated 2.0 call.
struct ChannelCall: Sendable {
    let app: App
    let parameters: BaiduParameters
    /// The channel id the call is about: from the path, or the body for body methods.
    let channelID: String?
}

extension BaiduProvider {
    func channelAPI(_ request: Request) async -> Response {
        let requestID = BaiduReply.newRequestID()
        return await respond(requestID) {
            let parameters = try BaiduParameters(request)
            let name = try parameters.required("method")
            guard let method = ChannelMethod(rawValue: name) else {
                throw BaiduError(.methodNotAllowed, "unknown method \(name)")
            }
            guard request.method == .POST || method.allowsGET else {
                throw BaiduError(.methodNotAllowed, "\(name) accepts POST only", httpStatus: 405)
            }
            let caller = try await authenticator.authenticate(request, parameters)
            let segment = request.pathParameters["channel"] ?? "channel"
            let pathChannel = segment == "channel" ? nil : segment
            let channelID: String?
            if method.takesChannelInBody {
                if pathChannel != nil {
                    throw BaiduError.invalidParameter(
                        "channel_id", "of \(name) goes in the body; the path must be /rest/2.0/channel/channel")
                }
                channelID = parameters["channel_id"]
            } else {
                if parameters["channel_id"] != nil {
                    throw BaiduError.invalidParameter(
                        "channel_id", "of \(name) goes in the path: /rest/2.0/channel/<channel_id>")
                }
                channelID = pathChannel
            }
            if let channelID, !BaiduParameters.isPlainID(channelID) {
                throw BaiduError.invalidParameter("channel_id", "must be a channel id (digits)")
            }
            let call = ChannelCall(app: caller.app, parameters: parameters, channelID: channelID)
            switch method {
            case .pushMessage: return try await pushMessage(call)
            case .setTag: return try await setTag(call)
            case .fetchTag: return try await fetchTag(call)
            case .deleteTag: return try await deleteTag(call)
            case .queryUserTags: return try await queryUserTags(call)
            case .queryBindList: return try await queryBindList(call)
            case .verifyBind: return try await verifyBind(call)
            case .queryDeviceType: return try await queryDeviceType(call)
            case .fetchMessage: return try await fetchMessage(call)
            case .fetchMessageCount: return try await fetchMessageCount(call)
            case .deleteMessage: return try await deleteMessage(call)
            }
        }
    }

    // MARK: push_msg

    private func pushMessage(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let parameters = call.parameters
        let pushType = try parameters.integer("push_type", in: 1...3)
        let deviceType = try BaiduDeviceType.parse(parameters)
        let type = BaiduMessageType(rawValue: try parameters.integer("message_type", default: 0, in: 0...1))!
        let texts = try Self.messageTexts(parameters)
        let keys = try Self.messageKeys(parameters, count: texts.count)
        var messages: [(message: BaiduMessage, key: String?)] = []
        for (index, value) in texts.enumerated() {
            let parameter = texts.count > 1 ? "messages[\(index)]" : "messages"
            // A single object is kept exactly as sent; array elements as their JSON.
            let original = texts.count == 1 && value.objectValue != nil ? parameters["messages"] : nil
            messages.append(
                (try BaiduMessage(value, original: original, type: type, parameter: parameter), keys[index]))
        }
        let expiresIn = try parameters.integer("message_expires", default: 86_400, in: 0...604_800)
        let environment = try Self.environment(parameters)

        var push = BaiduPush(
            app: call.app, audience: .all, messages: messages, messageType: type, expiresIn: expiresIn,
            environment: environment, sendAt: nil, labels: ["api": "2.0"], parameter: "messages",
            deviceType: deviceType)
        switch pushType {
        case 1:
            let userID = try parameters.required("user_id")
            let devices = try Self.ofType(
                deviceType, try await devices(app: call.app, userID: userID, channelID: call.channelID),
                naming: "user \(userID)")
            push.audience = .devices(devices.map(\.id))
            push.keepFor = devices
            push.labels["range_type"] = "7"
        case 2:
            let tag = try parameters.tag()
            _ = try await existingTag(app: call.app, tag)
            push.audience = .tag(tag.value)
            push.labels["range_type"] = "0"
        default:
            push.labels["range_type"] = "1"
        }
        let sent = try await pusher.submit(push)
        return [
            "success_amount": .int(Int64(sent.count)),
            "msgids": .array(sent.map { .string($0.msgID) }),
        ]
    }

    /// `messages`: a JSON string (one message), a JSON object (one message), or a JSON array
    /// of those — as the SDKs `json.dumps`/`json_encode` what they are given.
    private static func messageTexts(_ parameters: BaiduParameters) throws(BaiduError) -> [JSONValue] {
        let text = try parameters.required("messages")
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text)
        } catch {
            throw .invalidParameter("messages", "is not valid JSON (\(error.message) at byte \(error.offset))")
        }
        switch value {
        case .array(let elements):
            guard !elements.isEmpty else { throw .invalidParameter("messages", "must not be an empty array") }
            guard elements.count <= 100 else { throw .invalidParameter("messages", "must hold at most 100 messages") }
            return elements
        default:
            return [value]
        }
    }

    /// `msg_keys`: one per message (a JSON array, a JSON string, or plain text for one message).
    private static func messageKeys(_ parameters: BaiduParameters, count: Int) throws(BaiduError) -> [String?] {
        guard let text = parameters["msg_keys"] else { return Array(repeating: nil, count: count) }
        var keys: [String]
        switch try? JSONValue(parsing: text) {
        case .array(let elements)?:
            keys = []
            for element in elements {
                guard let key = element.stringValue else { throw .invalidParameter("msg_keys", "must hold strings") }
                keys.append(key)
            }
        case .string(let key)?: keys = [key]
        case .int(let key)?: keys = [String(key)]
        default: keys = [text]
        }
        guard keys.count == count else {
            throw .invalidParameter("msg_keys", "must give one key per message (\(count)), got \(keys.count)")
        }
        return keys.map { $0.isEmpty ? nil : $0 }
    }

    // MARK: Tags

    private func setTag(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let tag = try call.parameters.tag()
        if let userID = call.parameters["user_id"] {
            let devices = try await devices(app: call.app, userID: userID, channelID: call.channelID)
            let (stored, _) = try await baiduStore.addTag(
                appID: call.app.id, name: tag.value, deviceIDs: devices.map(\.id))
            return ["tid": .int(stored.id)]
        }
        let (stored, _) = try await baiduStore.createTag(appID: call.app.id, name: tag.value)
        return ["tid": .int(stored.id)]
    }

    private func fetchTag(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let name = try call.parameters["name"].map { raw throws(BaiduError) in
            try BaiduParameters.tagName(raw, parameter: "name").value
        }
        let (start, limit) = try call.parameters.page(defaultLimit: 10, maxLimit: 100)
        let (total, tags) = try await baiduStore.tags(appID: call.app.id, name: name, start: start, limit: limit)
        return [
            "total_num": .int(Int64(total)),
            "amount": .int(Int64(tags.count)),
            "tags": .array(
                tags.map { tag in
                    [
                        "tid": .int(tag.id), "name": .string(tag.name), "info": "", "type": 0,
                        "create_time": tag.createdAt.map(JSONValue.seconds) ?? 0,
                    ]
                }),
        ]
    }

    private func deleteTag(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let tag = try call.parameters.tag()
        let stored = try await existingTag(app: call.app, tag)
        if let userID = call.parameters["user_id"] {
            let devices = try await devices(app: call.app, userID: userID, channelID: call.channelID)
            _ = try await baiduStore.removeTag(appID: call.app.id, name: tag.value, deviceIDs: devices.map(\.id))
        } else {
            guard try await baiduStore.deleteTag(appID: call.app.id, name: tag.value) else {
                throw BaiduError(.tagNotFound, "tag \(tag.value) does not exist")
            }
        }
        return ["tid": .int(stored.id)]
    }

    private func queryUserTags(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let devices = try await devices(
            app: call.app, userID: try call.parameters.required("user_id"), channelID: call.channelID)
        let tags = try await baiduStore.tags(appID: call.app.id, deviceIDs: devices.map(\.id))
        return [
            "tag_num": .int(Int64(tags.count)),
            "tags": .array(
                tags.map { tag in
                    [
                        "tid": .int(tag.id), "name": .string(tag.name), "info": "", "type": 0,
                        "create_time": tag.createdAt.map(JSONValue.seconds) ?? 0,
                    ]
                }),
        ]
    }

    // MARK: Bindings

    private func queryBindList(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let userID = try call.parameters.required("user_id")
        let deviceType = try call.parameters.optionalInteger("device_type", in: 1...5)
        let (start, limit) = try call.parameters.page(defaultLimit: 10, maxLimit: 100)
        // 30608 for a user (or channel) with no binding at all.
        _ = try await devices(app: call.app, userID: userID, channelID: call.channelID)
        var (total, devices) = try await baiduStore.bindings(
            appID: call.app.id, userID: userID, channelID: call.channelID, start: start, limit: limit)
        if let deviceType {
            // A user's devices are a handful: filter the page rather than the query.
            guard let type = BaiduDeviceType(rawValue: deviceType) else {
                return ["total_num": 0, "amount": 0, "binds": []]
            }
            let all = try await baiduStore.bindings(
                appID: call.app.id, userID: userID, channelID: call.channelID, start: 0, limit: Int.max
            ).devices.filter { type.matches($0.channel) }
            total = all.count
            devices = Array(all.dropFirst(start).prefix(limit))
        }
        return [
            "total_num": .int(Int64(total)),
            "amount": .int(Int64(devices.count)),
            "binds": .array(devices.map(Self.bindInfo)),
        ]
    }

    /// Baidu's `BindInfo`; the device is online as far as APNs is concerned until it is
    /// invalidated.
    private static func bindInfo(_ device: BaiduDevice) -> JSONValue {
        [
            "channel_id": .int(Int64(device.channelID) ?? 0),
            "user_id": .string(device.userID ?? ""),
            "device_id": .string(String(device.token.prefix(16))),
            "device_type": .int(Int64(BaiduDeviceType(channel: device.channel).rawValue)),
            "bind_name": "",
            "bind_time": .seconds(device.updatedAt),
            "create_time": .seconds(device.createdAt),
            "update_time": .seconds(device.updatedAt),
            "info": "",
            "bind_status": 0,
            "online_status": .string(device.invalidatedAt == nil ? "on" : "off"),
            "online_timestamp": .seconds(device.updatedAt),
            "online_expires": 0,
        ]
    }

    private func verifyBind(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let userID = try call.parameters.required("user_id")
        let deviceType = try call.parameters.optionalInteger("device_type", in: 1...5)
        var devices = try await devices(app: call.app, userID: userID, channelID: call.channelID)
        if let deviceType {
            devices = devices.filter { BaiduDeviceType(channel: $0.channel).rawValue == deviceType }
            guard !devices.isEmpty else {
                throw BaiduError(.bindNotFound, "user \(userID) has no binding of device type \(deviceType)")
            }
        }
        return ["total_num": .int(Int64(devices.count))]
    }

    private func queryDeviceType(_ call: ChannelCall) async throws -> [String: JSONValue] {
        guard let channelID = call.channelID else {
            throw BaiduError.invalidParameter("channel_id", "is required in the path: /rest/2.0/channel/<channel_id>")
        }
        let device = try await device(app: call.app, channelID: channelID)
        return ["device_type": .int(Int64(BaiduDeviceType(channel: device.channel).rawValue))]
    }

    // MARK: Kept messages

    private func fetchMessage(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let userID = try call.parameters.required("user_id")
        let (start, limit) = try call.parameters.page(defaultLimit: 10, maxLimit: 100)
        let (total, messages) = try await keptMessages(call, userID: userID, start: start, limit: limit)
        return [
            "total_num": .int(Int64(total)),
            "amount": .int(Int64(messages.count)),
            "messages": .array(
                messages.map { message in
                    [
                        "channel_id": .string(message.channelID),
                        "msg_id": .string(message.msgID),
                        "msg_key": .string(message.msgKey ?? ""),
                        "message": .string(message.message),
                        "message_length": .int(Int64(message.message.utf8.count)),
                        "message_type": .int(Int64(message.messageType)),
                        "create_time": .seconds(message.createdAt),
                        "expires": .seconds(message.expiresAt),
                    ]
                }),
        ]
    }

    private func fetchMessageCount(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let (total, _) = try await keptMessages(
            call, userID: try call.parameters.required("user_id"), start: 0, limit: 0)
        return ["total_num": .int(Int64(total))]
    }

    private func deleteMessage(_ call: ChannelCall) async throws -> [String: JSONValue] {
        let userID = try call.parameters.required("user_id")
        let msgIDs = try call.parameters.idList("msg_ids", max: 1000, bareAllowed: true)
        _ = try await keptMessages(call, userID: userID, start: 0, limit: 0)
        let deleted = try await baiduStore.deleteKeptMessages(
            appID: call.app.id, userID: userID, channelID: call.channelID, msgIDs: msgIDs)
        return ["success_amount": .int(Int64(deleted.count)), "msgids": .array(deleted.map(JSONValue.string))]
    }

    /// The user's kept messages; 30608 for a user that is neither bound nor has any.
    private func keptMessages(_ call: ChannelCall, userID: String, start: Int, limit: Int) async throws
        -> (total: Int, messages: [BaiduKeptMessage])
    {
        guard BaiduParameters.isPlainID(userID) else {
            throw BaiduError.invalidParameter("user_id", "must be a user id (digits)")
        }
        let kept = try await baiduStore.keptMessages(
            appID: call.app.id, userID: userID, channelID: call.channelID, now: clock.now, start: start, limit: limit)
        if kept.total == 0 {
            // Unknown user (or channel) rather than an empty mailbox.
            _ = try await devices(app: call.app, userID: userID, channelID: call.channelID)
        }
        return kept
    }
}
