import Foundation
import Synchronization
import TuisongCore

/// A clock the test moves by hand: the one manual clock of the test suites.
///
///     let clock = ManualClock()  // ManualClock.defaultStart
///     clock.advance(by: 61)  // or .seconds(61)
///     clock.set(Date(timeIntervalSince1970: 1_800_000_000))
public final class ManualClock: TuisongCore.Clock {
    /// Where a clock starts unless told otherwise: 2023-11-14T22:13:20Z, a fixed instant so
    /// that dates written by a test are the same on every run.
    public static let defaultStart = Date(timeIntervalSince1970: 1_700_000_000)

    private let current: Mutex<Date>

    public init(_ start: Date = ManualClock.defaultStart) {
        current = Mutex(start)
    }

    public var now: Date { current.withLock { $0 } }

    /// Moves the clock forward (or back, for a negative value) by `seconds`.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }

    /// Moves the clock forward (or back) by `duration`.
    public func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        advance(by: TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18)
    }

    /// Puts the clock at `date`.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}
