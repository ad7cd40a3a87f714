internal import CPostgres
import Dispatch
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// N PostgreSQL connections for async code.
///
///     let pool = try PostgresPool(url: url, size: 4)
///     let count = try await pool.withConnection { conn in
///         try conn.execute("SELECT count(*) FROM devices").rows[0][0].int64
///     }
///     try await pool.transaction { conn in try conn.execute("UPDATE …") }
///     await pool.shutdown()
///
/// **Blocking.** libpq's calls block, so each connection lives on a thread of its own (one
/// worker per connection, started by `init`), and `withConnection` suspends the calling task on
/// a continuation until a worker has run the closure: the cooperative pool never waits on the
/// network. Dedicated threads rather than libpq's asynchronous API under one poll thread,
/// because a closure may run several dependent statements (a transaction, a claim then an
/// update) as plain straight-line code, the pool stays small (a database serves tens of
/// connections, not thousands), and a thread per connection costs little next to the server
/// process each connection already has.
///
/// Work waits in one FIFO; a free worker takes the oldest, and a new job wakes the worker idle
/// most recently, so a light load keeps to the connections already open. On checkout the worker
/// checks its connection without a round trip (status, and whether the server closed the socket
/// — a terminated backend, a restart) and opens a new one when it is broken or was never opened;
/// a statement failing because the connection broke mid-closure is not retried (it may have run).
/// A closure that leaves a transaction open is rolled back when it returns. Cancelling the
/// waiting task does not withdraw its closure.
///
/// **A frozen client.** A process stopped between two statements of a transaction (SIGSTOP, a
/// paused VM, a stall of seconds) keeps its row locks for as long as its socket stays open:
/// the server has no way to tell a stopped client from a slow one. `idleInTransactionTimeout`
/// sets the server's `idle_in_transaction_session_timeout` on each connection the pool opens,
/// so the server ends such a session — and releases its locks — once it has waited that long
/// for the client's next statement; the frozen process finds its connection gone when it
/// resumes, and the pool replaces it.
///
/// Other server settings a pool's sessions need (`settings`, such as `jit = off`) are applied
/// the same way, in one round trip when the connection opens.
public final class PostgresPool: Sendable {
    private let core: PoolCore

    /// Starts `size` worker threads; connections open on first use (an unreachable server
    /// fails the calls, not `init`). `idleInTransactionTimeout` (nil: the server's setting) is
    /// applied to every connection the pool opens, in whole milliseconds, and so is each of
    /// `settings` (name and value, as `SET name = value` would take them).
    public init(
        url: String, size: Int = 4, connectTimeout: Duration = .seconds(10),
        idleInTransactionTimeout: Duration? = nil, settings: [(name: String, value: String)] = [],
        label: String = "tuisong-pg", logger: Logger = Logger(label: "tuisong.postgres")
    ) throws(PostgresError) {
        var sessionSettings = settings
        if let timeout = idleInTransactionTimeout {
            // At least 1 ms: 0 would turn the server's timeout off.
            let (seconds, attoseconds) = timeout.components
            let milliseconds = max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
            sessionSettings.append(("idle_in_transaction_session_timeout", "\(milliseconds)"))
        }
        core = PoolCore(url: url, connectTimeout: connectTimeout, settings: sessionSettings, logger: logger)
        try core.start(workers: max(1, size), label: label)
    }

    deinit { core.close() }

    /// Runs `body` with a connection on one of the pool's threads, waiting for a free one.
    /// `body` is synchronous on purpose: every call inside blocks that thread, not a task.
    @discardableResult
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T)
        async throws -> T
    {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = core.submit { worker in
                let result = Result { () throws -> T in
                    let connection = try worker.checkout()
                    defer { worker.checkin() }
                    return try body(connection)
                }
                // Resumed once the worker is back on the idle list: the caller's next call
                // finds it there and goes to the same connection.
                return { continuation.resume(with: result) }
            }
            if !accepted { continuation.resume(throwing: PostgresError.closed()) }
        }
    }

    /// `withConnection` around `PostgresConnection.transaction`: BEGIN, `body`, COMMIT, or
    /// ROLLBACK when `body` throws. `SELECT … FOR UPDATE SKIP LOCKED` inside claims rows no
    /// concurrent transaction holds.
    @discardableResult
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T)
        async throws -> T
    {
        try await withConnection { connection in try connection.transaction(body) }
    }

    public var statistics: PostgresPoolStatistics { core.statistics }

    /// Stops taking work, lets queued closures finish, closes every connection and waits for
    /// the workers to end. Idempotent.
    public func shutdown() async {
        await withCheckedContinuation { continuation in core.close(whenDone: { continuation.resume() }) }
    }

    /// `shutdown()` for synchronous callers: blocks the calling thread until the workers ended
    /// (they signal from their own threads, so this is safe on a cooperative thread too).
    public func shutdownAndWait() {
        let done = DispatchSemaphore(value: 0)
        core.close(whenDone: { done.signal() })
        done.wait()
    }
}

/// A pool's counters since it started.
public struct PostgresPoolStatistics: Sendable, Hashable {
    /// Connections opened, the first of each worker included.
    public var connectionsOpened: Int
    /// Connections found broken on checkout (or left broken by a closure) and closed.
    public var connectionsReplaced: Int
    /// Closures waiting for a worker now.
    public var waiting: Int
}

extension PostgresError {
    static func closed() -> PostgresError { PostgresError(kind: .closed, message: "the PostgreSQL pool was shut down") }
}

/// The shared FIFO, the workers' counters and shutdown bookkeeping.
final class PoolCore: @unchecked Sendable {
    // @unchecked Sendable: `state` is a Mutex and the counters atomics; `url`, `connectTimeout`
    // and `logger` are immutable.

    /// Runs on a worker; returns what to do once the worker has taken its next job or gone idle
    /// (resume the caller).
    typealias Job = @Sendable (PoolWorker) -> Completion
    typealias Completion = @Sendable () -> Void

    private struct State {
        var jobs: [Job?] = []
        var head = 0
        var closed = false
        var workers = 0
        /// Workers waiting for a job, the one idle most recently last (those without a
        /// connection first): a job wakes the last, so a light load keeps going to the same few
        /// connections and the rest are never opened (a connection is a server process; a test
        /// suite's stores opened four each for work one connection did, issue #46).
        var idle: [PoolWorker] = []
        var onDone: [@Sendable () -> Void] = []
    }

    let url: String
    let connectTimeout: Duration
    /// Applied to each connection the pool opens (`set_config`, for the session).
    let settings: [(name: String, value: String)]
    let logger: Logger
    let opened = Atomic<Int>(0)
    let replaced = Atomic<Int>(0)
    private let state = Mutex(State())

    init(url: String, connectTimeout: Duration, settings: [(name: String, value: String)], logger: Logger) {
        self.url = url
        self.connectTimeout = connectTimeout
        self.settings = settings
        self.logger = logger
    }

    func start(workers: Int, label: String) throws(PostgresError) {
        for index in 0..<workers {
            let worker = PoolWorker(core: self, name: "\(label.prefix(11))-\(index)")
            let context = Unmanaged.passRetained(worker).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(
                &thread, nil,
                { context in
                    let worker = Unmanaged<PoolWorker>.fromOpaque(context!).takeRetainedValue()
                    worker.run()
                    return nil
                }, context)
            guard created == 0 else {
                Unmanaged<PoolWorker>.fromOpaque(context).release()
                close()
                throw PostgresError(kind: .usage, message: "pthread_create: \(String(cString: strerror(created)))")
            }
            pthread_detach(thread)
            state.withLock { $0.workers += 1 }
        }
    }

    /// Queues `job` and wakes the worker idle most recently, if any is; false once the pool is
    /// closed.
    func submit(_ job: @escaping Job) -> Bool {
        let (accepted, woken) = state.withLock { state -> (Bool, PoolWorker?) in
            guard !state.closed else { return (false, nil) }
            state.jobs.append(job)
            return (true, state.idle.popLast())
        }
        woken?.wake()
        return accepted
    }

    /// Blocks `worker` until there is a job; nil when the pool is closed and drained. A worker
    /// finding no job goes on the idle list and sleeps until `submit` or `close` wakes it (a
    /// wake-up that finds the job already taken by a busy worker just goes back to waiting).
    /// `finished`, the previous job's completion, runs after the worker took its next job or
    /// went on the idle list, so a caller resumed by it and calling again wakes this worker.
    func next(for worker: PoolWorker, after finished: Completion? = nil) -> Job? {
        var finished = finished
        while true {
            let (job, stop) = state.withLock { state -> (Job?, Bool) in
                if state.head < state.jobs.count {
                    let job = state.jobs[state.head]
                    state.jobs[state.head] = nil
                    state.head += 1
                    if state.head == state.jobs.count {
                        state.jobs.removeAll(keepingCapacity: true)
                        state.head = 0
                    }
                    return (job, false)
                }
                if state.closed { return (nil, true) }
                // A worker without a connection goes to the back of the line: a worker that
                // reached its first wait late (a thread started slowly) would otherwise be the
                // idle one most recently and open a second connection for a light load.
                if worker.hasConnection {
                    state.idle.append(worker)
                } else {
                    state.idle.insert(worker, at: 0)
                }
                return (nil, false)
            }
            finished?()
            finished = nil
            if let job { return job }
            if stop { return nil }
            worker.sleep()
        }
    }

    func workerEnded() {
        let finished = state.withLock { state -> [@Sendable () -> Void] in
            state.workers -= 1
            guard state.workers == 0 else { return [] }
            defer { state.onDone = [] }
            return state.onDone
        }
        for callback in finished { callback() }
    }

    func close(whenDone: (@Sendable () -> Void)? = nil) {
        let (idle, alreadyDone) = state.withLock { state -> ([PoolWorker], Bool) in
            state.closed = true
            if let whenDone, state.workers > 0 { state.onDone.append(whenDone) }
            defer { state.idle = [] }
            return (state.idle, state.workers == 0)
        }
        // Every idle worker is woken, finds the queue drained and closed, and ends; a busy one
        // finds the same when it asks for its next job.
        for worker in idle { worker.wake() }
        if alreadyDone { whenDone?() }
    }

    var statistics: PostgresPoolStatistics {
        PostgresPoolStatistics(
            connectionsOpened: opened.load(ordering: .relaxed), connectionsReplaced: replaced.load(ordering: .relaxed),
            waiting: state.withLock { $0.jobs.count - $0.head })
    }
}

/// One worker thread and the connection confined to it.
final class PoolWorker: @unchecked Sendable {
    // @unchecked Sendable: created on the thread calling `init`, then handed (retained) to its
    // own thread, the only one that touches `connection` from then on.

    // `semaphore` is a POSIX semaphore, thread-safe by definition, allocated here and freed
    // when the worker goes (after its thread ended: the thread holds the worker).

    private let core: PoolCore
    private let name: String
    private var connection: PostgresConnection?
    private let semaphore: UnsafeMutablePointer<sem_t>

    init(core: PoolCore, name: String) {
        self.core = core
        self.name = name
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Whether the worker holds a connection (open or found broken at its next checkout). Read
    /// on the worker's own thread only.
    var hasConnection: Bool { connection != nil }

    func run() {
        _ = tuisong_pq_name_current_thread(name)
        var finished: PoolCore.Completion? = nil
        while let job = core.next(for: self, after: finished) { finished = job(self) }
        connection = nil
        core.workerEnded()
    }

    /// Waits for `wake()`; a wake-up sent before the wait is not lost (the semaphore counts it).
    func sleep() {
        while sem_wait(semaphore) != 0 && errno == EINTR {}
    }

    func wake() { sem_post(semaphore) }

    /// The worker's connection, checked, or a new one in place of a broken one.
    func checkout() throws(PostgresError) -> PostgresConnection {
        if let connection {
            if connection.isHealthyWhenIdle() { return connection }
            core.replaced.add(1, ordering: .relaxed)
            core.logger.warning(
                "replacing a broken PostgreSQL connection",
                metadata: ["worker": "\(name)", "error": "\(PostgresConnection.errorMessage(connection.handle))"])
            self.connection = nil
        }
        let fresh = try PostgresConnection(url: core.url, connectTimeout: core.connectTimeout)
        if !core.settings.isEmpty {
            let calls = core.settings.indices.map { "set_config($\(2 * $0 + 1), $\(2 * $0 + 2), false)" }
            try fresh.execute(
                "SELECT \(calls.joined(separator: ", "))", core.settings.flatMap { [.text($0.name), .text($0.value)] })
        }
        core.opened.add(1, ordering: .relaxed)
        connection = fresh
        return fresh
    }

    /// After a closure: roll back what it left open (a BEGIN it deferred and never sent is
    /// dropped); a connection that cannot is dropped.
    func checkin() {
        guard let connection else { return }
        connection.endDeferredBegin()
        if connection.isConnected, connection.isInTransaction {
            if (try? connection.execute("ROLLBACK")) == nil || connection.isInTransaction {
                self.connection = nil
                core.replaced.add(1, ordering: .relaxed)
            }
        }
    }
}
