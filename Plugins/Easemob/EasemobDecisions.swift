import Foundation
import TuisongCore

/// Seed 004 per receiver, for one page of devices of one message: either the receiver's own
/// payload (badge, display style, language, template, `em_apns_ext` on APNs devices) or a skip
/// reason. An Android device of a receiver is decided exactly as the receiver's iPhone. Pure:
/// the delivery policy reads what it needs (one store read per page) and calls this.
enum EasemobDecisions {
    /// - Parameter bindings: per device (parallel to `accounts`), its Easemob `device_id` and
    ///   `notifier_name` (the console's device columns), read only when the message has an
    ///   `em_push_filter`; a device without one is bound without them.
    static func decide(
        accounts: [String?], channels: [PushChannel]? = nil, bindings: [[String: String]?]? = nil,
        message: EasemobMessage, badges: [String: Int], data: EasemobReceiverData, template: PushTemplate?, now: Date,
        timeZone: TimeZone
    ) -> [DeliveryDecision] {
        let rules = message.rules
        let filter = EasemobPushFilter(ext: message.ext)
        let senderNickname = data.users[message.from]?.nickname
        return accounts.enumerated().map { index, account in
            let channel = channels?[index] ?? .apns
            // A device without an account cannot be in an `.accounts` audience; refuse rather than guess.
            guard let username = account else { return .skip(reason: EasemobSkipReason.ignored.rawValue) }
            let user = data.users[username]
            let receiver = EasemobReceiverRules(
                username: username, appLevel: data.appLevel[username], conversation: data.conversation[username],
                legacy: user?.legacyDoNotDisturb)
            if let reason = EasemobPushRules.skipReason(
                receiver: receiver, message: rules, now: now, timeZone: timeZone)
            {
                return .skip(reason: reason.rawValue)
            }
            if let filter {
                let binding = bindings?[index] ?? nil
                if !filter.admits(deviceID: binding?["device_id"], notifierName: binding?["notifier_name"]) {
                    return .skip(reason: EasemobSkipReason.pushFilter.rawValue)
                }
            }
            let display = EasemobReceiverDisplay(
                username: username, displayStyle: user?.displayStyle ?? 0, language: user?.language)
            let notification = EasemobPushContent.notification(
                message, receiver: display, senderNickname: senderNickname, template: template, badge: badges[username],
                channel: channel)
            return .sendContent(notification)
        }
    }

    /// The offline counts kept with the message when it was sent (`vendorContext.badges`).
    static func badges(_ context: JSONValue?) -> [String: Int] {
        var badges: [String: Int] = [:]
        for (name, value) in context?["badges"]?.objectValue ?? [:] {
            if let count = value.intValue { badges[name] = Int(count) }
        }
        return badges
    }
}

/// The APNs channel by the name its transport declares (a plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
}
