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
        private let gate = Mutex<(open: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))

        func forget() async -> Int {
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
            return 1
        }

        func open() {
            gate.withLock { gate in
                gate.open = true
                return gate.waiting.take()
            }?.resume()
        }
    }

    static func janitor(_ store: Store, _ clock: ManualClock) -> BadgeGrantJanitor {
        BadgeGrantJanitor(logger: Logger(label: "test"), clock: clock, pause: .seconds(1)) { await store.forget() }
    }

    @Test func messagesFinishingDuringACleanUpMakeOneMoreAPauseLater() async throws {
        let store = Store()
        let clock = ManualClock()
        let janitor = Self.janitor(store, clock)
        janitor.forgetFinished(unlessStopping: { false })
        try await waitUntil("the first clean-up runs", within: .seconds(10)) {
            store.calls.load(ordering: .acquiring) == 1
        }
        for _ in 0..<100 { janitor.forgetFinished(unlessStopping: { false }) }
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
        janitor.forgetFinished(unlessStopping: { false })
        try await waitUntil("a clean-up at once", within: .seconds(10)) { store.calls.load(ordering: .acquiring) == 3 }
    }

    @Test func aStopDoesNotWaitForThePause() async throws {
        let store = Store()
        let clock = ManualClock()
        let janitor = Self.janitor(store, clock)
        let stopping = Atomic<Bool>(false)
        let isStopping: @Sendable () -> Bool = { stopping.load(ordering: .acquiring) }
        janitor.forgetFinished(unlessStopping: isStopping)
        try await waitUntil("the first clean-up runs", within: .seconds(10)) {
            store.calls.load(ordering: .acquiring) == 1
        }
        janitor.forgetFinished(unlessStopping: isStopping)
        store.open()
        try await clock.waitForSleepers(1)
        // The clock never moves: `finished` ends the pause, and the engine's next start cleans up.
        stopping.store(true, ordering: .releasing)
        await janitor.finished()
        #expect(store.calls.load(ordering: .acquiring) == 1)
        #expect(clock.sleeperCount == 0)
    }
}
