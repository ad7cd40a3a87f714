import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongDelivery

/// The engine's loops wait on a `WakeSignal` until a signal or a deadline on the engine's clock.
@Suite struct WakeSignalTests {
    /// Runs `wait` in a task; whether it has returned can be asked at any time.
    final class Waiting: Sendable {
        private let done = Atomic<Bool>(false)
        var returned: Bool { done.load(ordering: .acquiring) }

        init(_ wait: @escaping @Sendable () async -> Void) {
            Task {
                await wait()
                self.done.store(true, ordering: .releasing)
            }
        }

        func returnedSoon() async -> Bool {
            await firstValue(within: .seconds(10)) { self.returned ? true : nil } ?? false
        }
    }

    /// The dispatcher looks for due work at `lookedAt`, then waits; a test (or a slow pass) moves
    /// the clock past the next look in between. The wait must end at once: counted from the
    /// wait's own start, it would sleep until a moment a manual clock never reaches again (a
    /// scheduled message then was never sent).
    @Test func aDeadlineThatPassedBeforeTheWaitBeganEndsItAtOnce() async {
        let clock = ManualClock()
        let signal = WakeSignal()
        let lookedAt = clock.now
        clock.advance(by: 3601)
        let waiting = Waiting { await signal.wait(until: lookedAt + 0.02, on: clock) }
        #expect(await waiting.returnedSoon())
    }

    @Test func aWaitEndsWhenTheClockReachesItsDeadline() async throws {
        let clock = ManualClock()
        let signal = WakeSignal()
        let waiting = Waiting { await signal.wait(until: clock.now + 60, on: clock) }
        try await clock.waitForSleepers(1)
        clock.advance(by: 59)
        #expect(!waiting.returned, "not due yet")
        clock.advance(by: 1)
        #expect(await waiting.returnedSoon())
        #expect(clock.sleeperCount == 0)
    }

    @Test func aSignalBeforeTheWaitIsKept() async {
        let clock = ManualClock()
        let signal = WakeSignal()
        signal.signal()
        let waiting = Waiting { await signal.wait(until: clock.now + 3600, on: clock) }
        #expect(await waiting.returnedSoon())
    }

    @Test func aSignalDuringTheWaitEndsItAndItsTimer() async throws {
        let clock = ManualClock()
        let signal = WakeSignal()
        let waiting = Waiting { await signal.wait(until: clock.now + 3600, on: clock) }
        try await clock.waitForSleepers(1)
        signal.signal()
        #expect(await waiting.returnedSoon())
        #expect(await firstValue(within: .seconds(10)) { clock.sleeperCount == 0 ? true : nil } == true)
    }
}
