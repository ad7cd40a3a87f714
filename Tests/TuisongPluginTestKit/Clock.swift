import Foundation
import Synchronization
import TuisongCore

/// A clock the test moves by hand: the one manual clock of the test suites. Its sleepers
/// (the engine's polls, backoffs and timers) resume only when the test moves it past their
/// deadline, as swift-clocks' `TestClock` and swift-nio's `EmbeddedEventLoop.advanceTime` do.
///
///     let clock = ManualClock()  // ManualClock.defaultStart
///     clock.advance(by: 61)  // or .seconds(61): every sleep due by then resumes
///     clock.set(Date(timeIntervalSince1970: 1_800_000_000))
///     try await clock.waitForSleepers(1)  // the code under test is waiting on the clock
public final class ManualClock: TuisongCore.Clock {
    /// Where a clock starts unless told otherwise: 2023-11-14T22:13:20Z, a fixed instant so
    /// that dates written by a test are the same on every run.
    public static let defaultStart = Date(timeIntervalSince1970: 1_700_000_000)

    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        /// Sleeps cancelled before they were listed: they end at once when they come.
        var cancelledEarly: Set<Int> = []

        /// Takes the sleepers due at `now`, earliest first.
        mutating func due() -> [CheckedContinuation<Void, any Error>] {
            let due = sleepers.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline }
            for (id, _) in due { sleepers[id] = nil }
            return due.map(\.value.continuation)
        }
    }

    private let state: Mutex<State>

    public init(_ start: Date = ManualClock.defaultStart) {
        state = Mutex(State(now: start))
    }

    public var now: Date { state.withLock { $0.now } }

    /// Resumes when the test moves the clock to `deadline` or past it (at once if it is there).
    public func sleep(until deadline: Date) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ending: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let ending { continuation.resume(with: ending) }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelledEarly.insert(id)
                    return nil as Sleeper?
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        // A cancellation that came after the sleep ended leaves nothing behind.
        _ = state.withLock { $0.cancelledEarly.remove(id) }
    }

    /// How many sleeps are waiting on the clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline a sleep waits for, if any.
    public var nextDeadline: Date? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    /// Moves the clock forward (or back, for a negative value) by `seconds`, resuming every
    /// sleep due by then.
    public func advance(by seconds: TimeInterval) {
        let due = state.withLock { state in
            state.now += seconds
            return state.due()
        }
        for continuation in due { continuation.resume() }
    }

    /// Moves the clock forward (or back) by `duration`, resuming every sleep due by then.
    public func advance(by duration: Duration) {
        advance(by: duration.timeInterval)
    }

    /// Puts the clock at `date`, resuming every sleep due by then.
    public func set(_ date: Date) {
        let due = state.withLock { state in
            state.now = date
            return state.due()
        }
        for continuation in due { continuation.resume() }
    }

    /// Moves the clock `step` at a time, as time would pass, until `condition` holds: for code
    /// whose waits cannot all be counted (a whole gateway's polls, caches and timers). Throws
    /// `TestTimeout` naming `what` after `timeout` (real time).
    ///
    ///     try await clock.advance(by: .seconds(1), until: "the retry") { receiver.all.count == 2 }
    public func advance(
        by step: Duration, until what: @autoclosure () -> String = "the condition",
        within timeout: Duration = .seconds(30), _ condition: () async throws -> Bool
    ) async throws {
        try await waitUntil(what(), within: timeout) {
            if try await condition() { return true }
            self.advance(by: step)
            return false
        }
    }

    /// Returns once at least `count` sleeps wait on the clock: the code under test got to its
    /// wait, so moving the clock now resumes it. Throws `TestTimeout` after `timeout` (real time).
    public func waitForSleepers(_ count: Int = 1, within timeout: Duration = .seconds(30)) async throws {
        try await waitUntil("\(count) sleeps on the manual clock", within: timeout) { self.sleeperCount >= count }
    }
}
