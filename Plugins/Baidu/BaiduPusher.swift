import Foundation
import TuisongCore
import TuisongPlugin

/// A push accepted by one of Baidu's push methods, before it becomes gateway messages.
struct BaiduPush: Sendable {
    var app: App
    var audience: Audience
    /// One gateway message per element (Channel API 2.0 may send several at once), each with
    /// its `msg_key` (sent as `apns-collapse-id`: same key, the newer replaces the older).
    var messages: [(message: BaiduMessage, key: String?)]
    var messageType: BaiduMessageType
    /// `msg_expires` / `message_expires`: seconds after sending that APNs may keep trying.
    var expiresIn: Int
    var environment: PushEnvironment
    /// `send_time`: a scheduled (timer) push.
    var sendAt: Date?
    var labels: [String: String]
    /// The parameter the messages came from (`msg`, `messages`), for errors.
    var parameter: String
    /// Devices whose user keeps the message for `fetch_msg` (pushes to users and channels).
    var keepFor: [BaiduDevice] = []
    /// `device_type`: only devices of this type are pushed (`BaiduDeliveryPolicy`).
    var deviceType: BaiduDeviceType = .iOS
}

/// One message the gateway accepted.
struct BaiduSent: Sendable {
    var msgID: String
    var timerID: String?
    var record: MessageRecord
}

/// Turns a `BaiduPush` into `PushJob`s. Every message is rendered and checked before any is
/// submitted, so a bad second message leaves nothing of the first behind; kept messages are
/// written before their push and removed if the gateway refuses it.
struct BaiduPusher: Sendable {
    let baiduStore: BaiduStore
    let gateway: any PushGateway
    let clock: any TuisongCore.Clock

    func submit(_ push: BaiduPush) async throws -> [BaiduSent] {
        var jobs: [(job: PushJob, text: String)] = []
        for (index, entry) in push.messages.enumerated() {
            let parameter = push.messages.count > 1 ? "\(push.parameter)[\(index)]" : push.parameter
            let pushType = entry.message.content.suggestedPushType
            do {
                try gateway.check(entry.message.content, options: PushOptions(pushType: pushType))
            } catch let error as PayloadError {
                throw BaiduError.invalidParameter(parameter, Self.describe(error))
            }
            if let key = entry.key, key.utf8.count > 64 {
                throw BaiduError.invalidParameter("msg_keys", "must be at most 64 bytes each (an APNs collapse id)")
            }
            let start = push.sendAt ?? clock.now
            var labels = push.labels
            labels["msg_type"] = String(push.messageType.rawValue)
            labels[BaiduDeviceType.label] = String(push.deviceType.rawValue)
            // Explicit, because an absent apns-priority means 10, which APNs refuses for a
            // background push.
            let android = push.deviceType == .android
            let options = PushOptions(
                pushType: pushType, priority: pushType.defaultPriority,
                expiration: start.addingTimeInterval(TimeInterval(push.expiresIn)), collapseID: entry.key,
                // `deploy_status` is iOS's: an Android push reaches each device in its own
                // environment (a test phone registered sandbox through the native API too).
                environment: android ? nil : push.environment)
            var content = entry.message.content
            if android, let click = entry.message.androidClick { content.click = click }
            let job = PushJob(
                appID: push.app.id, vendor: BaiduKeys.vendor, audience: push.audience,
                content: content, options: options, sendAt: push.sendAt, labels: labels)
            jobs.append((job, entry.message.text))
        }

        // Once per request, before anything is kept or accepted: all of its messages or none.
        try await gateway.admit(appID: push.app.id)
        var sent: [BaiduSent] = []
        do {
            for (job, text) in jobs {
                sent.append(try await submit(job, text: text, push: push))
            }
        } catch {
            // Messages of this request already accepted: take back what has not started.
            for earlier in sent {
                _ = try? await gateway.cancel(messageID: earlier.record.id)
                try? await baiduStore.discardKeptMessages(appID: push.app.id, msgID: earlier.msgID)
            }
            throw error
        }
        return sent
    }

    private func submit(_ job: PushJob, text: String, push: BaiduPush) async throws -> BaiduSent {
        var attempt = 0
        while true {
            attempt += 1
            var job = job
            let msgID = BaiduIDs.random()
            let timerID = push.sendAt == nil ? nil : BaiduIDs.random()
            job.vendorMessageID = msgID
            if let timerID {
                job.labels["timer_id"] = timerID
                // timer/query_list shows the message as it was sent.
                job.labels["msg"] = text
            }
            let now = clock.now
            let kept = push.keepFor.compactMap { device -> BaiduKeptMessage? in
                guard let userID = device.userID else { return nil }
                let channelID = device.channelID
                return BaiduKeptMessage(
                    appID: push.app.id, msgID: msgID, userID: userID, channelID: channelID,
                    msgKey: job.options.collapseID,
                    message: text, messageType: push.messageType.rawValue,
                    expiresAt: job.options.expiration ?? now, createdAt: now)
            }
            if !kept.isEmpty { try await baiduStore.keepMessages(kept, now: now) }
            do {
                let record = try await gateway.submit(job)
                return BaiduSent(msgID: msgID, timerID: timerID, record: record)
            } catch {
                if !kept.isEmpty { try? await baiduStore.discardKeptMessages(appID: push.app.id, msgID: msgID) }
                if let payloadError = error as? PayloadError {
                    throw BaiduError.invalidParameter(push.parameter, payloadError.message)
                }
                // A random msg_id that another message already has: draw again.
                if let storeError = error as? StoreError, storeError.code == .conflict, attempt < 3 { continue }
                throw error
            }
        }
    }

    private static func describe(_ error: PayloadError) -> String {
        switch error.code {
        case .tooLarge:
            "makes an APNs payload of \(error.size ?? 0) bytes, over the \(error.limit ?? 4096)-byte limit"
        default:
            error.message
        }
    }
}
