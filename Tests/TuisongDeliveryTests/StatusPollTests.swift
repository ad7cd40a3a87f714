import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongStore

@testable import TuisongDelivery

/// A transport whose batches wait for the test to answer them, so a run can be looked at with
/// outcomes in flight, recorded but not flushed, and flushed.
final class GatedTransport: PushTransport {
    private struct Pending {
        var tokens: [String]
        var report: @Sendable ([SendReport]) -> Void
    }

    private let pending = Mutex<[Pending]>([])
    let handedOver = Atomic<Int>(0)

    func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async {
        pending.withLock { $0.append(Pending(tokens: batch.pushes.map(\.token), report: report)) }
        handedOver.add(batch.pushes.count, ordering: .relaxed)
    }

    /// Answers every batch handed over so far: `fail` tokens fail with `BadDeviceToken`'s
    /// neighbour `BadTopic`, the rest are delivered. Returns how many were answered.
    @discardableResult
    func answerAll(failing fail: @Sendable (String) -> Bool = { _ in false }) -> Int {
        let batches = pending.withLock { pending -> [Pending] in
            defer { pending.removeAll() }
            return pending
        }
        for batch in batches {
            batch.report(
                batch.tokens.enumerated().map { index, token in
                    SendReport(
                        index: index,
                        outcome: fail(token) ? .failed(.service("BadTopic")) : .delivered(serviceMessageID: nil))
                })
        }
        return batches.reduce(0) { $0 + $1.tokens.count }
    }
}

@Suite(.serialized) struct StatusPollTests {
    @Test func liveTalliesAtOrBelowTheCommittedCursorAreLeftOut() {
        func tally(_ position: Int64, delivered: Int, failed: [String: Int] = [:], skipped: [String: Int] = [:])
            -> MessageRun.Tally
        {
            var counts = DeliveryCounts()
            counts.delivered = delivered
            counts.failed = failed.values.reduce(0, +)
            counts.skipped = skipped.values.reduce(0, +)
            return MessageRun.Tally(lastPosition: position, counts: counts, failures: failed, skips: skipped)
        }
        // A flush of two pages (cursor 200) being committed, then two unflushed pages.
        let live = MessageRun.Live(
            tallies: [
                tally(200, delivered: 190, failed: ["BadTopic": 10]),
                tally(300, delivered: 99, skipped: ["foreground": 1]),
                tally(400, delivered: 40, failed: ["BadTopic": 2]),
            ], inFlight: 58)
        // The store read before the flush committed: everything is live.
        let before = live.uncommitted(after: 0)
        #expect(before.counts.delivered == 329)
        #expect(before.failures == ["BadTopic": 12])
        #expect(before.skips == ["foreground": 1])
        // After it committed (the store already counts cursor ≤ 200): only the pages.
        let after = live.uncommitted(after: 200)
        #expect(after.counts.delivered == 139)
        #expect(after.counts.failed == 2)
        #expect(after.failures == ["BadTopic": 2])
        // Everything up to 300 committed.
        let later = live.uncommitted(after: 300)
        #expect(later.counts.delivered == 40)
        #expect(later.skips.isEmpty)
        #expect(live.uncommitted(after: 400).counts.total == 0)
    }

    @Test(arguments: PluginStoreBackend.allCases) func aRunningMessageIsCountedOnceWhileItsPagesAreAnsweredAndFlushed(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(250)
        let sender = GatedTransport()
        let engine = f.engine(sender, pageSize: 50, workers: 1000, flushInterval: .milliseconds(10))
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("all-users")))
        // The window (3 pages) is handed over; nothing answered yet.
        var status = try await DeliveryWait.until(engine, record.id, timeout: .seconds(20)) { _ in
            sender.handedOver.load(ordering: .relaxed) == 150
        }
        #expect(status.counts.delivered == 0)
        // The audience is counted while the first pages are out, not before them.
        status = try await DeliveryWait.until(engine, record.id, timeout: .seconds(20)) { $0.record.total != nil }
        #expect(status.record.total == 250)
        #expect(status.record.state == .sending)
        #expect(status.counts.total == 250, "queued + sending = the expected total: \(status.counts)")
        // Answer in rounds, every 7th device failing; each poll must count each outcome once,
        // whether its page is recorded, being flushed or committed.
        var answered = 0
        var lastDelivered = 0
        let fails: @Sendable (String) -> Bool = { Int($0.suffix(4), radix: 16)! % 7 == 0 }
        while answered < 250 {
            answered += sender.answerAll(failing: fails)
            for _ in 0..<20 {
                let s = try #require(try await engine.status(messageID: record.id))
                #expect(s.counts.delivered + s.counts.failed <= answered, "\(s.counts) with \(answered) answered")
                #expect(s.counts.total <= 250, "\(s.counts)")
                #expect(s.counts.delivered >= lastDelivered, "delivered went back: \(s.counts)")
                #expect(s.failures["BadTopic", default: 0] == s.counts.failed)
                lastDelivered = s.counts.delivered
                // Paces the poller: 20 samples over about two flushes, not a wait for anything.
                try await Task.sleep(for: .milliseconds(2))
            }
            if answered < 250 {
                _ = try await DeliveryWait.until(engine, record.id, timeout: .seconds(20)) { _ in
                    sender.handedOver.load(ordering: .relaxed) > answered
                }
            }
        }
        let done = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        let failing = (1...250).filter { $0 % 7 == 0 }.count
        #expect(done.counts.delivered == 250 - failing)
        #expect(done.counts.failed == failing)
        #expect(done.failures == ["BadTopic": failing])
        #expect(done.record.total == 250)
        // The same as the store says once finished.
        let stored = try #require(try await f.store.message(id: record.id))
        #expect(stored.counts == done.counts)
        #expect(stored.failures == done.failures)
        #expect(stored.total == 250)
    }

    @Test(arguments: PluginStoreBackend.allCases) func theStatusOfAFinishedMessageMatchesTheStoredRecord(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(30)
        let engine = f.engine(
            ScriptedTransport { token, _ in
                Int(token.suffix(4), radix: 16)! % 3 == 0
                    ? .invalidate(.service("Unregistered"), since: nil) : .delivered(serviceMessageID: nil)
            })
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("all-users")))
        _ = try await f.waitUntilCompleted(engine, record.id)
        // Twice: the second answer comes from the cached message and a point read.
        for _ in 0..<2 {
            let status = try #require(try await engine.status(messageID: record.id))
            let stored = try #require(try await f.store.message(id: record.id))
            #expect(status.record.state == .completed)
            #expect(status.counts == stored.counts)
            #expect(status.failures == ["Unregistered": 10])
            #expect(status.record.total == 30)
            #expect(status.record.completedAt == stored.completedAt)
            #expect(status.record.audience == stored.audience)
            #expect(status.record.content == stored.content)
        }
        #expect(try await engine.status(messageID: record.id + 1000) == nil)
        await engine.stop()
    }
}
