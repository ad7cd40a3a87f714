import Synchronization

/// How many passes the dispatcher and the retry worker finished, and how many of those found
/// work: what `DeliveryEngine.idle()` waits on. One lock per pass (a claim at the store, at most
/// every `pollInterval` when there is nothing to do), nothing per push.
final class LoopPasses: Sendable {
    enum Loop { case dispatch, retry }

    struct Counts: Sendable {
        var dispatch: UInt64 = 0
        var retry: UInt64 = 0
        /// Passes (of either loop) that claimed something or failed.
        var busy: UInt64 = 0
        /// The engine stopped: no pass will come.
        var stopped = false
    }

    private struct Waiter {
        var condition: @Sendable (Counts) -> Bool
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var counts = Counts()
        var waiters: [Waiter] = []

        /// Takes the waiters whose condition now holds.
        mutating func ready() -> [CheckedContinuation<Void, Never>] {
            guard !waiters.isEmpty else { return [] }
            let counts = counts
            var ready: [CheckedContinuation<Void, Never>] = []
            waiters.removeAll { waiter in
                guard counts.stopped || waiter.condition(counts) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
    }

    private let state = Mutex(State())

    var counts: Counts { state.withLock { $0.counts } }

    /// `loop` finished a pass; `busy`: it claimed work (or failed to look).
    func completed(_ loop: Loop, busy: Bool) {
        let ready = state.withLock { state in
            switch loop {
            case .dispatch: state.counts.dispatch &+= 1
            case .retry: state.counts.retry &+= 1
            }
            if busy { state.counts.busy &+= 1 }
            return state.ready()
        }
        for continuation in ready { continuation.resume() }
    }

    /// The loops ended: every waiter returns.
    func stopped() {
        let ready = state.withLock { state in
            state.counts.stopped = true
            return state.ready()
        }
        for continuation in ready { continuation.resume() }
    }

    /// Returns once `condition` holds for the counts (or the engine stopped).
    func wait(until condition: @escaping @Sendable (Counts) -> Bool) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.counts.stopped || condition(state.counts) { return true }
                state.waiters.append(Waiter(condition: condition, continuation: continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}
