import Synchronization

/// Bounds how many pushes are in flight. `wait()` suspends (never blocks a thread) when no
/// permit is left; `signal()` hands the permit straight to the longest waiter.
final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }

    private let state: Mutex<State>

    init(permits: Int) {
        state = Mutex(State(permits: permits))
    }

    func wait() async {
        let acquired = state.withLock { state -> Bool in
            if state.permits > 0 {
                state.permits -= 1
                return true
            }
            return false
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                // A permit may have come back between the two locks.
                if state.permits > 0 {
                    state.permits -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.head < state.waiters.count {
                let next = state.waiters[state.head]
                state.head += 1
                if state.head > 1024, state.head * 2 > state.waiters.count {
                    state.waiters.removeFirst(state.head)
                    state.head = 0
                }
                return next
            }
            state.permits += 1
            return nil
        }
        waiter?.resume()
    }
}
