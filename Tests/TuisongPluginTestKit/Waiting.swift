import Foundation

// Waiting on conditions, never on time: every wait in the suites polls something observable
// (a counter, a status, a port, a log line) and returns as soon as it holds.

/// Polls `probe` every `interval` until it returns a value, or `timeout` passes (then nil).
///
///     let status = try await firstValue { try await gateway.status(messageID: id) }
public func firstValue<T>(
    within timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(5),
    _ probe: () async throws -> T?
) async rethrows -> T? {
    let deadline = ContinuousClock.now + timeout
    while true {
        if let value = try await probe() { return value }
        if ContinuousClock.now >= deadline { return nil }
        try? await Task.sleep(for: interval)
    }
}

/// Polls `condition` until it holds (true) or `seconds` pass (false), so a test can say
/// `#expect(await eventually { server.liveRequestCount == 0 })`.
public func eventually(
    within seconds: Double = 10, every interval: Duration = .milliseconds(5), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    try await firstValue(within: .milliseconds(Int64(seconds * 1000)), every: interval) {
        try await condition() ? true : nil
    } ?? false
}

/// Polls `condition` until it holds; throws `TestTimeout` naming `what` after `timeout`, for
/// the waits a test cannot go on without.
///
///     try await waitUntil("the first page was sent") { transport.pushes.count >= 10 }
public func waitUntil(
    _ what: @autoclosure () -> String = "the condition", within timeout: Duration = .seconds(30),
    every interval: Duration = .milliseconds(5), _ condition: () async throws -> Bool
) async throws {
    guard try await firstValue(within: timeout, every: interval, { try await condition() ? true : nil }) != nil
    else { throw TestTimeout(message: "\(what()) did not happen within \(timeout)") }
}

/// Runs blocking work (socket reads, child processes) on its own thread so the test never
/// blocks the cooperative pool that servers' handler tasks need.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try work() })
        }
    }
}

/// A test waited longer than it allows.
public struct TestTimeout: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) {
        self.message = message
    }
}
