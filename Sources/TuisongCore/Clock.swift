import Foundation

/// The gateway's source of time. Injected everywhere that expiry, backoff or token refresh
/// depends on "now", so tests can move time without sleeping.
public protocol Clock: Sendable {
    var now: Date { get }
}

/// Wall-clock time.
public struct SystemClock: Clock {
    public init() {}
    public var now: Date { Date() }
}
