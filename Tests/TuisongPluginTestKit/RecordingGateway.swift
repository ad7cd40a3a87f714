import Foundation
import Synchronization
import TuisongAPNsTransport
import TuisongCore
import TuisongStore

/// A `PushGateway` that records every job and commits it to the real store the way the
/// delivery engine does (rendered, validated, `scheduled` when `sendAt` is ahead), but sends
/// nothing. `deliver` stands in for the dispatcher finishing a message.
public final class RecordingGateway: PushGateway {
    public let store: any GatewayStore
    public let clock: any TuisongCore.Clock
    private let recorded = Mutex<[PushJob]>([])

    public init(store: any GatewayStore, clock: any TuisongCore.Clock) {
        self.store = store
        self.clock = clock
    }

    /// Every job submitted, in order.
    public var jobs: [PushJob] { recorded.withLock { $0 } }

    /// What the gateway's transports refuse: its APNs transport, what APNs could not carry.
    public func check(_ content: PushContent, options: PushOptions) throws {
        _ = try APNsPayload.build(content, pushType: options.pushType)
    }

    public func submit(_ job: PushJob) async throws -> MessageRecord {
        try check(job.content, options: job.options)
        let state: MessageState = (job.sendAt.map { $0 > clock.now } ?? false) ? .scheduled : .queued
        let record = try await store.createMessage(job, state: state)
        recorded.withLock { $0.append(job) }
        return record
    }

    public func status(messageID: Int64) async throws -> MessageStatus? {
        guard let record = try await store.message(id: messageID) else { return nil }
        return MessageStatus(record: record, counts: record.counts, failures: record.failures)
    }

    public func cancel(messageID: Int64) async throws -> Bool {
        try await store.cancelScheduledMessage(id: messageID, at: clock.now)
    }

    /// Completes the message through the store's own progress API: `delivered` devices
    /// accepted, `failed` refused (as BadDeviceToken).
    public func deliver(messageID: Int64, delivered: Int, failed: Int = 0) async throws {
        _ = try await store.startMessage(id: messageID, total: delivered + failed, at: clock.now)
        var counts = DeliveryCounts()
        counts.delivered = delivered
        counts.failed = failed
        try await store.recordProgress(
            MessageProgress(
                messageID: messageID, cursor: Int64(delivered + failed), counts: counts,
                failures: failed > 0 ? ["BadDeviceToken": failed] : [:], finalState: .completed),
            at: clock.now)
    }
}
