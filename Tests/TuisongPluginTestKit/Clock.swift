import Foundation
import Synchronization
import TuisongCore

/// A clock the test moves by hand.
public final class ManualClock: TuisongCore.Clock {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = Mutex(start)
    }

    public var now: Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }

    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}
