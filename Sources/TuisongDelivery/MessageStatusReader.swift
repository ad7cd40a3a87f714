import Foundation
import Synchronization
import TuisongCore

/// A message's status as API callers poll it: its changing parts from one point read of the
/// store (no JSON column decoded, no hop to a database queue), the rest from the running
/// message or a small cache (it never changes), and a running message's outcomes not yet
/// committed laid over the store's counts. Cheap enough to poll at 100 Hz during a push.
final class MessageStatusReader: Sendable {
    private let store: any MessageStore
    private let runs: RunningMessages
    /// Messages whose status was asked for, by id, for their parts that never change
    /// (audience, notification, options…); their counters are read from the store each time.
    private let heads = Mutex<[Int64: MessageRecord]>([:])
    private static let headLimit = 256

    init(store: any MessageStore, runs: RunningMessages) {
        self.store = store
        self.runs = runs
    }

    func status(messageID: Int64) async throws -> MessageStatus? {
        let running = runs.runs(messageID: messageID)
        // Before the store read: `uncommitted(after:)` then leaves out whatever the read saw.
        let live = running.map { ($0.slice.id, $0.liveCounts()) }
        guard let snapshot = try await store.messageProgress(id: messageID) else { return nil }
        guard let head = try await head(of: messageID, running: running.first) else { return nil }
        let record = head.updated(with: snapshot)
        var counts = record.counts
        var failures = record.failures
        var skips = record.skips
        for (slice, live) in live {
            // A message sent in slices has a cursor per slice; SQLite's one slice has the message's.
            let uncommitted = live.uncommitted(after: snapshot.sliceCursors[slice] ?? snapshot.cursor)
            for state in DeliveryState.allCases { counts[state] += uncommitted.counts[state] }
            counts.sending += live.inFlight
            for (reason, n) in uncommitted.failures { failures[reason, default: 0] += n }
            for (reason, n) in uncommitted.skips { skips[reason, default: 0] += n }
        }
        if let total = record.total, record.state == .queued || record.state == .sending || record.state == .scheduled {
            let accounted = counts.total
            if total > accounted { counts.queued += total - accounted }
        }
        var status = MessageStatus(record: record, counts: counts, failures: failures, skips: skips)
        // What a sent message still waits for: read only then (a poll of a message being sent
        // stays one point read).
        if record.state == .completed, status.unfinished > 0 {
            status.pending = try await store.pendingDeliveries(messageID: messageID)
        }
        return status
    }

    /// The message's parts that never change: from its run, the cache, or one full read.
    private func head(of messageID: Int64, running run: MessageRun?) async throws -> MessageRecord? {
        if let run { return run.record }
        if let cached = heads.withLock({ $0[messageID] }) { return cached }
        guard let full = try await store.message(id: messageID) else { return nil }
        heads.withLock { heads in
            if heads.count >= Self.headLimit { heads.removeAll(keepingCapacity: true) }
            heads[messageID] = full
        }
        return full
    }
}
