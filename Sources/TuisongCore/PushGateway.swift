import Foundation

/// A message with the gateway's live view of its progress.
public struct MessageStatus: Sendable {
    public var record: MessageRecord
    /// Persisted counts with what is in flight or not yet flushed laid over them.
    public var counts: DeliveryCounts
    public var failures: [String: Int]
    /// Skip counts by reason, live like `failures`.
    public var skips: [String: Int]

    public init(record: MessageRecord, counts: DeliveryCounts, failures: [String: Int], skips: [String: Int]? = nil) {
        self.record = record
        self.counts = counts
        self.failures = failures
        self.skips = skips ?? record.skips
    }
}

/// What a provider hands its pushes to. `submit` returns only once the message is durable.
public protocol PushGateway: Sendable {
    /// Validates the content and renders it as APNs would (throws `PayloadError`), commits the message
    /// and schedules it. When this returns the message survives a crash.
    func submit(_ job: PushJob) async throws -> MessageRecord
    func status(messageID: Int64) async throws -> MessageStatus?
    /// Cancels a message that has not started (a scheduled push). `false` if it already started.
    func cancel(messageID: Int64) async throws -> Bool
}
