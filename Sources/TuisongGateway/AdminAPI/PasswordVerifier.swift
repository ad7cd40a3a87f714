import Dispatch
import Synchronization
import TuisongPlugin

/// Runs password checks (PBKDF2: deliberately ~0.1–0.3 s of CPU each) a bounded number at a
/// time, on dispatch threads rather than the cooperative pool, so a burst of logins neither
/// occupies every cooperative thread nor makes each login wait for all the others one by one.
///
/// Checks wait in three lines, served in this order: addresses that logged in successfully
/// before (since the server started), addresses with nothing on record, addresses with a
/// failed login on record. The CPU is the limit under a guessing burst (more concurrency does
/// not make PBKDF2 cheaper), so the operator's login waits for the checks already running, not
/// for every guess queued before it.
final class PasswordVerifier: Sendable {
    private struct State {
        var running = 0
        var peakRunning = 0
        /// One line per `Standing`, served in order.
        var lines: [[CheckedContinuation<Void, Never>]] = [[], [], []]
    }

    /// What is known of the address a check comes from.
    typealias Standing = LoginStanding

    let concurrency: Int
    private let state = Mutex(State())

    init(concurrency: Int) {
        self.concurrency = max(1, concurrency)
    }

    /// The most checks that ever ran at once (for tests and diagnostics).
    var peakConcurrency: Int { state.withLock { $0.peakRunning } }
    /// Checks waiting for a slot now.
    var waitingCount: Int { state.withLock { $0.lines.reduce(0) { $0 + $1.count } } }

    /// Runs `check` when a slot is free and no caller of better standing waits.
    func verify(standing: Standing, _ check: @escaping @Sendable () -> Bool) async -> Bool {
        await acquire(standing)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: check())
            }
        }
        release()
        return result
    }

    private func acquire(_ standing: Standing) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.running < concurrency {
                    state.running += 1
                    state.peakRunning = max(state.peakRunning, state.running)
                    return true
                }
                state.lines[standing.rawValue].append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            // The slot passes straight to the next waiter, so `running` stays as it is.
            for index in state.lines.indices where !state.lines[index].isEmpty {
                return state.lines[index].removeFirst()
            }
            state.running -= 1
            return nil
        }
        next?.resume()
    }
}
