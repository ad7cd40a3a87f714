import Synchronization
import TuisongCore

/// The credential checks (a `.p8` key's probe, a service's sign-in) still running after the
/// upload that started them was answered `pending`. A check runs to its end in its own task
/// whoever waits: the console's answer waits at most a bound, a client going away does not stop
/// it, and its result lands on the credential (`failing` with the service's reason, or in use).
/// This node's only: another node lists the credential without `check_pending`.
final class PendingCredentialChecks: Sendable {
    enum Key: Hashable, Sendable {
        /// An uploaded file credential (`CredentialStore`).
        case uploaded(Int64)
        /// A declared form's credential (`ChannelCredentialStore`).
        case channel(Int64)
    }

    private let running = Mutex<[Key: Task<Void, Never>]>([:])

    func contains(_ key: Key) -> Bool { running.withLock { $0[key] != nil } }

    /// Waits for the checks still running (at shutdown, before the store closes under them).
    func finish() async {
        for task in running.withLock({ Array($0.values) }) { await task.value }
    }

    /// Runs `check` in a task of its own and answers its result when it ends within `bound` on
    /// `clock` (nil: whenever it ends), else nil while it goes on, listed under `key` until it
    /// ends.
    func run<Result: Sendable>(
        _ key: Key, within bound: Duration?, on clock: any Clock, _ check: @escaping @Sendable () async -> Result
    ) async -> Result? {
        let first = FirstAnswer<Result>()
        // Listed before it starts, so the task's own removal at its end cannot come first.
        running.withLock { running in
            running[key] = Task {
                let result = await check()
                _ = self.running.withLock { $0.removeValue(forKey: key) }
                first.answer(result)
            }
        }
        guard let bound else { return await first.value() }
        let timer = Task {
            guard (try? await clock.sleep(for: bound)) != nil else { return }
            first.answer(nil)
        }
        let result = await first.value()
        timer.cancel()
        return result
    }
}

/// The first of several answers, to one waiter; later answers are dropped.
private final class FirstAnswer<Value: Sendable>: Sendable {
    private struct State {
        var answered = false
        var value: Value?
        var waiter: CheckedContinuation<Value?, Never>?
    }
    private let state = Mutex(State())

    func answer(_ value: Value?) {
        let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard !state.answered else { return nil }
            state.answered = true
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    func value() async -> Value? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> (Bool, Value?) in
                if state.answered { return (true, state.value) }
                state.waiter = continuation
                return (false, nil)
            }
            if ready.0 { continuation.resume(returning: ready.1) }
        }
    }
}
