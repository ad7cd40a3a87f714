internal import CPostgres
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `LISTEN` on a connection of its own, watched by one event thread.
///
///     let listener = try PostgresListener(url: url, channels: ["tuisong_wake"]) { notification in
///         wake(notification.payload)
///     }
///     …
///     listener.shutdown()
///
/// `init` connects and runs the `LISTEN`s before it returns (blocking the caller for that one
/// round trip), so a `NOTIFY` committed after it is delivered. The event thread then sleeps in
/// `poll` on the connection's socket and a wake-up pipe, reads with `PQconsumeInput` and hands
/// each `PQnotifies` entry to `handler`, on that thread, in the order the server sent them.
/// When the connection drops it reconnects (backoff from 100 ms to 5 s) and listens again,
/// calling `onConnect` each time; notifications sent while it was away are lost, as with any
/// LISTEN — treat `onConnect` as "something may have changed" and resynchronise.
public final class PostgresListener: Sendable {
    /// One `NOTIFY`.
    public struct Notification: Sendable, Hashable {
        public var channel: String
        public var payload: String
        /// The server process of the session that sent it.
        public var senderPID: Int32
    }

    private let engine: ListenerEngine

    /// - Parameters:
    ///   - onConnect: after the first connection and each reconnection, once the channels are
    ///     listened to; on the event thread (the first time, on the caller's thread in `init`).
    ///   - handler: each notification, on the event thread; keep it short.
    public init(
        url: String, channels: [String], connectTimeout: Duration = .seconds(10), label: String = "tuisong-listen",
        logger: Logger = Logger(label: "tuisong.postgres"), onConnect: (@Sendable () -> Void)? = nil,
        handler: @escaping @Sendable (Notification) -> Void
    ) throws(PostgresError) {
        engine = try ListenerEngine(
            url: url, channels: channels, connectTimeout: connectTimeout, label: label, logger: logger,
            onConnect: onConnect, handler: handler)
        try engine.start()
    }

    deinit { engine.stop() }

    /// The server process of the current connection (0 while reconnecting).
    public var backendPID: Int32 { engine.backendPID.load(ordering: .acquiring) }

    /// Stops the event thread and closes the connection; waits for the thread unless called
    /// from the handler. Idempotent.
    public func shutdown() { engine.stop() }
}

final class ListenerEngine: @unchecked Sendable {
    // @unchecked Sendable: `connection` is touched by `init` and then only by the event thread;
    // the wake pipe's write end is written from any thread (a pipe write is atomic); `stopping`,
    // `thread` and `backendPID` are a Mutex and atomics; the rest is immutable.

    private let url: String
    private let channels: [String]
    private let connectTimeout: Duration
    private let label: String
    private let logger: Logger
    private let onConnect: (@Sendable () -> Void)?
    private let handler: @Sendable (PostgresListener.Notification) -> Void
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<pthread_t?>(nil)
    private let eventThread = Atomic<UInt>(0)
    let backendPID = Atomic<Int32>(0)
    private var connection: PostgresConnection?

    init(
        url: String, channels: [String], connectTimeout: Duration, label: String, logger: Logger,
        onConnect: (@Sendable () -> Void)?, handler: @escaping @Sendable (PostgresListener.Notification) -> Void
    ) throws(PostgresError) {
        self.url = url
        self.channels = channels
        self.connectTimeout = connectTimeout
        self.label = label
        self.logger = logger
        self.onConnect = onConnect
        self.handler = handler
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw PostgresError(kind: .usage, message: "pipe: \(String(cString: strerror(errno)))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        // Every stored property is set by now, so a throw below runs `deinit`, which closes the
        // pipe: closing it here too closed the same numbers twice, the second time possibly
        // another thread's new socket (the store retries a listener every 2 s while PostgreSQL
        // is away).
        connection = try connectAndListen()
        onConnect?()
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    func start() throws(PostgresError) {
        let context = Unmanaged.passRetained(self).toOpaque()
        var created = pthread_t()
        let result = pthread_create(
            &created, nil,
            { context in
                let engine = Unmanaged<ListenerEngine>.fromOpaque(context!).takeRetainedValue()
                engine.run()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<ListenerEngine>.fromOpaque(context).release()
            throw PostgresError(kind: .usage, message: "pthread_create: \(String(cString: strerror(result)))")
        }
        thread.withLock { $0 = created }
    }

    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else {
            joinUnlessSelf()
            return
        }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        joinUnlessSelf()
    }

    private func joinUnlessSelf() {
        let id = eventThread.load(ordering: .acquiring)
        if id != 0 && pthread_equal(pthread_t(id), pthread_self()) != 0 {
            _ = thread.withLockIfAvailable { running in
                if let started = running { pthread_detach(started) }
                running = nil
            }
            return
        }
        thread.withLock { running in
            guard let started = running else { return }
            pthread_join(started, nil)
            running = nil
        }
    }

    private func connectAndListen() throws(PostgresError) -> PostgresConnection {
        let connection = try PostgresConnection(url: url, connectTimeout: connectTimeout)
        for channel in channels {
            try connection.execute("LISTEN \(connection.quoteIdentifier(channel))")
        }
        backendPID.store(connection.backendPID, ordering: .releasing)
        return connection
    }

    // MARK: The event thread

    private func run() {
        eventThread.store(UInt(pthread_self()), ordering: .releasing)
        _ = tuisong_pq_name_current_thread(String(label.prefix(15)))
        var backoff: Int32 = 100
        while !stopping.load(ordering: .acquiring) {
            guard let connection else {
                do {
                    connection = try connectAndListen()
                    logger.info("PostgreSQL listener reconnected", metadata: ["listener": "\(label)"])
                    backoff = 100
                    onConnect?()
                } catch {
                    logger.warning(
                        "PostgreSQL listener cannot reconnect",
                        metadata: ["listener": "\(label)", "error": "\(error)", "retry_ms": "\(backoff)"])
                    waitForWake(milliseconds: backoff)
                    backoff = min(backoff * 2, 5000)
                }
                continue
            }
            // A bad connection has no socket (-1), which poll would ignore, sleeping forever.
            guard connection.isConnected, PQsocket(connection.handle) >= 0 else {
                self.connection = nil
                backendPID.store(0, ordering: .releasing)
                continue
            }
            var descriptors = [
                pollfd(fd: PQsocket(connection.handle), events: Int16(POLLIN), revents: 0),
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                logger.error("poll failed", metadata: ["listener": "\(label)", "errno": "\(errno)"])
                waitForWake(milliseconds: 100)
                continue
            }
            if descriptors[1].revents != 0 { drainWake() }
            if descriptors[0].revents != 0 { readNotifications(connection) }
        }
        connection = nil
        backendPID.store(0, ordering: .releasing)
    }

    private func readNotifications(_ connection: PostgresConnection) {
        let alive = PQconsumeInput(connection.handle) == 1
        while let entry = PQnotifies(connection.handle) {
            let notification = PostgresListener.Notification(
                channel: String(cString: entry.pointee.relname), payload: String(cString: entry.pointee.extra),
                senderPID: entry.pointee.be_pid)
            PQfreemem(entry)
            handler(notification)
        }
        if !alive || !connection.isConnected {
            logger.warning(
                "PostgreSQL listener lost its connection",
                metadata: [
                    "listener": "\(label)", "error": "\(PostgresConnection.errorMessage(connection.handle))",
                ])
            self.connection = nil
            backendPID.store(0, ordering: .releasing)
        }
    }

    private func waitForWake(milliseconds: Int32) {
        var descriptor = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, milliseconds) > 0 { drainWake() }
    }

    private func drainWake() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, buffer.count) > 0 {}
    }
}
