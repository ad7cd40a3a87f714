import Foundation

/// An app-level tag as Baidu's tag APIs show it: Baidu's `tid`, the name, when it was created.
public struct BaiduTag: Sendable, Hashable {
    public var id: Int64
    public var name: String
    /// `nil` for tags created before the store recorded creation times.
    public var createdAt: Date?

    public init(id: Int64, name: String, createdAt: Date?) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
    }
}

/// A message sent to one Baidu user's channel and kept until it expires, so that Channel API
/// 2.0 `fetch_msg` / `fetch_msgcount` / `delete_msg` can list and drop it.
public struct BaiduKeptMessage: Sendable, Hashable {
    public var appID: Int64
    /// Baidu's `msg_id` (the message's `vendorMessageID`).
    public var msgID: String
    public var userID: String
    public var channelID: String
    public var msgKey: String?
    /// The message as the app server sent it (one element of `messages`).
    public var message: String
    /// Baidu `message_type`: 0 pass-through message, 1 notification.
    public var messageType: Int
    public var expiresAt: Date
    public var createdAt: Date

    public init(
        appID: Int64, msgID: String, userID: String, channelID: String, msgKey: String?,
        message: String, messageType: Int, expiresAt: Date, createdAt: Date
    ) {
        self.appID = appID
        self.msgID = msgID
        self.userID = userID
        self.channelID = channelID
        self.msgKey = msgKey
        self.message = message
        self.messageType = messageType
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }
}

/// What `topic/query_list` reports for one `topic_id`.
public struct BaiduTopicSummary: Sendable, Hashable {
    public var topicID: String
    public var firstPushAt: Date
    public var lastPushAt: Date
    /// Devices the topic's messages were addressed to (their audience totals).
    public var pushed: Int
    /// Devices APNs accepted them for.
    public var delivered: Int

    public init(topicID: String, firstPushAt: Date, lastPushAt: Date, pushed: Int, delivered: Int) {
        self.topicID = topicID
        self.firstPushAt = firstPushAt
        self.lastPushAt = lastPushAt
        self.pushed = pushed
        self.delivered = delivered
    }
}

/// One day of `report/statistic_device`. Days are counted in a fixed UTC offset (Baidu
/// reported in China time, UTC+8).
public struct BaiduDeviceDay: Sendable, Hashable {
    /// The first instant of the day.
    public var start: Date
    /// Devices bound for the first time that day.
    public var bound: Int
    /// Devices unbound that day.
    public var unbound: Int
    /// Bound devices whose last bind (registration) happened that day.
    public var active: Int
    /// Every bind ever recorded up to the end of the day.
    public var cumulative: Int
    /// Devices bound at the end of the day.
    public var total: Int

    public init(start: Date, bound: Int, unbound: Int, active: Int, cumulative: Int, total: Int) {
        self.start = start
        self.bound = bound
        self.unbound = unbound
        self.active = active
        self.cumulative = cumulative
        self.total = total
    }
}

/// What the Baidu provider needs from the store beyond devices, tags and messages: Baidu
/// bindings (a device token bound to a stable `user_id`/`channel_id`), app-level tags with
/// Baidu's listing semantics, messages kept per user for `fetch_msg`, and the lookups behind
/// Baidu's report, timer and topic APIs. Everything is scoped to one app.
public protocol BaiduStore: Sendable {
    /// The app whose `vendorSettings["baidu"]["apikey"]` is `apiKey` (unique across apps).
    func app(baiduAPIKey apiKey: String) async throws -> App?

    // MARK: Bindings

    /// Registers the token (as `DeviceStore.registerDevice` does) and binds it to
    /// `userID`/`channelID`, in one transaction. `created` is true when the device was not
    /// bound before. Throws `.conflict` when another device of the app holds `channelID`.
    func bindBaiduDevice(
        appID: Int64, token: DeviceToken, environment: APNsEnvironment, userID: String, channelID: String
    ) async throws -> (device: Device, created: Bool)
    /// Unbinds the channel: the device, its tag memberships and its kept messages are
    /// deleted, so nothing reaches it until it binds again. `false` if it was not bound.
    func unbindBaiduDevice(appID: Int64, channelID: String) async throws -> Bool
    func baiduDevice(appID: Int64, channelID: String) async throws -> Device?
    /// Devices bound to `userID`, by id.
    func baiduDevices(appID: Int64, userID: String) async throws -> [Device]
    /// The bound devices among `channelIDs` (any number; unknown ones are left out).
    func baiduDevices(appID: Int64, channelIDs: [String]) async throws -> [Device]
    /// Bound devices, optionally of one user and/or one channel, by id, `start` rows skipped.
    func baiduBindings(appID: Int64, userID: String?, channelID: String?, start: Int, limit: Int) async throws
        -> (total: Int, devices: [Device])

    // MARK: Tags

    func baiduTag(appID: Int64, name: String) async throws -> BaiduTag?
    /// Tags of the app by id (only `name` when given), `start` rows skipped.
    func baiduTags(appID: Int64, name: String?, start: Int, limit: Int) async throws -> (total: Int, tags: [BaiduTag])
    /// Creates the tag; `created` is false when it already existed.
    func createBaiduTag(appID: Int64, name: String) async throws -> (tag: BaiduTag, created: Bool)
    /// Deletes the tag and every device's membership. `false` when there was no such tag.
    func deleteBaiduTag(appID: Int64, name: String) async throws -> Bool
    /// Adds the devices to the tag, creating the tag if needed; returns the ids that were
    /// not members before.
    func addBaiduTag(appID: Int64, name: String, deviceIDs: [Int64]) async throws -> (tag: BaiduTag, added: Set<Int64>)
    /// Removes the devices from the tag; returns the ids that were members.
    func removeBaiduTag(appID: Int64, name: String, deviceIDs: [Int64]) async throws -> Set<Int64>
    /// Devices carrying the tag.
    func baiduTagDeviceCount(appID: Int64, name: String) async throws -> Int
    /// The tags any of `deviceIDs` carries, by name.
    func baiduTags(appID: Int64, deviceIDs: [Int64]) async throws -> [BaiduTag]

    // MARK: Kept messages (Channel API 2.0 fetch_msg)

    /// Stores the rows (and drops the app's rows that expired before `now`).
    func keepBaiduMessages(_ messages: [BaiduKeptMessage], now: Date) async throws
    /// Unexpired kept messages of the user (and channel), oldest first, `start` rows skipped.
    func baiduKeptMessages(
        appID: Int64, userID: String, channelID: String?, now: Date, start: Int, limit: Int
    ) async throws -> (total: Int, messages: [BaiduKeptMessage])
    /// Deletes the user's kept messages with these ids; returns the ids that were deleted.
    func deleteBaiduKeptMessages(appID: Int64, userID: String, channelID: String?, msgIDs: [String]) async throws
        -> [String]
    /// Drops every kept row of one message (its push was refused after they were written).
    func discardBaiduKeptMessages(appID: Int64, msgID: String) async throws

    // MARK: Messages, timers, topics, statistics

    /// Baidu messages of the app with these `msg_id`s, in the order asked (unknown ones left out).
    func baiduMessages(appID: Int64, msgIDs: [String]) async throws -> [MessageRecord]
    /// Scheduled Baidu messages still waiting (one `timer_id` when given), by send time.
    func baiduTimers(appID: Int64, timerID: String?, start: Int, limit: Int) async throws
        -> (total: Int, messages: [MessageRecord])
    /// The message behind a `timer_id`, whatever its state.
    func baiduTimerMessage(appID: Int64, timerID: String) async throws -> MessageRecord?
    /// Baidu messages whose label `label` is `value` and that have started sending (or
    /// completed), sent within `from...to` when given, newest first.
    func baiduSentMessages(
        appID: Int64, label: String, value: String, from: Date?, to: Date?, start: Int, limit: Int
    ) async throws -> [MessageRecord]
    /// Topics (`labels["topic_id"]`) of the app's Baidu messages, by first use.
    func baiduTopics(appID: Int64, start: Int, limit: Int) async throws -> (total: Int, topics: [BaiduTopicSummary])
    /// Delivered counts of a topic's messages per day since `since`, keyed by the day's first
    /// instant in the fixed UTC offset `utcOffset` (seconds).
    func baiduTopicDeliveries(appID: Int64, topicID: String, since: Date, utcOffset: Int) async throws -> [Date: Int]
    /// Binding statistics for the `days` days ending with the one containing `now`.
    func baiduDeviceDays(appID: Int64, now: Date, days: Int, utcOffset: Int) async throws -> [BaiduDeviceDay]
}
