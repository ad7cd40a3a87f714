import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

/// The manual clock's sleeps: what every engine test that moves time relies on.
@Suite struct ManualClockTests {
    @Test func aSleepResumesOnlyWhenTheClockReachesItsDeadline() async throws {
        let clock = ManualClock()
        let late = Task {
            try await clock.sleep(for: .seconds(60))
            return clock.now
        }
        let early = Task {
            try await clock.sleep(until: clock.now.addingTimeInterval(10))
            return clock.now
        }
        try await clock.waitForSleepers(2)
        #expect(clock.nextDeadline == ManualClock.defaultStart.addingTimeInterval(10))
        clock.advance(by: 9.5)
        #expect(clock.sleeperCount == 2, "nothing is due yet")
        clock.advance(by: .milliseconds(500))
        #expect(try await early.value == ManualClock.defaultStart.addingTimeInterval(10))
        #expect(clock.sleeperCount == 1, "the later one still sleeps")
        clock.set(ManualClock.defaultStart.addingTimeInterval(3600))
        #expect(try await late.value == ManualClock.defaultStart.addingTimeInterval(3600))
        #expect(clock.sleeperCount == 0)
    }

    @Test func oneMoveResumesEverySleepDueByThen() async throws {
        let clock = ManualClock()
        let sleeps = [3, 1, 2, 90].map { seconds in
            Task {
                try await clock.sleep(for: .seconds(seconds))
                return seconds
            }
        }
        try await clock.waitForSleepers(4)
        clock.advance(by: 3)
        var woke: Set<Int> = []
        for sleep in sleeps.prefix(3) { woke.insert(try await sleep.value) }
        #expect(woke == [1, 2, 3])
        #expect(clock.sleeperCount == 1, "the 90 s one still sleeps")
        sleeps[3].cancel()
    }

    @Test func aDeadlineAlreadyReachedDoesNotWait() async throws {
        let clock = ManualClock()
        try await clock.sleep(until: clock.now)
        try await clock.sleep(until: clock.now.addingTimeInterval(-5))
        try await clock.sleep(for: .zero)
        #expect(clock.sleeperCount == 0)
    }

    @Test func cancellingASleepEndsItWithCancellationError() async throws {
        let clock = ManualClock()
        let sleeping = Task { try await clock.sleep(for: .seconds(60)) }
        try await clock.waitForSleepers(1)
        sleeping.cancel()
        await #expect(throws: CancellationError.self) { try await sleeping.value }
        #expect(clock.sleeperCount == 0)

        // Cancelled before it sleeps: it does not wait either.
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(60))
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func theSystemClockSleepsOnRealTime() async throws {
        let clock = SystemClock()
        try await clock.sleep(for: .zero)
        try await clock.sleep(until: clock.now.addingTimeInterval(-1))
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(for: .seconds(60))
        }
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(Duration.milliseconds(1500).timeInterval == 1.5)
    }
}
