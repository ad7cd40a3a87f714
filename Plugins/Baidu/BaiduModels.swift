import Foundation

/// An app-level tag as Baidu's tag APIs show it: Baidu's `tid`, the name, when it was created.
struct BaiduTag: Sendable, Hashable {
    var id: Int64
    var name: String
    /// `nil` for tags created before the store recorded creation times.
    var createdAt: Date?

}

/// A message sent to one Baidu user's channel and kept until it expires, so that Channel API
/// 2.0 `fetch_msg` / `fetch_msgcount` / `delete_msg` can list and drop it.
struct BaiduKeptMessage: Sendable, Hashable {
    var appID: Int64
    /// Baidu's `msg_id` (the message's `vendorMessageID`).
    var msgID: String
    var userID: String
    var channelID: String
    var msgKey: String?
    /// The message as the app server sent it (one element of `messages`).
    var message: String
    /// Baidu `message_type`: 0 pass-through message, 1 notification.
    var messageType: Int
    var expiresAt: Date
    var createdAt: Date

}

/// What `topic/query_list` reports for one `topic_id`.
struct BaiduTopicSummary: Sendable, Hashable {
    var topicID: String
    var firstPushAt: Date
    var lastPushAt: Date
    /// Devices the topic's messages were addressed to (their audience totals).
    var pushed: Int
    /// Devices APNs accepted them for.
    var delivered: Int

}

/// One day of `report/statistic_device`. Days are counted in a fixed UTC offset (Baidu
/// reported in China time, UTC+8).
struct BaiduDeviceDay: Sendable, Hashable {
    /// The first instant of the day.
    var start: Date
    /// Devices bound for the first time that day.
    var bound: Int
    /// Devices unbound that day.
    var unbound: Int
    /// Bound devices whose last bind (registration) happened that day.
    var active: Int
    /// Every bind ever recorded up to the end of the day.
    var cumulative: Int
    /// Devices bound at the end of the day.
    var total: Int

}
