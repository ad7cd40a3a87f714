import Foundation

/// A part of a message's audience that one node sends: the audience positions after `after`
/// up to and including `through` (nil: to the end). SQLite has one slice per message (the
/// message itself, `id` 0, no lease); PostgreSQL cuts a message into slices that nodes claim
/// under a lease.
public struct WorkSlice: Sendable, Hashable {
    /// The slice's number within its message (0 for SQLite's whole-message slice).
    public var id: Int64
    /// Where sending resumes: every position up to here has a committed outcome.
    public var after: Int64
    /// The slice's last position, inclusive; nil for the open end of the audience.
    public var through: Int64?
    /// The claim's number (the slice's `attempts` when it was claimed): a flush is accepted
    /// only while the slice is still held under this number (fencing).
    public var fence: Int64
    /// When the lease ends unless renewed (nil: no lease, SQLite's single dispatcher).
    public var leaseUntil: Date?

    public init(id: Int64, after: Int64, through: Int64?, fence: Int64, leaseUntil: Date?) {
        self.id = id
        self.after = after
        self.through = through
        self.fence = fence
        self.leaseUntil = leaseUntil
    }

    /// Whether this is the message's only slice (its first, with no end): a message sent
    /// whole, as every small message is, rather than a part of a fan-out cut into slices.
    public var isWholeMessage: Bool { id == 0 && through == nil }

    /// SQLite's slice: the whole message after its cursor, no lease.
    public static func whole(after cursor: Int64) -> WorkSlice {
        WorkSlice(id: 0, after: cursor, through: nil, fence: 0, leaseUntil: nil)
    }

    /// Whether `position` belongs to the slice (positions at or below `after` are done).
    public func contains(_ position: Int64) -> Bool {
        position > after && (through.map { position <= $0 } ?? true)
    }
}

/// Work a node took from the queue: a message and the slice of it to send.
public struct WorkClaim: Sendable {
    public var record: MessageRecord
    public var slice: WorkSlice

    public init(record: MessageRecord, slice: WorkSlice) {
        self.record = record
        self.slice = slice
    }
}

/// The dispatcher's queue. A node claims slices of sending messages (and due retries) under a
/// lease, renews the leases while it sends, and gives back what it did not finish when it
/// stops. Every flush of a slice (`MessageProgress.slice`) is fenced: the store refuses it
/// with `StoreError.Code.leaseLost` once the slice's lease ended or another node claimed it.
public protocol WorkQueue: Sendable {
    /// Messages that came due are cut into slices, then up to `limit` slices are claimed:
    /// free ones, and those whose lease ended (a dead node's). Slices of `running` messages
    /// this node already sends are not returned again.
    ///
    /// Two kinds of claim: a message sent whole (one slice: every small message, a chat line)
    /// and a slice of a message cut into several (a large fan-out several nodes share). Up to
    /// `limit` of the first are claimed, and of the second up to `limit` whose lease ended
    /// (taken over before anything new, so a node busy with its own fan-out still takes over a
    /// dead node's work at once) and up to `sliceLimit` fresh ones (so one node does not take
    /// every slice of a fan-out the others could share).
    func claimWork(now: Date, limit: Int, sliceLimit: Int, running: Set<MessageSliceKey>) async throws
        -> [WorkClaim]
    /// Renews the leases of the slices this node sends and records its heartbeat; returns the
    /// slices still held and when their leases now end. A slice missing from the answer was
    /// lost (taken over after its lease ended): its run stops sending.
    func renewLeases(_ slices: [MessageSliceKey: Int64], now: Date) async throws -> (
        held: Set<MessageSliceKey>, until: Date?
    )
    /// Gives a slice back unfinished (the node is stopping): another node may claim it at once.
    func releaseSlice(_ key: MessageSliceKey, fence: Int64) async throws
    /// How many nodes sent a heartbeat within the lease (1 for SQLite): each takes its share of
    /// a limit that is meant for the whole gateway.
    func liveNodeCount() async throws -> Int
    /// The app's messages accepted and not yet sent through (`queued` or `sending`), counted up
    /// to `upTo` at most: admission's measure of an app's backlog (`PushGateway.admit`), read
    /// from an index of those messages by app, so it costs what the app has pending, never its
    /// history. On PostgreSQL it is every node's backlog of the app.
    func backlog(appID: Int64, upTo: Int) async throws -> Int
    /// The least time between the starts of two claims while claims find work but not a full
    /// batch (the engine waits out the rest before claiming again): each claim then takes what
    /// came meanwhile, and the statements after it go in batches as large. A claim after a
    /// pass that found nothing, or after a full batch, is not held back. Zero (the default):
    /// claims follow one another as soon as there is work.
    var claimPace: Duration { get }
    /// The dispatcher stopped claiming (its node is stopping): work the store claimed for it
    /// ahead of a claim (PostgreSQL's messages claimed as they are stored) goes back, so
    /// another node may take it at once.
    func dispatcherStopped() async
}

extension WorkQueue {
    public var claimPace: Duration { .zero }
    public func dispatcherStopped() async {}
}

extension WorkQueue {
    /// Claims with one limit for both kinds of claim.
    public func claimWork(now: Date, limit: Int, running: Set<MessageSliceKey>) async throws -> [WorkClaim] {
        try await claimWork(now: now, limit: limit, sliceLimit: limit, running: running)
    }
}

/// A slice of a message, as runs and leases name it.
public struct MessageSliceKey: Sendable, Hashable, CustomStringConvertible {
    public var messageID: Int64
    public var slice: Int64

    public init(messageID: Int64, slice: Int64) {
        self.messageID = messageID
        self.slice = slice
    }

    public var description: String { "\(messageID)/\(slice)" }
}

/// The whole store as the gateway and the CLI see it, whichever database holds it: SQLite
/// (a file path, the embedded default) or PostgreSQL (several nodes on one database).
public protocol GatewayStore: Store, SettingsStore, ChannelCredentialStore, TemplateStore,
    AccountStore, ConsoleStore, MessageStore, WorkQueue, StoreChangeFeed, ConsoleSessionStore,
    ProviderTokenStore, ReceiptStore, ReceiptSettingsStore, WebhookStore
{
    /// `sqlite` or `postgresql`, for logs and metrics.
    var backendName: String { get }
    /// Where the database is, without credentials (a path, or `postgresql://host/db`).
    var location: String { get }
    /// The database as plugins see it (`ProviderContext.database`).
    var sharedDatabase: any SharedDatabase { get }
    /// Registers many devices in one transaction (`tuisong device import`): all or none, each
    /// as `registerDevice` would. Returns how many were created (the rest were updated).
    func registerDevices(appID: Int64, _ registrations: [DeviceRegistration]) async throws -> Int
    /// Retry rows waiting (`queued`) and rows held for want of a working credential.
    func deliveryBacklog() async throws -> (retryQueued: Int, held: Int)
    /// Refreshes the query planner's statistics of the device tables, after a bulk import.
    func refreshStatistics() async throws
    /// The migrations applied to the database, in order.
    func appliedMigrations() async throws -> [String]
    /// Closes every connection. Later calls do nothing; later store calls fail `unavailable`.
    func close() throws
}

extension GatewayStore {
    /// The last migration applied (nil for an empty database).
    public func schemaVersion() async throws -> String? {
        try await appliedMigrations().last
    }
}
