import Foundation

/// A message with the gateway's live view of its progress.
public struct MessageStatus: Sendable {
    public var record: MessageRecord
    /// Persisted counts with what is in flight or not yet flushed laid over them.
    public var counts: DeliveryCounts
    public var failures: [String: Int]
    /// Skip counts by reason, live like `failures`.
    public var skips: [String: Int]

    /// What a message whose audience is sent still waits for (retries, quotas, holds); read only
    /// once it is `completed` in the store with rows pending.
    public var pending: [PendingDeliveries]

    public init(
        record: MessageRecord, counts: DeliveryCounts, failures: [String: Int], skips: [String: Int]? = nil,
        pending: [PendingDeliveries] = []
    ) {
        self.record = record
        self.counts = counts
        self.failures = failures
        self.skips = skips ?? record.skips
        self.pending = pending
    }

    /// Deliveries without a final outcome: queued (retries, quotas), sending or held.
    public var unfinished: Int { counts.queued + counts.sending + counts.held }

    /// The state callers see. The store's `completed` means every device was tried; the message
    /// is completed only once nothing is queued, sending or held. Until then it is `held` (only
    /// held rows remain: a missing or refused credential) or `waiting` (retries or a daily quota
    /// are due later; `pending` says until when).
    public var state: String {
        guard record.state == .completed, unfinished > 0 else { return record.state.rawValue }
        return counts.queued + counts.sending == 0 ? "held" : "waiting"
    }

    /// When the message completed; nil while anything is unfinished.
    public var completedAt: Date? {
        unfinished > 0 ? nil : record.completedAt
    }
}

/// What a provider hands its pushes to. `submit` returns only once the message is durable.
///
/// A request that pushes calls `admit(appID:)` once before anything of it is written (before
/// its first `submit`, and before a badge is counted or a message kept for it), so a refused
/// request leaves nothing behind and a request of several messages is never half accepted.
public protocol PushGateway: Sendable {
    /// Throws `BacklogFull` when the app has more messages accepted and not yet sent through
    /// than the gateway's bound (`delivery.max_backlog_per_app`); each API answers it in its
    /// dialect with `Retry-After`. Cheap: the backlog is a count recounted at most every second.
    func admit(appID: Int64) async throws
    /// Refuses, without storing anything, what `submit` would refuse of this content: what a
    /// transport's service could never carry (a payload over its push type's limit: a
    /// `PayloadError`). For a request that checks each message before it submits any.
    func check(_ content: PushContent, options: PushOptions) throws
    /// Checks the content as `check` does, commits the message and schedules it. When this
    /// returns the message survives a crash.
    func submit(_ job: PushJob) async throws -> MessageRecord
    func status(messageID: Int64) async throws -> MessageStatus?
    /// Cancels a message that has not started (a scheduled push). `false` if it already started.
    func cancel(messageID: Int64) async throws -> Bool
}

extension PushGateway {
    /// A gateway without a bound admits everything.
    public func admit(appID: Int64) async throws {}
}

/// A push refused before anything of it was written: its app's backlog — messages accepted and
/// not yet sent through (queued, or sending) — is at the gateway's bound. The client should
/// try again after `retryAfterSeconds`; nothing was accepted.
public struct BacklogFull: Error, Sendable, Hashable, CustomStringConvertible {
    public var appID: Int64
    /// The backlog when it was last counted (with what this node accepted since).
    public var backlog: Int
    public var bound: Int
    public var retryAfterSeconds: Int

    public init(appID: Int64, backlog: Int, bound: Int, retryAfterSeconds: Int) {
        self.appID = appID
        self.backlog = backlog
        self.bound = bound
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// What the client is told, in a sentence.
    public var explanation: String {
        "too many messages of this app are waiting to be sent (\(backlog), at most \(bound)); "
            + "nothing was accepted, retry in \(retryAfterSeconds) s"
    }

    public var description: String { "backlog_full: app \(appID), \(backlog) of \(bound)" }
}
