import Synchronization

/// Bounds how many pushes are in flight. Waiting suspends (never blocks a thread) until enough
/// permits are free; waiters are served in arrival order. Permits can be taken and returned in
/// bulk, so a dispatcher sending a page pays one wait per chunk, not one per device.
final class AsyncSemaphore: Sendable {
    private struct Waiter {
        var minimum: Int
        var maximum: Int
        var continuation: CheckedContinuation<Int, Never>
    }

    private struct State {
        var permits: Int
        var waiters: [Waiter] = []
        var head = 0

        var hasWaiters: Bool { head < waiters.count }

        /// Grants the longest waiters whatever now satisfies them.
        mutating func grantWaiters(into granted: inout [(CheckedContinuation<Int, Never>, Int)]) {
            while head < waiters.count, permits >= waiters[head].minimum {
                let count = min(permits, waiters[head].maximum)
                permits -= count
                granted.append((waiters[head].continuation, count))
                head += 1
            }
            if head > 1024, head * 2 > waiters.count {
                waiters.removeFirst(head)
                head = 0
            }
        }
    }

    private let state: Mutex<State>
    /// The permits there are in all; a wait for more could never end.
    let capacity: Int

    init(permits: Int) {
        capacity = permits
        state = Mutex(State(permits: permits))
    }

    /// Waits until at least `minimum` permits are free (and no earlier waiter is still
    /// waiting), then takes as many as are free up to `maximum`; returns how many it took.
    func acquire(atLeast minimum: Int, upTo maximum: Int) async -> Int {
        precondition(minimum >= 1 && minimum <= maximum && minimum <= capacity)
        let immediate = state.withLock { state -> Int in
            guard !state.hasWaiters, state.permits >= minimum else { return 0 }
            let count = min(state.permits, maximum)
            state.permits -= count
            return count
        }
        if immediate > 0 { return immediate }
        return await withCheckedContinuation { continuation in
            let granted = state.withLock { state -> [(CheckedContinuation<Int, Never>, Int)] in
                // Permits may have come back between the two locks.
                state.waiters.append(Waiter(minimum: minimum, maximum: maximum, continuation: continuation))
                var granted: [(CheckedContinuation<Int, Never>, Int)] = []
                state.grantWaiters(into: &granted)
                return granted
            }
            for (waiter, count) in granted { waiter.resume(returning: count) }
        }
    }

    /// Tasks waiting for permits now (tests).
    var waiterCount: Int { state.withLock { $0.waiters.count - $0.head } }

    /// Returns `count` permits and wakes the waiters they satisfy.
    func signal(count: Int) {
        guard count > 0 else { return }
        let granted = state.withLock { state -> [(CheckedContinuation<Int, Never>, Int)] in
            state.permits += count
            guard state.hasWaiters else { return [] }
            var granted: [(CheckedContinuation<Int, Never>, Int)] = []
            state.grantWaiters(into: &granted)
            return granted
        }
        for (waiter, count) in granted { waiter.resume(returning: count) }
    }
}
