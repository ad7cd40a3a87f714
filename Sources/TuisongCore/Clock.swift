import Foundation

/// The gateway's source of time, and the only way it waits for time to pass. Injected
/// everywhere that expiry, backoff, polling or token refresh depends on "now", so a test can
/// move time (a manual clock resumes its sleepers when the test advances it) instead of
/// waiting for it — as swift-clocks' `TestClock` and swift-nio's `EmbeddedEventLoop` do.
///
///     try await clock.sleep(for: settings.pollInterval)
///
/// Waits on real peers over real sockets (an HTTP request's or an HTTP/2 stream's timeout,
/// libcurl's and libmicrohttpd's own) keep the wall clock: the peer does not follow a test's
/// clock.
public protocol Clock: Sendable {
    var now: Date { get }

    /// Suspends until `now` reaches `deadline`; at once when it already has. Throws
    /// `CancellationError` when the calling task is cancelled first.
    func sleep(until deadline: Date) async throws

    /// Suspends while `duration` passes on this clock; throws `CancellationError` when the
    /// calling task is cancelled first. By default `sleep(until: now + duration)`.
    func sleep(for duration: Duration) async throws
}

extension Clock {
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now.addingTimeInterval(duration.timeInterval))
    }
}

extension Duration {
    /// The duration in seconds, as Foundation counts them.
    public var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

/// Wall-clock time; sleeps on the monotonic clock, so a wall-clock step does not stretch or
/// cut a wait.
public struct SystemClock: Clock {
    public init() {}
    public var now: Date { Date() }

    public func sleep(until deadline: Date) async throws {
        try await sleep(for: .seconds(max(0, deadline.timeIntervalSinceNow)))
    }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
