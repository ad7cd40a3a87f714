import Foundation

/// How the console looks for devices of one app.
public enum DeviceQuery: Sendable, Hashable {
    /// Every device, by id.
    case all
    /// Devices whose token starts with these hex digits (lower-cased), by token.
    case tokenPrefix(String)
    /// Devices whose `user` or IM account is exactly this, by id.
    case user(String)
    /// Devices carrying the tag, by id.
    case tag(TagName)
}

/// A tag with how many devices carry it.
public struct TagUsage: Sendable, Hashable {
    public var name: String
    public var devices: Int

    public init(name: String, devices: Int) {
        self.name = name
        self.devices = devices
    }
}

/// The few columns of a message the delivery monitor needs, without its payload or audience.
public struct MessageActivity: Sendable, Hashable {
    public var id: Int64
    public var appID: Int64
    public var state: MessageState
    public var createdAt: Date
    public var startedAt: Date?
    public var completedAt: Date?
    public var total: Int?
    public var counts: DeliveryCounts

    public init(
        id: Int64, appID: Int64, state: MessageState, createdAt: Date, startedAt: Date?, completedAt: Date?,
        total: Int?, counts: DeliveryCounts
    ) {
        self.id = id
        self.appID = appID
        self.state = state
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.completedAt = completedAt
        self.total = total
        self.counts = counts
    }
}

/// Read-only queries behind the admin console: searching devices, listing tags, a device's
/// delivery rows and recent delivery activity. Every listing is bounded.
public protocol ConsoleStore: Sendable {
    /// One page of the app's devices matching `query`. `cursor` is one this method returned.
    /// Throws `StoreError.invalidCursor` for any other.
    func searchDevices(appID: Int64, query: DeviceQuery, cursor: String?, limit: Int) async throws -> Page<Device>
    /// How many devices the app has (invalidated ones included).
    func deviceCount(appID: Int64) async throws -> Int
    /// The app's tags with their device counts, by name, at most `limit`.
    func tagUsage(appID: Int64, limit: Int) async throws -> [TagUsage]
    /// The newest delivery rows of one device (rows exist for failed, retried, held and
    /// skipped deliveries, not for first-time successes), newest first.
    func deliveries(deviceID: Int64, limit: Int) async throws -> [DeliveryRecord]
    /// Messages that were sending at or after `since`: every message still `sending`, and
    /// those completed since then, among the newest `scanLimit` messages.
    func messageActivity(since: Date, scanLimit: Int) async throws -> [MessageActivity]
    /// Failure counts by reason over the messages created at or after `since`, among the
    /// newest `scanLimit` messages.
    func failureReasons(since: Date, scanLimit: Int) async throws -> [String: Int]
    /// Skip counts by reason (a policy's `foreground`, `dnd`…) over the same messages.
    func skipReasons(since: Date, scanLimit: Int) async throws -> [String: Int]
    /// Failed deliveries by push service and reason over the same messages, most first: one
    /// service's `Unregistered` and another's `UNREGISTERED` are a row each.
    func failureReasonsByChannel(since: Date, scanLimit: Int) async throws -> [ChannelReasonCount]
}

/// How many deliveries of one push service ended with one reason (`failureReasonsByChannel`).
public struct ChannelReasonCount: Sendable, Hashable {
    public var channel: PushChannel
    public var reason: String
    public var count: Int

    public init(channel: PushChannel, reason: String, count: Int) {
        self.channel = channel
        self.reason = reason
        self.count = count
    }
}
