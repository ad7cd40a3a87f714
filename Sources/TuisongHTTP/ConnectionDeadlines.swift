import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Every open connection and the moment it must have delivered its current request by.
///
/// libmicrohttpd's own timeout (`connectionTimeout`) counts silence only: a client sending a
/// byte every few seconds keeps its connection for ever, and enough of them take every
/// connection the server has. Here each request gets a total deadline instead:
/// - waiting for a request line (a new connection, or keep-alive after an answer): the longer
///   of `receiveTimeout` and the idle timeout;
/// - from the request line to the end of the body (headers and body together): `receiveTimeout`;
/// - while its handler runs and its answer is written: none (the handler has its own timeout).
///
/// MHD gives no way to close a connection from another thread, so `expire` shuts an overdue
/// connection's socket down (`shutdown(2)`, which never frees the descriptor): MHD's thread
/// then reads end-of-file and closes it the ordinary way. The socket is shut down under the
/// lock that `closed` takes, and MHD reports a connection closed before it closes its socket,
/// so a descriptor number reused by a newer connection is never touched.
final class ConnectionDeadlines: Sendable {
    private struct Entry {
        var socket: Int32
        var deadline: ContinuousClock.Instant?
    }

    private struct State {
        var entries: [UInt: Entry] = [:]
        var stopped = false
    }

    /// Sharded like `PendingExchanges`: every request touches its connection's entry three times
    /// from the MHD thread that owns the connection.
    private final class Shard: Sendable {
        let state = Mutex(State())
    }

    private let shards: [Shard] = (0..<16).map { _ in Shard() }
    let receiveTimeout: Duration
    let waitForRequestTimeout: Duration

    /// - Parameters:
    ///   - receiveTimeout: seconds from a request's first line to its last body byte; 0 or less
    ///     disables every deadline.
    ///   - idleTimeout: MHD's connection timeout, so an idle keep-alive connection is left to it.
    init(receiveTimeout: Double, idleTimeout: Double) {
        let never = Duration.seconds(100 * 365 * 24 * 3600)
        func duration(_ seconds: Double) -> Duration { .milliseconds(Int64((seconds * 1000).rounded(.up))) }
        self.receiveTimeout = receiveTimeout > 0 ? duration(receiveTimeout) : never
        self.waitForRequestTimeout = receiveTimeout > 0 ? duration(max(receiveTimeout, idleTimeout)) : never
    }

    private func shard(_ connection: OpaquePointer) -> Shard {
        // Connections are heap objects: drop the constant low bits before picking a shard.
        shards[(Int(bitPattern: UInt(bitPattern: connection)) >> 4) & (shards.count - 1)]
    }

    private func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: connection) }

    /// A connection was accepted (MHD_CONNECTION_NOTIFY_STARTED).
    func opened(_ connection: OpaquePointer, socket: Int32, now: ContinuousClock.Instant) {
        guard socket >= 0 else { return }
        shard(connection).state.withLock { state in
            guard !state.stopped else { return }
            state.entries[key(connection)] = Entry(socket: socket, deadline: now + waitForRequestTimeout)
        }
    }

    /// The request line is in; headers and body must follow within `receiveTimeout`.
    func requestStarted(_ connection: OpaquePointer, now: ContinuousClock.Instant) {
        setDeadline(connection, now + receiveTimeout)
    }

    /// The request is complete (or being answered early): no deadline while it is handled.
    func requestReceived(_ connection: OpaquePointer) {
        setDeadline(connection, nil)
    }

    /// The answer is sent; the connection may wait for its next request line.
    func requestCompleted(_ connection: OpaquePointer, now: ContinuousClock.Instant) {
        setDeadline(connection, now + waitForRequestTimeout)
    }

    /// MHD_CONNECTION_NOTIFY_CLOSED, before MHD closes the socket.
    func closed(_ connection: OpaquePointer) {
        _ = shard(connection).state.withLock { $0.entries.removeValue(forKey: key(connection)) }
    }

    private func setDeadline(_ connection: OpaquePointer, _ deadline: ContinuousClock.Instant?) {
        shard(connection).state.withLock { state in
            state.entries[key(connection)]?.deadline = deadline
        }
    }

    /// Shuts down every connection past its deadline; returns how many.
    @discardableResult
    func expire(now: ContinuousClock.Instant) -> Int {
        var count = 0
        for shard in shards {
            shard.state.withLock { state in
                guard !state.stopped else { return }
                for (key, entry) in state.entries {
                    guard let deadline = entry.deadline, deadline <= now else { continue }
                    _ = shutdown(entry.socket, Int32(SHUT_RDWR))
                    state.entries[key]?.deadline = nil
                    count += 1
                }
            }
        }
        return count
    }

    /// Before the daemon stops: no socket is touched after this.
    func stop() {
        for shard in shards {
            shard.state.withLock { state in
                state.stopped = true
                state.entries.removeAll()
            }
        }
    }

    /// Connections currently tracked (for tests).
    var count: Int {
        shards.reduce(0) { total, shard in total + shard.state.withLock { $0.entries.count } }
    }
}
