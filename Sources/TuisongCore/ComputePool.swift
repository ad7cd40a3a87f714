import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A few plain threads for CPU-bound work (password hashing, key derivation, signing at
/// volume), apart from the HTTP server's threads and Swift's cooperative pool.
///
/// Why: the cooperative pool has one thread per core. A PBKDF2 batch run there (60 Easemob
/// users, about 1.4 s) holds a thread for its whole length, and a few batches at once hold them
/// all: every other request that awaits anything (a health check, a device lookup) then waits
/// for a batch to end. Here the work queues for these threads instead, which run at a lower
/// priority (nice 5), so the scheduler keeps the request threads' share of the CPU.
///
/// The queue is bounded: past `queueLimit` waiting jobs, `run` throws `Busy` at once, and the
/// caller answers "busy, retry" in its dialect (429/503 with `Retry-After`), rather than
/// letting callers pile up behind minutes of work.
///
///     let hashes = try await compute.run { passwords.map { PasswordHash.make($0) } }
public final class ComputePool: Sendable {
    /// The queue is full: the caller should answer 503 with `Retry-After` in its dialect.
    public struct Busy: Error, Sendable, CustomStringConvertible {
        public let queueLimit: Int
        public var description: String {
            "the server is busy with CPU-bound work (\(queueLimit) jobs waiting); retry in a second"
        }
    }

    public let threads: Int
    public let queueLimit: Int
    private let queue: JobQueue

    /// - Parameters:
    ///   - threads: plain threads that run jobs, one job each at a time.
    ///   - queueLimit: jobs that may wait for a thread; one more is refused with `Busy`.
    ///   - name: the threads' name, `<name>-<index>` cut to 15 bytes (Linux's limit; seen in
    ///     `top -H`, `/proc/<pid>/task/*/comm`, debuggers).
    public init(threads: Int, queueLimit: Int, name: String = "tuisong-compute") {
        self.threads = max(1, threads)
        self.queueLimit = max(0, queueLimit)
        queue = JobQueue()
        for index in 0..<self.threads {
            let queue = self.queue
            let threadName = String(decoding: Array("\(name)-\(index)".utf8.prefix(15)), as: UTF8.self)
            let thread = Thread { queue.work(name: threadName) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// The pool a gateway of `processors` cores runs: one thread on two cores (the other is the
    /// request threads'), two from four cores on. 16 jobs may wait: at about 1.4 s a job (a
    /// batch of 60 password hashes) the last waits well under the server's request timeout.
    public static func standard(processors: Int = ProcessInfo.processInfo.activeProcessorCount) -> ComputePool {
        ComputePool(threads: processors >= 4 ? 2 : 1, queueLimit: 16)
    }

    deinit {
        queue.stop()
    }

    /// Runs `work` on one of the pool's threads and returns its result; throws `Busy` at once
    /// when `queueLimit` jobs wait already. A job whose caller's task is cancelled while it
    /// waits (the server gave up on the request) is skipped with `CancellationError`, so the
    /// work behind an answered request does not happen later; once started it runs to its end.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        let cancelled = CancellationFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let accepted = queue.enqueue(limit: queueLimit) {
                    guard !cancelled.value.load(ordering: .acquiring) else {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    continuation.resume(with: Result { try work() })
                }
                if !accepted { continuation.resume(throwing: Busy(queueLimit: queueLimit)) }
            }
        } onCancel: {
            cancelled.value.store(true, ordering: .releasing)
        }
    }

    /// Jobs waiting for a thread now.
    public var waiting: Int { queue.waiting }

    /// Stops the threads once the jobs queued so far have run (also done when the pool is freed).
    public func shutdown() {
        queue.stop()
    }
}

/// Set when a waiting job's caller is cancelled.
private final class CancellationFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// The pool's queue and its threads' loop. `@unchecked Sendable`: every stored property is
/// read and written with `condition` locked.
private final class JobQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var stopping = false
    /// Threads waiting for a job: a job handed to one of them does not wait.
    private var idle = 0

    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return max(0, jobs.count - head - idle)
    }

    /// Appends `job` unless `limit` jobs would wait with no idle thread to take them (or the
    /// pool stopped).
    func enqueue(limit: Int, _ job: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping, jobs.count - head < limit + idle else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// A thread's life: take the oldest job, run it, until stopped with nothing left.
    func work(name: String) {
        #if canImport(Glibc)
            // Foundation's `Thread.name` does not reach the system on Linux (a new thread keeps
            // its creator's name); the kernel takes a thread's name here.
            try? name.write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
            // Below the request threads: a CPU-bound job must not take their turn on a core. On
            // Linux the nice value is per thread, and `who` 0 is the calling thread.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 5)
        #endif
        while true {
            condition.lock()
            while head == jobs.count && !stopping {
                idle += 1
                condition.wait()
                idle -= 1
            }
            if head == jobs.count {
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job()
        }
    }
}
