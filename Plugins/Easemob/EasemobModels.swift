import Foundation
import TuisongCore

/// An Easemob user (the profile part; devices, app state and badge are the core account's).
struct EasemobUser: Sendable, Hashable {
    var username: String
    var uuid: String
    var passwordHash: String?
    var nickname: String?
    var displayStyle: Int?
    var noDisturbing: Bool?
    var noDisturbingStart: Int?
    var noDisturbingEnd: Int?
    var language: String?
    /// Epoch milliseconds.
    var createdAt: Int64
    var modifiedAt: Int64

    /// The user as Easemob's `entities[]` shows it (unset push fields left out, as Easemob does).
    var entity: JSONValue {
        var object: [String: JSONValue] = [
            "uuid": .string(uuid), "type": "user", "created": .int(createdAt), "modified": .int(modifiedAt),
            "username": .string(username), "activated": true,
        ]
        if let nickname { object["nickname"] = .string(nickname) }
        if let displayStyle { object["notification_display_style"] = .int(Int64(displayStyle)) }
        if let noDisturbing { object["notification_no_disturbing"] = .bool(noDisturbing) }
        if let noDisturbingStart { object["notification_no_disturbing_start"] = .int(Int64(noDisturbingStart)) }
        if let noDisturbingEnd { object["notification_no_disturbing_end"] = .int(Int64(noDisturbingEnd)) }
        return .object(object)
    }

    var legacyDoNotDisturb: EasemobLegacyDoNotDisturb? {
        guard let noDisturbing else { return nil }
        return EasemobLegacyDoNotDisturb(enabled: noDisturbing, startHour: noDisturbingStart, endHour: noDisturbingEnd)
    }
}

/// A user to register.
struct EasemobNewUser: Sendable, Hashable {
    var username: String
    var passwordHash: String?
    var nickname: String?
}

/// The changes of `PUT users/{u}`; nil = unchanged.
struct EasemobUserChanges: Sendable, Hashable {
    var nickname: String?
    var displayStyle: Int?
    var noDisturbing: Bool?
    var noDisturbingStart: Int?
    var noDisturbingEnd: Int?

    var isEmpty: Bool {
        nickname == nil && displayStyle == nil && noDisturbing == nil && noDisturbingStart == nil
            && noDisturbingEnd == nil
    }
}

/// A chat group.
struct EasemobGroup: Sendable, Hashable {
    var groupID: String
    var name: String
    var description: String
    var isPublic: Bool
    var membersOnly: Bool
    var allowInvites: Bool
    var maxUsers: Int
    var owner: String
    var custom: String
    var createdAt: Int64
}

/// The changes of `PUT chatgroups/{id}`; nil = unchanged.
struct EasemobGroupChanges: Sendable, Hashable {
    var name: String?
    var description: String?
    var isPublic: Bool?
    var membersOnly: Bool?
    var allowInvites: Bool?
    var maxUsers: Int?
    var custom: String?

    /// The fields Easemob answers `true` for.
    var changedKeys: [String] {
        var keys: [String] = []
        if name != nil { keys.append("groupname") }
        if description != nil { keys.append("description") }
        if isPublic != nil { keys.append("public") }
        if membersOnly != nil { keys.append("membersonly") }
        if allowInvites != nil { keys.append("allowinvites") }
        if maxUsers != nil { keys.append("maxusers") }
        if custom != nil { keys.append("custom") }
        return keys
    }
}

/// One device binding of `PUT users/{u}/push/binding`.
struct EasemobBinding: Sendable, Hashable {
    var deviceID: String
    var deviceToken: String
    var notifierName: String

    var entity: JSONValue {
        ["device_id": .string(deviceID), "device_token": .string(deviceToken), "notifier_name": .string(notifierName)]
    }
}

/// Everything the delivery policy reads for one page of receivers of one message, in one read.
/// What `EasemobStore.receiverData(appID:pages:)` reads for one page: its receivers, and its
/// message's sender and conversation.
struct EasemobReceiverQuery: Sendable {
    var usernames: [String]
    var sender: String
    var conversation: (chatType: String, key: String)
}

struct EasemobReceiverData: Sendable, Equatable {
    var users: [String: EasemobUser]
    var appLevel: [String: EasemobNotificationSetting]
    var conversation: [String: EasemobNotificationSetting]
}
