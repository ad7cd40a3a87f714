import Dispatch
import Synchronization

/// Runs password checks (PBKDF2: deliberately ~0.1–0.3 s of CPU each) a bounded number at a
/// time, on dispatch threads rather than the cooperative pool, so a burst of logins neither
/// occupies every cooperative thread nor makes each login wait for all the others one by one.
///
/// Checks wait in two lines: addresses with no failed login on record go first, addresses that
/// have failed before wait behind them. The CPU is the limit under a guessing burst (more
/// concurrency does not make PBKDF2 cheaper), so the operator's login from a clean address
/// waits for the checks already running, not for every guess queued before it.
final class PasswordVerifier: Sendable {
    private struct State {
        var running = 0
        var peakRunning = 0
        var clean: [CheckedContinuation<Void, Never>] = []
        var suspect: [CheckedContinuation<Void, Never>] = []
    }

    let concurrency: Int
    private let state = Mutex(State())

    init(concurrency: Int) {
        self.concurrency = max(1, concurrency)
    }

    /// The most checks that ever ran at once (for tests and diagnostics).
    var peakConcurrency: Int { state.withLock { $0.peakRunning } }
    /// Checks waiting for a slot now.
    var waitingCount: Int { state.withLock { $0.clean.count + $0.suspect.count } }

    /// Runs `check` when a slot is free (`suspect` callers after every waiting clean one).
    func verify(suspect: Bool, _ check: @escaping @Sendable () -> Bool) async -> Bool {
        await acquire(suspect: suspect)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: check())
            }
        }
        release()
        return result
    }

    private func acquire(suspect: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.running < concurrency {
                    state.running += 1
                    state.peakRunning = max(state.peakRunning, state.running)
                    return true
                }
                if suspect { state.suspect.append(continuation) } else { state.clean.append(continuation) }
                return false
            }
            if granted { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            // The slot passes straight to the next waiter, so `running` stays as it is.
            if !state.clean.isEmpty { return state.clean.removeFirst() }
            if !state.suspect.isEmpty { return state.suspect.removeFirst() }
            state.running -= 1
            return nil
        }
        next?.resume()
    }
}
