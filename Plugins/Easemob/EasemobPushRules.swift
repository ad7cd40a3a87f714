import Foundation
import TuisongCore

/// A push mode (`type` of the notification settings): the app level's, or a conversation's.
enum EasemobPushMode: String, Sendable, Hashable, CaseIterable {
    /// The conversation follows the app level (an unset app level pushes everything).
    case `default` = "DEFAULT"
    /// Every offline message (seed 004's All).
    case all = "ALL"
    /// Only messages that mention the receiver (MentionOnly): `ext.em_at_list`.
    case at = "AT"
    /// Nothing.
    case none = "NONE"
}

/// A daily do-not-disturb interval `HH:MM-HH:MM`, in the app's time zone. The end is
/// exclusive; `start > end` wraps past midnight (`22:00-07:00`); `start == end` is all day
/// (Easemob's rule).
struct EasemobDailyInterval: Sendable, Hashable, CustomStringConvertible {
    /// Minutes after midnight, 0..<1440.
    var start: Int
    var end: Int

    init(start: Int, end: Int) {
        self.start = start
        self.end = end
    }

    /// `08:30-10:00`; nil when malformed or out of range.
    init?(parsing text: String) {
        let halves = text.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        guard halves.count == 2, let start = Self.minutes(halves[0]), let end = Self.minutes(halves[1]) else {
            return nil
        }
        self.init(start: start, end: end)
    }

    private static func minutes(_ text: Substring) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({ (1...2).contains($0.count) && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let hours = Int(parts[0]), let minutes = Int(parts[1]), hours < 24, minutes < 60
        else { return nil }
        return hours * 60 + minutes
    }

    /// Whether `minuteOfDay` (0..<1440) falls inside.
    func contains(minuteOfDay: Int) -> Bool {
        if start == end { return true }
        if start < end { return minuteOfDay >= start && minuteOfDay < end }
        return minuteOfDay >= start || minuteOfDay < end
    }

    var description: String {
        String(format: "%02d:%02d-%02d:%02d", start / 60, start % 60, end / 60, end % 60)
    }
}

/// One row of `PUT users/{u}/notification/{chattype}/{key}`: the app level (chattype `user`,
/// key = the user) or one conversation.
struct EasemobNotificationSetting: Sendable, Hashable {
    var mode: EasemobPushMode = .default
    /// Daily interval; only the app level's counts (Easemob: not for conversations).
    var ignoreInterval: EasemobDailyInterval?
    /// `ignoreDuration` turned into an instant when it was set: no pushes before it.
    var ignoreUntil: Date?

    static let maxIgnoreDurationMillis: Int64 = 604_800_000
}

/// The legacy do-not-disturb fields of `PUT users/{u}`: on/off and whole hours.
struct EasemobLegacyDoNotDisturb: Sendable, Hashable {
    var enabled: Bool
    /// 0–23; both nil = all day.
    var startHour: Int?
    var endHour: Int?

    /// The hours as a daily interval (all day when unset).
    var interval: EasemobDailyInterval {
        guard let startHour, let endHour else { return EasemobDailyInterval(start: 0, end: 0) }
        return EasemobDailyInterval(start: startHour * 60, end: endHour * 60)
    }
}

/// Who a message mentions (`ext.em_at_list`: a list of usernames, or `"all"`).
enum EasemobMentions: Sendable, Hashable {
    case nobody
    case everyone
    case users(Set<String>)

    init(ext: JSONValue?) {
        switch ext?["em_at_list"] {
        case .string(let text)? where text.lowercased() == "all":
            self = .everyone
        case .array(let elements)?:
            self = .users(Set(elements.compactMap { $0.stringValue.map { $0.lowercased() } }))
        case .string(let text)?:
            self = .users([text.lowercased()])
        default:
            self = .nobody
        }
    }

    func mentions(_ username: String) -> Bool {
        switch self {
        case .nobody: false
        case .everyone: true
        case .users(let names): names.contains(username)
        }
    }
}

/// Why a receiver gets no push (the skip reasons `/api/v1/messages` and the console show).
enum EasemobSkipReason: String, Sendable, Hashable, CaseIterable {
    /// The effective push mode is NONE.
    case modeNone = "mode_none"
    /// Mode AT and `em_at_list` does not name the receiver.
    case notMentioned = "not_mentioned"
    /// Inside a do-not-disturb duration or interval (and not `em_force_notification`).
    case dnd
    /// `ext.em_ignore_notification: true`, or a command message (never pushed).
    case ignored
    /// The receiver sent the message (a group's sender is a member too).
    case sender
    /// `ext.em_push_filter` leaves this device out (by its `device_id` or notifier name).
    case pushFilter = "push_filter"
}

/// `ext.em_push_filter`: which of a receiver's devices are pushed, by the Easemob `device_id`
/// and the notifier (certificate) name each was bound with. An empty or absent list filters
/// nothing; `accept_*` lists keep only the devices they name (a device bound without a
/// `device_id` or notifier name, e.g. through the native API, is named by none), `ignore_*`
/// lists drop the devices they name. A device must pass all four.
struct EasemobPushFilter: Sendable, Hashable {
    var acceptDeviceIDs: Set<String> = []
    var ignoreDeviceIDs: Set<String> = []
    var acceptNotifierNames: Set<String> = []
    var ignoreNotifierNames: Set<String> = []

    /// Nil when the message has no filter (or only empty lists).
    init?(ext: JSONValue?) {
        guard let filter = ext?["em_push_filter"], case .object = filter else { return nil }
        func names(_ key: String) -> Set<String> {
            switch filter[key] {
            case .array(let elements)?: Set(elements.compactMap(\.stringValue).filter { !$0.isEmpty })
            case .string(let text)? where !text.isEmpty: [text]
            default: []
            }
        }
        acceptDeviceIDs = names("accept_device_id")
        ignoreDeviceIDs = names("ignore_device_id")
        acceptNotifierNames = names("accept_notifier_name")
        ignoreNotifierNames = names("ignore_notifier_name")
        if acceptDeviceIDs.isEmpty && ignoreDeviceIDs.isEmpty && acceptNotifierNames.isEmpty
            && ignoreNotifierNames.isEmpty
        {
            return nil
        }
    }

    /// Whether a device bound with this Easemob `device_id` and notifier name (nil: bound
    /// without one) is pushed.
    func admits(deviceID: String?, notifierName: String?) -> Bool {
        if !acceptDeviceIDs.isEmpty && !(deviceID.map(acceptDeviceIDs.contains) ?? false) { return false }
        if let deviceID, ignoreDeviceIDs.contains(deviceID) { return false }
        if !acceptNotifierNames.isEmpty && !(notifierName.map(acceptNotifierNames.contains) ?? false) { return false }
        if let notifierName, ignoreNotifierNames.contains(notifierName) { return false }
        return true
    }
}

/// What the rules need to know about one receiver.
struct EasemobReceiverRules: Sendable, Hashable {
    var username: String
    var appLevel: EasemobNotificationSetting?
    /// The setting of the conversation the message belongs to (chattype `user` keyed by the
    /// sender, or `chatgroup` keyed by the group).
    var conversation: EasemobNotificationSetting?
    var legacy: EasemobLegacyDoNotDisturb?
}

/// What the rules need to know about one message.
struct EasemobMessageRules: Sendable, Hashable {
    var from: String
    var mentions: EasemobMentions
    /// `ext.em_force_notification: true`: push through do-not-disturb.
    var force: Bool
    /// `ext.em_ignore_notification: true`: never push.
    var ignore: Bool

    init(from: String, mentions: EasemobMentions, force: Bool, ignore: Bool) {
        self.from = from
        self.mentions = mentions
        self.force = force
        self.ignore = ignore
    }

    init(from: String, ext: JSONValue?, isCommand: Bool = false) {
        self.init(
            from: from, mentions: EasemobMentions(ext: ext), force: Self.flag(ext?["em_force_notification"]),
            ignore: isCommand || Self.flag(ext?["em_ignore_notification"]))
    }

    /// `true`, `"true"` or 1 (clients send all three).
    static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .bool(let flag)?: flag
        case .string(let text)?: text.lowercased() == "true"
        case .int(let number)?: number != 0
        default: false
        }
    }
}

/// Seed 004's push rules as one decision. Order: the sender never; `em_ignore_notification`
/// never; do-not-disturb (durations at app or conversation level, the app's daily interval,
/// the legacy hours) beats every mode unless `em_force_notification`; then the mode — the
/// conversation's own ALL/AT/NONE beats the app level's, DEFAULT or unset inherits it, an
/// unset app level is ALL.
enum EasemobPushRules {
    /// Nil = push; otherwise why not.
    static func skipReason(
        receiver: EasemobReceiverRules, message: EasemobMessageRules, now: Date, timeZone: TimeZone
    ) -> EasemobSkipReason? {
        if receiver.username == message.from { return .sender }
        if message.ignore { return .ignored }
        if !message.force && isDoNotDisturb(receiver, now: now, timeZone: timeZone) { return .dnd }
        switch effectiveMode(receiver) {
        case .none: return .modeNone
        case .at: return message.mentions.mentions(receiver.username) ? nil : .notMentioned
        case .all, .default: return nil
        }
    }

    static func effectiveMode(_ receiver: EasemobReceiverRules) -> EasemobPushMode {
        if let own = receiver.conversation?.mode, own != .default { return own }
        if let app = receiver.appLevel?.mode, app != .default { return app }
        return .all
    }

    static func isDoNotDisturb(_ receiver: EasemobReceiverRules, now: Date, timeZone: TimeZone) -> Bool {
        if let until = receiver.appLevel?.ignoreUntil, now < until { return true }
        if let until = receiver.conversation?.ignoreUntil, now < until { return true }
        let minute = minuteOfDay(now, in: timeZone)
        if let interval = receiver.appLevel?.ignoreInterval, interval.contains(minuteOfDay: minute) { return true }
        if let legacy = receiver.legacy, legacy.enabled, legacy.interval.contains(minuteOfDay: minute) { return true }
        return false
    }

    /// Minutes after local midnight of `date` in `timeZone`.
    static func minuteOfDay(_ date: Date, in timeZone: TimeZone) -> Int {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down)) + Int64(timeZone.secondsFromGMT(for: date))
        let secondOfDay = ((seconds % 86_400) + 86_400) % 86_400
        return Int(secondOfDay / 60)
    }
}
