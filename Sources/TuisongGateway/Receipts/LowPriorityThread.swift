import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One thread of its own that runs the work handed to it in turn, at a raised nice value: on
/// Linux the nice value is the thread's (NPTL), so CPU it wants while the cooperative threads
/// that send pushes are busy goes to them first, and it still runs (CFS gives a nice-10 thread
/// about a tenth of a nice-0 one's share, never nothing).
final class LowPriorityThread: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopped = false
    }
    /// What the thread and its callers share (a `Mutex` cannot be captured by itself).
    private final class Shared: Sendable {
        let state = Mutex(State())
        let ready = DispatchSemaphore(value: 0)
    }
    private let shared = Shared()

    /// `nice`: the thread's nice value (0 normal, 19 the lowest priority).
    init(name: String, nice: Int32) {
        let thread = Thread { [shared] in
            #if canImport(Glibc)
                // who 0 is the calling thread on Linux; a failure leaves it at normal priority.
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
            #endif
            while true {
                shared.ready.wait()
                let job = shared.state.withLock { state -> (@Sendable () -> Void)? in
                    state.jobs.isEmpty ? nil : state.jobs.removeFirst()
                }
                guard let job else {
                    if shared.state.withLock({ $0.stopped }) { return }
                    continue
                }
                job()
            }
        }
        thread.name = name
        thread.start()
    }

    /// Runs `work` on the thread; returns its result.
    func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let queued = shared.state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.jobs.append { continuation.resume(returning: work()) }
                return true
            }
            // Stopped: run on the caller's thread rather than never.
            guard queued else { return continuation.resume(returning: work()) }
            shared.ready.signal()
        }
    }

    /// The thread's nice value as the kernel reports it.
    func niceValue() async -> Int32 {
        await run {
            #if canImport(Glibc)
                return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            #else
                return 0
            #endif
        }
    }

    /// Ends the thread once the work handed to it is done.
    func stop() {
        shared.state.withLock { $0.stopped = true }
        shared.ready.signal()
    }
}
