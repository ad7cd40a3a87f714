import Logging
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongDelivery

/// The clean-up of finished messages' badge grants under a steady stream of finishing messages:
/// folded into one more run, a pause after the last, and never holding up a stop.
@Suite struct BadgeGrantJanitorTests {
    /// `forgetFinishedBadgeGrants` as the janitor calls it: counts the calls; the first one
    /// waits until the test opens it, so that messages can finish while it runs.
    final class Store: Sendable {
        let calls = Atomic<Int>(0)
        /// What each call was asked to forget.
        let scopes = Mutex<[BadgeGrantJanitor.Scope]>([])
        /// Calls to fail (as a database away would).
        let failing = Atomic<Int>(0)
        private let gate = Mutex<(open: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))

        func forget(_ scope: BadgeGrantJanitor.Scope) async throws -> Int {
            scopes.withLock { $0.append(scope) }
            let call = calls.add(1, ordering: .acquiringAndReleasing).newValue
            if call == 1 {
                await withCheckedContinuation { continuation in
                    let resumeNow = gate.withLock { gate -> Bool in
                        if gate.open { return true }
                        gate.waiting = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
            if failing.load(ordering: .acquiring) > 0 {
                failing.subtract(1, ordering: .acquiringAndReleasing)
                throw StoreError(.unavailable, "away (test)")
            }
            return 1
        }

        func open() {
            gate.withLock { gate in
                gate.open = true
                return gate.waiting.take()
            }?.resume()
        }
    }

    static func janitor(_ store: Store, _ clock: ManualClock, walkEvery: Duration = .seconds(600))
        -> BadgeGrantJanitor
    {
        BadgeGrantJanitor(logger: Logger(label: "test"), clock: clock, pause: .seconds(1), walkEvery: walkEvery) {
            try await store.forget($0)
        }
    }

    /// A janitor whose first clean-up (the start's walk) is running, held at the store's gate.
    static func walking() async throws -> (Store, ManualClock, BadgeGrantJanitor) {
        let store = Store()
        let clock = ManualClock()
        let janitor = Self.janitor(store, clock)
        janitor.forgetFinished(nil, unlessStopping: { false })
        try await waitUntil("the first clean-up runs", within: .seconds(10)) {
            store.calls.load(ordering: .acquiring) == 1
        }
        return (store, clock, janitor)
    }

    @Test func messagesFinishingDuringACleanUpMakeOneMoreAPauseLater() async throws {
        let (store, clock, janitor) = try await Self.walking()
        for message in 1...100 { janitor.forgetFinished(Int64(message), unlessStopping: { false }) }
        store.open()
        // The one more run waits for the clock: nothing runs back to back.
        try await clock.waitForSleepers(1)
        #expect(store.calls.load(ordering: .acquiring) == 1, "a hundred finished messages, no second run yet")
        clock.advance(by: .milliseconds(999))
        #expect(clock.sleeperCount == 1, "still pausing")
        clock.advance(by: .milliseconds(1))
        try await waitUntil("the one more clean-up", within: .seconds(10)) {
            store.calls.load(ordering: .acquiring) == 2
        }
        await janitor.finished()
        #expect(store.calls.load(ordering: .acquiring) == 2, "the hundred were folded into one run")
        #expect(clock.sleeperCount == 0)

        // Idle again: the next finished message is cleaned up at once.
        janitor.forgetFinished(101, unlessStopping: { false })
        try await waitUntil("a clean-up at once", within: .seconds(10)) { store.calls.load(ordering: .acquiring) == 3 }
        // The walk at the start; then the finished messages by id, never walked again.
        #expect(store.scopes.withLock { $0 } == [.everyMessage, .messages(Array(1...100)), .messages([101])])
    }

    /// Messages finished since are forgotten by id; once `walkEvery` passed since the last walk,
    /// the next clean-up walks again (a message the retry worker finished is found so).
    @Test func theWalkComesBackEveryWalkEvery() async throws {
        let store = Store()
        store.open()
        let clock = ManualClock()
        let janitor = Self.janitor(store, clock, walkEvery: .seconds(600))
        for (call, message) in [(1, nil), (2, 5), (3, 6)] as [(Int, Int64?)] {
            janitor.forgetFinished(message, unlessStopping: { false })
            try await waitUntil("clean-up \(call)", within: .seconds(10)) {
                store.calls.load(ordering: .acquiring) == call
            }
            await janitor.finished()
            if call == 2 { clock.advance(by: .seconds(600)) }
        }
        #expect(store.scopes.withLock { $0 } == [.everyMessage, .messages([5]), .everyMessage])
    }

    /// More messages finished than a list holds while a clean-up runs: the next walks instead.
    @Test func aFullListBecomesAWalk() async throws {
        let (store, clock, janitor) = try await Self.walking()
        for message in 1...(BadgeGrantJanitor.finishedLimit + 1) {
            janitor.forgetFinished(Int64(message), unlessStopping: { false })
        }
        store.open()
        try await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        try await waitUntil("the next clean-up", within: .seconds(10)) { store.calls.load(ordering: .acquiring) == 2 }
        await janitor.finished()
        #expect(store.scopes.withLock { $0 } == [.everyMessage, .everyMessage])
    }

    /// A clean-up that failed leaves its messages to the next one, which takes them with the
    /// messages finished since.
    @Test func aFailedCleanUpsMessagesGoWithTheNext() async throws {
        let store = Store()
        store.open()
        store.failing.store(1, ordering: .releasing)
        let clock = ManualClock()
        let janitor = Self.janitor(store, clock)
        janitor.forgetFinished(7, unlessStopping: { false })
        try await waitUntil("the failed clean-up", within: .seconds(10)) {
            store.calls.load(ordering: .acquiring) == 1
        }
        await janitor.finished()
        janitor.forgetFinished(8, unlessStopping: { false })
        try await waitUntil("the next clean-up", within: .seconds(10)) { store.calls.load(ordering: .acquiring) == 2 }
        await janitor.finished()
        #expect(store.scopes.withLock { $0 } == [.messages([7]), .messages([7, 8])])
    }

    @Test func aStopDoesNotWaitForThePause() async throws {
        let store = Store()
        let clock = ManualClock()
        let janitor = Self.janitor(store, clock)
        let stopping = Atomic<Bool>(false)
        let isStopping: @Sendable () -> Bool = { stopping.load(ordering: .acquiring) }
        janitor.forgetFinished(nil, unlessStopping: isStopping)
        try await waitUntil("the first clean-up runs", within: .seconds(10)) {
            store.calls.load(ordering: .acquiring) == 1
        }
        janitor.forgetFinished(nil, unlessStopping: isStopping)
        store.open()
        try await clock.waitForSleepers(1)
        // The clock never moves: `finished` ends the pause, and the engine's next start cleans up.
        stopping.store(true, ordering: .releasing)
        await janitor.finished()
        #expect(store.calls.load(ordering: .acquiring) == 1)
        #expect(clock.sleeperCount == 0)
    }
}
