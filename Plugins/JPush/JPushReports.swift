import Foundation
import TuisongCore
import TuisongHTTP

/// JPush's report API (`report.jpush.cn`) from Tuisong's own counts: `*_sent` is what each
/// service accepted (`delivered`), `*_received` what the services' receipts (and the app's
/// own, for APNs) reported arriving (docs/receipts.md). A figure no channel of the message can
/// give is `null`, as JPush answers a statistic it does not have.
extension JPushProvider {
    /// One message's figures per JPush platform.
    struct PlatformFigures {
        var targets = 0
        var sent = 0
        var received = 0
        var clicked = 0
        var hasDeliveries: Bool { targets > 0 }
    }

    func figures(messageID: Int64, appID: Int64) async throws -> [JPushPlatform: PlatformFigures]? {
        guard let record = try await store.message(id: messageID), record.appID == appID else { return nil }
        var figures: [JPushPlatform: PlatformFigures] = [:]
        for (channel, counts) in try await store.channelCounts(messageID: messageID) {
            let platform = JPushPlatform(channel: channel)
            var entry = figures[platform] ?? PlatformFigures()
            entry.targets += counts.queued + counts.sending + counts.delivered + counts.failed + counts.held
            entry.sent += counts.delivered
            figures[platform] = entry
        }
        for (channel, counts) in try await store.receiptCounts(messageID: messageID) {
            let platform = JPushPlatform(channel: channel)
            var entry = figures[platform] ?? PlatformFigures()
            entry.received += counts.arrived
            entry.clicked += counts.clicked
            figures[platform] = entry
        }
        return figures
    }

    /// `GET /v3/received?msg_ids=` and `/v3/received/detail?msg_ids=`: one entry per known msg_id.
    func received(_ call: Call, detailed: Bool) async throws -> Response {
        var entries: [JSONValue] = []
        for id in try Self.messageIDs(call) {
            guard let figures = try await figures(messageID: id, appID: call.app.id) else { continue }
            func value(_ platform: JPushPlatform, _ pick: (PlatformFigures) -> Int) -> JSONValue {
                guard let entry = figures[platform], entry.hasDeliveries else { return .null }
                return .int(Int64(pick(entry)))
            }
            var entry: [String: JSONValue] = [
                "msg_id": .string(String(id)),
                "ios_apns_sent": value(.ios, \.sent),
                "ios_apns_received": value(.ios, \.received),
                "ios_msg_received": .null,
                "wp_mpns_sent": .null,
            ]
            if detailed {
                entry["jpush_received"] = .null
                entry["android_pns_sent"] = value(.android, \.sent)
                entry["android_pns_received"] = value(.android, \.received)
                entry["hmos_hmpns_sent"] = value(.hmos, \.sent)
                entry["hmos_hmpns_received"] = value(.hmos, \.received)
                entry["quickapp_jpush_received"] = .null
                entry["quickapp_pns_sent"] = .null
            } else {
                entry["android_received"] = value(.android, \.received)
            }
            entries.append(.object(entry))
        }
        return JPushReply.ok(.array(entries))
    }

    /// `GET /v3/messages?msg_ids=`: per platform, targets, sent, received and clicks.
    func messages(_ call: Call) async throws -> Response {
        var entries: [JSONValue] = []
        for id in try Self.messageIDs(call) {
            guard let figures = try await figures(messageID: id, appID: call.app.id) else { continue }
            var entry: [String: JSONValue] = ["msg_id": .string(String(id))]
            if let android = figures[.android], android.hasDeliveries {
                entry["android"] = [
                    "target": .int(Int64(android.targets)), "received": .int(Int64(android.received)),
                    "online_push": .null, "click": .int(Int64(android.clicked)), "msg_click": .null,
                ]
            }
            if let ios = figures[.ios], ios.hasDeliveries {
                entry["ios"] = [
                    "apns_target": .int(Int64(ios.targets)), "apns_sent": .int(Int64(ios.sent)),
                    "apns_received": .int(Int64(ios.received)), "click": .int(Int64(ios.clicked)), "target": .null,
                    "received": .null, "msg_click": .null,
                ]
            }
            if let hmos = figures[.hmos], hmos.hasDeliveries {
                entry["hmos"] = [
                    "target": .int(Int64(hmos.targets)), "sent": .int(Int64(hmos.sent)),
                    "received": .int(Int64(hmos.received)), "click": .int(Int64(hmos.clicked)),
                ]
            }
            entries.append(.object(entry))
        }
        return JPushReply.ok(.array(entries))
    }

    /// `POST /v3/status/message` `{"msg_id", "registration_ids": [...]}` (at most 1000): per
    /// id, JPush's status: 0 arrived, 1 not arrived (yet), 2 not a registration id of this
    /// app, 3 of this app but not a target of the message.
    func messageStatus(_ call: Call) async throws -> Response {
        let body = try Self.object(call)
        let msgID: Int64
        switch body["msg_id"] {
        case .int(let id)?: msgID = id
        case .string(let text)?:
            guard let id = Int64(text) else { throw JPushError.reportInvalid("msg_id") }
            msgID = id
        default: throw JPushError.reportMissing("msg_id")
        }
        guard case .array(let items)? = body["registration_ids"] else {
            throw JPushError.reportMissing("registration_ids")
        }
        let ids = items.compactMap(\.stringValue)
        guard !ids.isEmpty, ids.count == items.count, ids.count <= 1000 else {
            throw JPushError.reportInvalid("registration_ids must be 1–1000 strings")
        }
        guard let record = try await store.message(id: msgID), record.appID == call.app.id else {
            throw JPushError.reportInvalid("msg_id \(msgID) is not a message of this app")
        }
        let registrations = try await jpushStore.devices(appID: call.app.id, registrationIDs: ids)
        let devices = try await store.devices(appID: call.app.id, ids: registrations.map(\.deviceID))
        let tokenOf = Dictionary(devices.map { ($0.id, $0.token) }, uniquingKeysWith: { a, _ in a })
        let tokens = registrations.compactMap { tokenOf[$0.deviceID] }
        let targeted = try await targets(record, among: registrations.map(\.deviceID), appID: call.app.id)
        let receipts = try await store.receiptStates(messageID: msgID, tokens: tokens)
        var answer: [String: JSONValue] = [:]
        for id in ids { answer[id] = ["status": 2] }
        for registration in registrations {
            guard let token = tokenOf[registration.deviceID] else { continue }
            let status: Int64
            if receipts[token]?.arrivedAt != nil {
                status = 0
            } else if targeted.contains(registration.deviceID) {
                status = 1
            } else {
                status = 3
            }
            answer[registration.registrationID] = ["status": .int(status)]
        }
        return JPushReply.ok(answer)
    }
}

extension JPushProvider {
    /// Which of these devices the message's audience names (its delivery rows are not all
    /// kept: a delivered push to a large audience is counted, not stored per device).
    func targets(_ record: MessageRecord, among deviceIDs: [Int64], appID: Int64) async throws -> Set<Int64> {
        switch record.audience {
        case .all: return Set(deviceIDs)
        case .devices(let ids): return Set(deviceIDs).intersection(ids)
        case .tag(let tag):
            let tags = try await jpushStore.tags(appID: appID, deviceIDs: deviceIDs)
            return Set(deviceIDs.filter { tags[$0]?.contains(tag) == true })
        case .tagSelection(let selection):
            let tags = try await jpushStore.tags(appID: appID, deviceIDs: deviceIDs)
            return Set(deviceIDs.filter { selection.matches(tags[$0] ?? []) })
        default: return []
        }
    }
}
