import Foundation
import TuisongCore
import TuisongHTTP

/// REST API 3.0: `POST /rest/3.0/{class}/{method}` (query methods also `GET`).
enum RestMethod: String, CaseIterable, Sendable {
    case pushSingleDevice = "push/single_device"
    case pushAll = "push/all"
    case pushTags = "push/tags"
    case pushBatchDevice = "push/batch_device"
    case queryMessageStatus = "report/query_msg_status"
    case queryTimerRecords = "report/query_timer_records"
    case queryTopicRecords = "report/query_topic_records"
    case statisticDevice = "report/statistic_device"
    case statisticTopic = "report/statistic_topic"
    case queryTags = "app/query_tags"
    case createTag = "app/create_tag"
    case deleteTag = "app/del_tag"
    case addDevices = "tag/add_devices"
    case deleteDevices = "tag/del_devices"
    case deviceCount = "tag/device_num"
    case queryTimers = "timer/query_list"
    case cancelTimer = "timer/cancel"
    case queryTopics = "topic/query_list"

    /// Queries may come as GET; everything that changes something is POST only.
    var allowsGET: Bool {
        switch self {
        case .queryMessageStatus, .queryTimerRecords, .queryTopicRecords, .statisticDevice, .statisticTopic,
            .queryTags, .deviceCount, .queryTimers, .queryTopics:
            true
        default:
            false
        }
    }
}

/// One authenticated 3.0 call.
struct RestCall: Sendable {
    let app: App
    let parameters: BaiduParameters
    /// `device_type`: 3 Android, 4 iOS (the default).
    let deviceType: BaiduDeviceType
}

extension BaiduProvider {
    /// `batch_device` and `tag/*` limits of Baidu's API.
    static let batchDeviceLimit = 10_000
    static let tagDevicesLimit = 10

    func restAPI(_ request: Request) async -> Response {
        let requestID = BaiduReply.newRequestID()
        return await respond(requestID) {
            let name = "\(request.pathParameters["class"] ?? "")/\(request.pathParameters["method"] ?? "")"
            guard let method = RestMethod(rawValue: name) else {
                throw BaiduError(.methodNotAllowed, "unknown method \(name)")
            }
            guard request.method == .POST || method.allowsGET else {
                throw BaiduError(.methodNotAllowed, "\(name) accepts POST only", httpStatus: 405)
            }
            let parameters = try BaiduParameters(request)
            let caller = try await authenticator.authenticate(request, parameters)
            let call = RestCall(
                app: caller.app, parameters: parameters, deviceType: try BaiduDeviceType.parse(parameters))
            switch method {
            case .pushSingleDevice: return try await pushSingleDevice(call)
            case .pushAll: return try await pushAll(call)
            case .pushTags: return try await pushTags(call)
            case .pushBatchDevice: return try await pushBatchDevice(call)
            case .queryMessageStatus: return try await queryMessageStatus(call)
            case .queryTimerRecords: return try await queryTimerRecords(call)
            case .queryTopicRecords: return try await queryTopicRecords(call)
            case .statisticDevice: return try await statisticDevice(call)
            case .statisticTopic: return try await statisticTopic(call)
            case .queryTags: return try await queryTags(call)
            case .createTag: return try await createTag(call)
            case .deleteTag: return try await deleteTag(call)
            case .addDevices: return try await changeTagDevices(call, add: true)
            case .deleteDevices: return try await changeTagDevices(call, add: false)
            case .deviceCount: return try await deviceCount(call)
            case .queryTimers: return try await queryTimers(call)
            case .cancelTimer: return try await cancelTimer(call)
            case .queryTopics: return try await queryTopics(call)
            }
        }
    }

    // MARK: push

    /// `msg_type`, `msg`, `msg_expires`, `deploy_status` (and `send_time` where allowed).
    private func basePush(_ call: RestCall, audience: Audience, rangeType: Int, schedulable: Bool) throws -> BaiduPush {
        let parameters = call.parameters
        let type = BaiduMessageType(rawValue: try parameters.integer("msg_type", default: 0, in: 0...1))!
        let message = try BaiduMessage(text: try parameters.required("msg"), type: type, parameter: "msg")
        let expiresIn = try parameters.integer("msg_expires", default: 18_000, in: 0...604_800)
        var sendAt: Date?
        if schedulable, let sendTime = try parameters.optionalInteger("send_time", in: 0...Int(Int64.max)) {
            let now = clock.now.timeIntervalSince1970
            // Baidu: more than 60 s from now and within a year.
            guard TimeInterval(sendTime) > now + 60, TimeInterval(sendTime) < now + 365 * 86_400 else {
                throw BaiduError.invalidParameter(
                    "send_time", "must be more than 60 s after now (\(Int(now))) and within a year, got \(sendTime)")
            }
            sendAt = Date(timeIntervalSince1970: TimeInterval(sendTime))
        }
        var labels = ["api": "3.0", "range_type": String(rangeType)]
        if let topic = try Self.topicID(parameters, required: false) { labels["topic_id"] = topic }
        return BaiduPush(
            app: call.app, audience: audience, messages: [(message, nil)], messageType: type, expiresIn: expiresIn,
            environment: try Self.environment(parameters), sendAt: sendAt, labels: labels, parameter: "msg",
            deviceType: call.deviceType)
    }

    private func pushed(_ sent: [BaiduSent]) -> [String: JSONValue] {
        guard let first = sent.first else { return [:] }
        var result: [String: JSONValue] = ["msg_id": .string(first.msgID), "send_time": Self.sendTime(first.record)]
        if let timerID = first.timerID {
            result["timer_id"] = .string(timerID)
            result["send_time"] = first.record.sendAt.map(JSONValue.seconds) ?? result["send_time"]
        }
        return result
    }

    private func pushSingleDevice(_ call: RestCall) async throws -> [String: JSONValue] {
        let channelID = try call.parameters.required("channel_id")
        let device = try await device(app: call.app, channelID: channelID)
        _ = try Self.ofType(call.deviceType, [device], naming: "channel \(channelID)")
        var push = try basePush(call, audience: .devices([device.id]), rangeType: 7, schedulable: false)
        push.keepFor = [device]
        return pushed(try await pusher.submit(push))
    }

    private func pushAll(_ call: RestCall) async throws -> [String: JSONValue] {
        pushed(try await pusher.submit(try basePush(call, audience: .all, rangeType: 1, schedulable: true)))
    }

    private func pushTags(_ call: RestCall) async throws -> [String: JSONValue] {
        let type = try call.parameters.integer("type", in: 1...Int(Int32.max))
        guard type == 1 else { throw BaiduError.invalidParameter("type", "must be 1 (push to a tag), got \(type)") }
        let tag = try call.parameters.tag()
        let push = try basePush(call, audience: .tag(tag.value), rangeType: 0, schedulable: true)
        _ = try await existingTag(app: call.app, tag)
        return pushed(try await pusher.submit(push))
    }

    private func pushBatchDevice(_ call: RestCall) async throws -> [String: JSONValue] {
        let channelIDs = try call.parameters.idList("channel_ids", max: Self.batchDeviceLimit, bareAllowed: false)
        var push = try basePush(call, audience: .all, rangeType: 2, schedulable: false)
        let bound = try await baiduStore.devices(appID: call.app.id, channelIDs: channelIDs)
        guard !bound.isEmpty else {
            throw BaiduError(.bindNotFound, "none of the \(channelIDs.count) channel ids is bound")
        }
        let devices = try Self.ofType(call.deviceType, bound, naming: "channel_ids")
        push.audience = .devices(devices.map(\.id))
        push.keepFor = devices
        return pushed(try await pusher.submit(push))
    }

    // MARK: report

    private func queryMessageStatus(_ call: RestCall) async throws -> [String: JSONValue] {
        let msgIDs = try call.parameters.idList("msg_id", max: 100, bareAllowed: true)
        let records = try await baiduStore.messages(appID: call.app.id, msgIDs: msgIDs)
        guard !records.isEmpty else {
            throw BaiduError(.dataNotFound, "no message with msg_id \(msgIDs.joined(separator: ", "))")
        }
        var result: [JSONValue] = []
        for record in records {
            guard let status = try await gateway.status(messageID: record.id) else { continue }
            result.append([
                "msg_id": .string(record.vendorMessageID ?? ""),
                "status": .int(Self.baiduStatus(status)),
                "send_time": Self.sendTime(record),
                "success": .int(Int64(status.counts.delivered)),
                "total_num": .int(Int64(status.record.total ?? status.counts.total)),
            ])
        }
        return ["total_num": .int(Int64(result.count)), "result": .array(result)]
    }

    private func records(_ records: [MessageRecord]) async throws -> [JSONValue] {
        var result: [JSONValue] = []
        for record in records {
            guard let status = try await gateway.status(messageID: record.id) else { continue }
            result.append([
                "msg_id": .string(record.vendorMessageID ?? ""),
                "status": .int(Self.baiduStatus(status)),
                "send_time": Self.sendTime(record),
            ])
        }
        return result
    }

    private func recordRange(_ parameters: BaiduParameters) throws(BaiduError) -> (from: Date?, to: Date?) {
        let from = try parameters.optionalInteger("range_start", in: 0...Int(Int64.max))
        let to = try parameters.optionalInteger("range_end", in: 0...Int(Int64.max))
        if let from, let to, from > to {
            throw BaiduError.invalidParameter("range_end", "must not be before range_start")
        }
        return (
            from.map { Date(timeIntervalSince1970: TimeInterval($0)) },
            to.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        )
    }

    private func queryTimerRecords(_ call: RestCall) async throws -> [String: JSONValue] {
        let timerID = try call.parameters.required("timer_id")
        guard BaiduParameters.isPlainID(timerID) else {
            throw BaiduError.invalidParameter("timer_id", "must be digits")
        }
        let (start, limit) = try call.parameters.page(defaultLimit: 100, maxLimit: 100)
        let (from, to) = try recordRange(call.parameters)
        guard try await baiduStore.timerMessage(appID: call.app.id, timerID: timerID) != nil else {
            throw BaiduError(.dataNotFound, "no timer \(timerID)")
        }
        let records = try await baiduStore.sentMessages(
            appID: call.app.id, label: "timer_id", value: timerID, from: from, to: to, start: start, limit: limit)
        return ["timer_id": .string(timerID), "result": .array(try await self.records(records))]
    }

    private func queryTopicRecords(_ call: RestCall) async throws -> [String: JSONValue] {
        let topicID = try Self.topicID(call.parameters, required: true)!
        let (start, limit) = try call.parameters.page(defaultLimit: 100, maxLimit: 100)
        let (from, to) = try recordRange(call.parameters)
        let records = try await baiduStore.sentMessages(
            appID: call.app.id, label: "topic_id", value: topicID, from: from, to: to, start: start, limit: limit)
        return ["topic_id": .string(topicID), "result": .array(try await self.records(records))]
    }

    private func statisticDevice(_ call: RestCall) async throws -> [String: JSONValue] {
        let days = try await baiduStore.deviceDays(
            appID: call.app.id, now: clock.now, days: configuration.reportDays, utcOffset: configuration.reportUTCOffset
        )
        var result: [String: JSONValue] = [:]
        for day in days {
            result[String(Int64(day.start.timeIntervalSince1970))] = [
                "new_term": .int(Int64(day.bound)),
                "del_term": .int(Int64(day.unbound)),
                "online_term": .int(Int64(day.active)),
                "addup_term": .int(Int64(day.cumulative)),
                "total_term": .int(Int64(day.total)),
            ]
        }
        return ["total_num": .int(Int64(days.count)), "result": .object(result)]
    }

    private func statisticTopic(_ call: RestCall) async throws -> [String: JSONValue] {
        let topicID = try Self.topicID(call.parameters, required: true)!
        let days = configuration.reportDays
        let offset = configuration.reportUTCOffset
        // The first instant of the first reported day in the report's offset.
        let now = clock.now.timeIntervalSince1970
        let today = ((now + Double(offset)) / 86_400).rounded(.down)
        let first = Date(timeIntervalSince1970: (today - Double(days - 1)) * 86_400 - Double(offset))
        let delivered = try await baiduStore.topicDeliveries(
            appID: call.app.id, topicID: topicID, since: first, utcOffset: offset)
        var result: [String: JSONValue] = [:]
        for index in 0..<days {
            let start = first.addingTimeInterval(Double(index) * 86_400)
            result[String(Int64(start.timeIntervalSince1970))] = ["ack": .int(Int64(delivered[start] ?? 0))]
        }
        return ["total_num": .int(Int64(days)), "result": .object(result)]
    }

    // MARK: app tags

    private func queryTags(_ call: RestCall) async throws -> [String: JSONValue] {
        let name = try call.parameters["tag"].map { raw throws(BaiduError) in
            try BaiduParameters.tagName(raw, parameter: "tag").value
        }
        let (start, limit) = try call.parameters.page(defaultLimit: 100, maxLimit: 100)
        let (total, tags) = try await baiduStore.tags(appID: call.app.id, name: name, start: start, limit: limit)
        return [
            "total_num": .int(Int64(total)),
            "result": .array(
                tags.map { tag in
                    [
                        "tid": .string(String(tag.id)), "tag": .string(tag.name), "info": "", "type": 0,
                        "create_time": tag.createdAt.map(JSONValue.seconds) ?? 0,
                    ]
                }),
        ]
    }

    private func createTag(_ call: RestCall) async throws -> [String: JSONValue] {
        let tag = try call.parameters.tag()
        let (_, created) = try await baiduStore.createTag(appID: call.app.id, name: tag.value)
        // result 1: Baidu's "not created" — the tag already exists.
        return ["tag": .string(tag.value), "result": created ? 0 : 1]
    }

    private func deleteTag(_ call: RestCall) async throws -> [String: JSONValue] {
        let tag = try call.parameters.tag()
        guard try await baiduStore.deleteTag(appID: call.app.id, name: tag.value) else {
            throw BaiduError(.tagNotFound, "tag \(tag.value) does not exist")
        }
        return ["tag": .string(tag.value), "result": 0]
    }

    private func changeTagDevices(_ call: RestCall, add: Bool) async throws -> [String: JSONValue] {
        let tag = try call.parameters.tag()
        let channelIDs = try call.parameters.idList("channel_ids", max: Self.tagDevicesLimit, bareAllowed: false)
        _ = try await existingTag(app: call.app, tag)
        let devices = try await baiduStore.devices(appID: call.app.id, channelIDs: channelIDs)
        var byChannel: [String: Int64] = [:]
        for device in devices { byChannel[device.channelID] = device.id }
        let changed: Set<Int64>
        if add {
            changed = Set(byChannel.values)
            _ = try await baiduStore.addTag(appID: call.app.id, name: tag.value, deviceIDs: Array(changed))
        } else {
            changed = try await baiduStore.removeTag(
                appID: call.app.id, name: tag.value, deviceIDs: Array(byChannel.values))
        }
        // result 0: the device now is (add) / no longer is (delete) in the tag; 1: unknown
        // channel, or (delete) it was not in the tag.
        return [
            "result": .array(
                channelIDs.map { channel in
                    let ok = byChannel[channel].map { changed.contains($0) } ?? false
                    return ["channel_id": .string(channel), "result": ok ? 0 : 1]
                })
        ]
    }

    private func deviceCount(_ call: RestCall) async throws -> [String: JSONValue] {
        let tag = try call.parameters.tag()
        _ = try await existingTag(app: call.app, tag)
        return ["device_num": .int(Int64(try await baiduStore.tagDeviceCount(appID: call.app.id, name: tag.value)))]
    }

    // MARK: timers and topics

    private func queryTimers(_ call: RestCall) async throws -> [String: JSONValue] {
        let timerID = call.parameters["timer_id"]
        if let timerID, !BaiduParameters.isPlainID(timerID) {
            throw BaiduError.invalidParameter("timer_id", "must be digits")
        }
        let (start, limit) = try call.parameters.page(defaultLimit: 100, maxLimit: 100)
        let (total, timers) = try await baiduStore.timers(
            appID: call.app.id, timerID: timerID, start: start, limit: limit)
        return [
            "total_num": .int(Int64(total)),
            "result": .array(
                timers.map { record in
                    [
                        "timer_id": .string(record.labels["timer_id"] ?? ""),
                        "msg": .string(record.labels["msg"] ?? ""),
                        "send_time": Self.sendTime(record),
                        "msg_type": .int(Int64(record.labels["msg_type"] ?? "") ?? 0),
                        "range_type": .int(Int64(record.labels["range_type"] ?? "") ?? 0),
                    ]
                }),
        ]
    }

    private func cancelTimer(_ call: RestCall) async throws -> [String: JSONValue] {
        let timerID = try call.parameters.required("timer_id")
        guard BaiduParameters.isPlainID(timerID) else {
            throw BaiduError.invalidParameter("timer_id", "must be digits")
        }
        guard let record = try await baiduStore.timerMessage(appID: call.app.id, timerID: timerID) else {
            throw BaiduError(.dataNotFound, "no timer \(timerID)")
        }
        guard try await gateway.cancel(messageID: record.id) else {
            throw BaiduError(.dataNotFound, "timer \(timerID) has already fired or been cancelled")
        }
        return [:]
    }

    private func queryTopics(_ call: RestCall) async throws -> [String: JSONValue] {
        let (start, limit) = try call.parameters.page(defaultLimit: 20, maxLimit: 20)
        let (total, topics) = try await baiduStore.topics(appID: call.app.id, start: start, limit: limit)
        return [
            "total_num": .int(Int64(total)),
            "result": .array(
                topics.map { topic in
                    [
                        "topic_id": .string(topic.topicID),
                        "ctime": .seconds(topic.firstPushAt),
                        "mtime": .seconds(topic.lastPushAt),
                        "push_cnt": .int(Int64(topic.pushed)),
                        "ack_cnt": .int(Int64(topic.delivered)),
                    ]
                }),
        ]
    }
}
