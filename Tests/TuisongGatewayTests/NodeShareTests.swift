import Foundation
import Logging
import Synchronization
import Testing
import TuisongCore
import TuisongPlugin
import TuisongPluginTestKit

@testable import TuisongGateway

/// Rate limits meant for the whole gateway, shared by its live nodes (`NodeShare`).
@Suite struct NodeShareTests {
    @Test func eachNodeTakesLimitOverLiveNodesNeverBelowOneRequest() {
        #expect(NodeShare.share(of: 100, liveNodes: 1) == 100)
        #expect(NodeShare.share(of: 100, liveNodes: 3) == 100.0 / 3)
        #expect(NodeShare.share(of: 100, liveNodes: 4) == 25)
        #expect(NodeShare.share(of: 100, liveNodes: 200) == 1, "never below one request")
        #expect(NodeShare.share(of: 0.5, liveNodes: 3) == 0.5, "nor above a limit smaller than one")
        #expect(NodeShare.share(of: 100, liveNodes: 0) == 100, "no live node counted: this one is")
        #expect(NodeShare.share(of: 100, liveNodes: -2) == 100)

        let share = NodeShare()
        #expect(share.liveNodes == 1)
        share.update(liveNodes: 5)
        #expect(share.share(of: 50) == 10)
        share.update(liveNodes: 0)
        #expect(share.liveNodes == 1)
    }

    @Test func theLimiterAllowsItsShareOfRateAndBurst() {
        let clock = ManualClock()
        let share = NodeShare(liveNodes: 4)
        let limiter = RateLimiter(rate: 100, burst: 200, clock: clock, share: share)
        #expect(limiter.effectiveLimits == (25, 50))
        #expect((0..<60).filter { _ in limiter.allow("app") }.count == 50, "a quarter of the burst")
        clock.advance(by: 1)
        #expect((0..<60).filter { _ in limiter.allow("app") }.count == 25, "a quarter of the rate")
        // A node leaves: the others' shares grow at once.
        share.update(liveNodes: 2)
        clock.advance(by: 1)
        #expect((0..<60).filter { _ in limiter.allow("app") }.count == 50)
        // Without a share the limiter is the whole gateway's, as before.
        let whole = RateLimiter(rate: 100, burst: 200, clock: clock)
        #expect(whole.effectiveLimits == (100, 200))
    }

    /// A refusal says how long until the key has room (`Retry-After`), and keys from the
    /// network (a client's address) do not grow the table without bound: past `maxKeys`, full
    /// buckets are forgotten first, everything when that is not enough.
    @Test func aRefusalSaysTheWaitAndTheKeysAreBounded() {
        let clock = ManualClock()
        let limiter = RateLimiter(rate: 0.5, burst: 2, clock: clock, maxKeys: 3)
        #expect(limiter.waitTime(taking: "a") == nil)
        #expect(limiter.waitTime(taking: "a") == nil)
        #expect(limiter.waitTime(taking: "a") == 2, "one token at half a token a second")
        clock.advance(by: 1.5)
        #expect(limiter.waitTime(taking: "a") == 0.5)
        #expect(limiter.waitTime(taking: "b") == nil)
        clock.advance(by: 4)
        #expect(limiter.waitTime(taking: "c") == nil)
        // "a" and "b" are full again by now (the same as no bucket): forgotten for "d".
        #expect(limiter.keyCount == 3)
        #expect(limiter.waitTime(taking: "d") == nil)
        #expect(limiter.keyCount == 2, "c and d")
        #expect(limiter.waitTime(taking: "e") == nil)
        #expect(limiter.waitTime(taking: "f") == nil, "none full: all forgotten, f starts afresh")
        #expect(limiter.keyCount == 1)
    }

    @Test func theShareFollowsTheLiveNodeCount() async throws {
        let queue = CountingQueue()
        let share = NodeShare()
        // Recounted when the clock says so: each move of an interval is one more count.
        let clock = ManualClock()
        let task = share.refreshing(from: queue, every: .seconds(5), clock: clock, logger: Logger(label: "test"))
        defer { task.cancel() }
        try await clock.waitForSleepers()
        #expect(queue.asked == 1)
        queue.set(3)
        clock.advance(by: 4.9)
        #expect(clock.sleeperCount == 1, "not due yet")
        clock.advance(by: 0.1)
        try await waitUntil { share.liveNodes == 3 }
        try await clock.waitForSleepers()
        queue.fail()
        clock.advance(by: 5)
        try await waitUntil("a failed count was handled") { queue.asked == 3 }
        try await clock.waitForSleepers()
        #expect(share.liveNodes == 3, "a failed count keeps the last one")
        queue.set(1)
        clock.advance(by: 5)
        try await waitUntil { share.liveNodes == 1 }
        #expect(queue.asked == 4)
    }
}

/// A work queue that only counts live nodes.
private final class CountingQueue: WorkQueue {
    private let count = Mutex<Int?>(1)
    private let calls = Atomic<Int>(0)

    func set(_ value: Int) { count.withLock { $0 = value } }
    func fail() { count.withLock { $0 = nil } }
    /// How many times the count was asked for.
    var asked: Int { calls.load(ordering: .acquiring) }

    func liveNodeCount() async throws -> Int {
        calls.add(1, ordering: .acquiringAndReleasing)
        guard let value = count.withLock({ $0 }) else { throw StoreError(.unavailable, "no database") }
        return value
    }

    func claimWork(now: Date, limit: Int, sliceLimit: Int, running: Set<MessageSliceKey>) async throws -> [WorkClaim] {
        []
    }
    func renewLeases(_ slices: [MessageSliceKey: Int64], now: Date) async throws -> (
        held: Set<MessageSliceKey>, until: Date?
    ) { ([], nil) }
    func releaseSlice(_ key: MessageSliceKey, fence: Int64) async throws {}
    func backlog(appID: Int64, upTo: Int) async throws -> Int { 0 }
}
