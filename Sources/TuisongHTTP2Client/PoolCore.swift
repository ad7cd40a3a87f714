internal import CNGHTTP2
import Foundation
import Logging
import Synchronization
import TuisongCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Counters describing a pool, for metrics and tests. A snapshot taken on the pool's thread
/// after each batch of events, so it may trail a response that was just returned by moments.
public struct HTTP2PoolStatistics: Sendable, Hashable {
    /// Connections that completed TLS + HTTP/2 setup.
    public var connectionsOpened = 0
    /// Connection attempts that failed before becoming ready.
    public var connectFailures = 0
    /// Ready connections that broke (EOF, reset, PING timeout, protocol error).
    public var connectionsLost = 0
    /// GOAWAY frames received.
    public var goAwaysReceived = 0
    /// Connection attempts made to replace a connection that failed, broke or went away.
    public var reconnects = 0
    /// Connections currently ready.
    public var liveConnections = 0
    /// Requests currently on a stream.
    public var inFlight = 0
    /// Requests waiting for a stream.
    public var queued = 0
    /// The highest SETTINGS_MAX_CONCURRENT_STREAMS any server connection advertised.
    public var maxConcurrentStreamsSeen = 0
    /// The most streams ever open at once on a single connection.
    public var peakStreamsPerConnection = 0
    /// Streams opened (attempts, so retries count again).
    public var streamsOpened = 0
    /// Requests answered with an HTTP response.
    public var responses = 0
    /// Attempts retried: refused by GOAWAY/REFUSED_STREAM, lost with a connection, or after the
    /// pool's authorization was refused as expired.
    public var retries = 0
    /// Requests that ended with `.timeout`.
    public var timeouts = 0
    /// Keepalive PINGs sent on idle connections and acknowledged by the server.
    public var pingsAcknowledged = 0
    /// The debug data of the most recent GOAWAY (a service may explain itself there, e.g. `{"reason": …}`).
    public var lastGoAwayReason: String?
    /// The most recent connection failure.
    public var lastConnectError: String?
    /// The longest wait before a reconnect attempt scheduled while requests were queued.
    public var longestReconnectDelayWhileQueued: Duration = .zero

    public init() {}
}

/// The pool's state, confined to its event loop thread: connections, the queue of requests
/// waiting for a stream, reconnect backoff, timeouts.
final class PoolCore: HTTP2ConnectionDelegate, @unchecked Sendable {
    // @unchecked Sendable: only `inbox` and `published` (Mutexes) are touched off the loop;
    // everything else is read and written on `loop`'s thread (the entry points hop there).

    struct Settings: Sendable {
        /// The service's name in logs, errors and the loop thread's name, as its transport spells it.
        var label: String
        var endpoint: HTTP2Endpoint
        var connections: Int
        var connectTimeout: Duration
        var requestTimeout: Duration
        var pingInterval: Duration
        var pingTimeout: Duration
        var maxRetriesOnConnectionLoss: Int
        var reconnectBackoffInitial: Duration
        var reconnectBackoffMaximum: Duration
        var reconnectBackoffMaximumWhileQueued: Duration
        /// Response headers kept for the answer, lower-case names.
        var keptResponseHeaders: [String] = []
        var maxResponseBodyBytes = 16 * 1024
    }

    private enum InboxEntry {
        case submit(PendingRequest)
        case submitBatch([PendingRequest])
        case cancel(PendingRequest)
        /// Open the connections now, ahead of the first request.
        case connect
    }

    let loop: EventLoop
    let settings: Settings
    /// The pool's own authorization of every request (nil: requests carry their own, or none).
    let authorizer: (any HTTP2Authorizer)?
    private let tlsContext: TLSContext
    private let logger: Logger

    private let inbox = Mutex<(entries: [InboxEntry], scheduled: Bool, closed: Bool)>(
        ([], false, false))
    let published = Mutex(HTTP2PoolStatistics())

    // Loop-confined.
    private var connections: [HTTP2Connection] = []
    private var queue = RingDeque<PendingRequest>()
    private var statistics = HTTP2PoolStatistics()
    private var nextConnectionID = 1
    private var connectionAttempts = 0
    private var initialConnectionsStarted = false
    private var consecutiveFailures = 0
    private var reconnectTimer: TimerID?
    /// When `reconnectTimer` fires (MonotonicTime).
    private var reconnectDue: UInt64 = 0
    private var lastConnectError: HTTP2ClientError?
    private var sweepTimer: TimerID?
    private var isShutdown = false
    private var inboxScratch: [InboxEntry] = []
    private let completions = CompletionBatch()

    init(
        settings: Settings, authorizer: (any HTTP2Authorizer)?, tlsContext: TLSContext,
        logger: Logger
    ) throws(HTTP2ClientError) {
        // OpenSSL writes with write(2): a peer that vanished would raise SIGPIPE and kill the
        // process. Ignoring it turns that into EPIPE, reported as a lost connection.
        signal(SIGPIPE, SIG_IGN)
        self.settings = settings
        self.authorizer = authorizer
        self.tlsContext = tlsContext
        self.logger = logger
        loop = try EventLoop(name: "\(settings.label.lowercased()) \(settings.endpoint.host)")
        // Set before the thread starts; the loop drops it (and so this cycle) when it ends.
        loop.iterationEndHandler = { [self] in settleIteration() }
        loop.start()
    }

    // MARK: Entry points (any thread)

    func submit(_ pending: PendingRequest) {
        enqueueInbox(.submit(pending))
    }

    /// Hands a whole batch to the loop with one lock and at most one wake-up.
    func submit(batch: [PendingRequest]) {
        guard !batch.isEmpty else { return }
        enqueueInbox(.submitBatch(batch))
    }

    func cancel(_ pending: PendingRequest) {
        enqueueInbox(.cancel(pending))
    }

    func connect() {
        enqueueInbox(.connect)
    }

    private func enqueueInbox(_ entry: InboxEntry) {
        let (mustSchedule, closed): (Bool, Bool) = inbox.withLock { inbox in
            if inbox.closed { return (false, true) }
            inbox.entries.append(entry)
            if inbox.scheduled { return (false, false) }
            inbox.scheduled = true
            return (true, false)
        }
        if closed {
            Self.failAfterShutdown([entry], error: shutdownError)
            return
        }
        if mustSchedule && !loop.execute({ [self] in drainInbox() }) {
            // The loop already stopped (shutdown raced this send): nobody else will drain.
            failInboxAfterStop()
        }
    }

    private func failInboxAfterStop() {
        let entries = inbox.withLock { inbox -> [InboxEntry] in
            defer { inbox.entries.removeAll() }
            return inbox.entries
        }
        Self.failAfterShutdown(entries, error: shutdownError)
    }

    /// Answers submissions the loop will never see; a batch's handler gets one call with all
    /// of its failures.
    private static func failAfterShutdown(_ entries: [InboxEntry], error shutdownError: HTTP2ClientError) {
        for entry in entries {
            switch entry {
            case .submit(let pending):
                pending.finish(.failure(shutdownError))
            case .submitBatch(let batch):
                guard let sink = batch.first?.sink else { continue }
                sink.handler(
                    batch.map { HTTP2BatchAnswer(index: $0.index, result: .failure(shutdownError)) })
            case .cancel, .connect:
                break
            }
        }
    }

    /// Fails everything, closes connections, stops the loop thread.
    func shutdown() async {
        let alreadyClosed = inbox.withLock { inbox -> Bool in
            defer { inbox.closed = true }
            return inbox.closed
        }
        if !alreadyClosed {
            loop.execute { [self] in shutdownOnLoop() }
        }
        await loop.shutdown()
    }

    /// For the pool's deinit: no one can await, so just make the loop wind down.
    func shutdownDetached() {
        let alreadyClosed = inbox.withLock { inbox -> Bool in
            defer { inbox.closed = true }
            return inbox.closed
        }
        guard !alreadyClosed else { return }
        loop.execute { [self] in
            shutdownOnLoop()
            Task { await loop.shutdown() }
        }
    }

    // MARK: Loop thread

    private func drainInbox() {
        inbox.withLock { inbox in
            inbox.scheduled = false
            swap(&inbox.entries, &inboxScratch)
        }
        for entry in inboxScratch {
            switch entry {
            case .submit(let pending):
                pending.batch = completions
                if pending.cancellationRequested {
                    pending.finish(.failure(cancelledError))
                } else if isShutdown {
                    pending.finish(
                        .failure(shutdownError))
                } else {
                    queue.append(pending)
                }
            case .submitBatch(let batch):
                for pending in batch {
                    pending.batch = completions
                    if isShutdown {
                        pending.finish(.failure(shutdownError))
                    } else {
                        queue.append(pending)
                    }
                }
            case .cancel(let pending):
                cancelOnLoop(pending)
            case .connect:
                if !isShutdown { initialConnectionsStarted = true }
            }
        }
        inboxScratch.removeAll(keepingCapacity: true)
        if !initialConnectionsStarted && !queue.isEmpty {
            initialConnectionsStarted = true
        }
        ensureConnections()
        pump()
    }

    var shutdownError: HTTP2ClientError { Self.shutdownError(label: settings.label) }

    static func shutdownError(label: String) -> HTTP2ClientError {
        HTTP2ClientError(.shutdown, "the \(label) pool is shut down")
    }

    private var cancelledError: HTTP2ClientError {
        HTTP2ClientError(.cancelled, "the sending task was cancelled")
    }

    private func cancelOnLoop(_ pending: PendingRequest) {
        guard !pending.isFinished else { return }
        pending.cancellationRequested = true
        // Not yet through the inbox (no batch): the submit entry will see the flag. Queued:
        // finished here and skipped by `pump`. In flight: the stream is reset too.
        guard pending.batch != nil else { return }
        let connection = pending.connection
        // Finished before the reset goes out: the stream's close must find it answered.
        pending.finish(.failure(cancelledError))
        if let connection {
            connection.cancelStream(pending.streamID)
            flushConnections()
        }
    }

    /// Assigns queued requests to the least-loaded ready connections that have a free stream.
    private func pump() {
        // One authorization for the whole pump: fetching it per request took the authorizer's
        // lock and read the clock each time; a token stays fresh far longer than a pump.
        var current: HTTP2Authorization?
        while !queue.isEmpty {
            guard let connection = leastLoadedConnection() else { break }
            let pending = queue.popFirst()!
            if pending.isFinished { continue }
            var authorization: String?
            if let authorizer {
                do {
                    let value: HTTP2Authorization
                    if let current {
                        value = current
                    } else {
                        value = try authorizer.currentAuthorization()
                        current = value
                    }
                    authorization = value.value
                    pending.authorizationUsed = value
                } catch {
                    pending.finish(.failure(error))
                    continue
                }
            }
            let streamID = connection.submit(pending, authorization: authorization)
            if streamID <= 0 {
                // Stream ids exhausted (the connection retires itself) or the session broke.
                queue.prepend(pending)
                if !connection.isGoingAway {
                    connection.close(
                        HTTP2ClientError(
                            .protocolError,
                            "nghttp2_submit_request: \(HTTP2Callbacks.describe(streamID))"))
                } else {
                    ensureConnections()
                }
                continue
            }
            statistics.streamsOpened += 1
        }
        flushConnections()
        armSweep()
    }

    /// End of a loop iteration: publish the counters, then hand out the answers.
    private func settleIteration() {
        publishStatistics()
        completions.resumeAll()
    }

    private func leastLoadedConnection() -> HTTP2Connection? {
        var best: HTTP2Connection?
        for connection in connections where connection.availableStreams > 0 {
            if best == nil || connection.inFlight < best!.inFlight { best = connection }
        }
        return best
    }

    private func flushConnections() {
        for connection in connections where connection.needsFlush {
            connection.flush()
        }
    }

    /// Keeps `settings.connections` connections that accept new streams open or opening;
    /// after failures the next attempt waits an exponentially growing, jittered delay — up to
    /// `reconnectBackoffMaximum` while nothing waits, but never more than
    /// `reconnectBackoffMaximumWhileQueued` while requests are queued: after an outage the
    /// endpoint is probed often enough to be in use again soon after it recovers, however long
    /// the outage lasted. A request arriving during a long wait brings the attempt forward.
    private func ensureConnections() {
        guard !isShutdown, initialConnectionsStarted else { return }
        let waiting = !queue.isEmpty
        if let reconnectTimer {
            let soonest =
                MonotonicTime.now() &+ MonotonicTime.nanoseconds(settings.reconnectBackoffMaximumWhileQueued)
            guard waiting, reconnectDue > soonest else { return }
            loop.cancel(reconnectTimer)
            self.reconnectTimer = nil
        }
        let active = connections.count { !$0.isGoingAway }
        let missing = settings.connections - active
        guard missing > 0 else { return }
        if consecutiveFailures == 0 {
            for _ in 0..<missing { openConnection() }
            return
        }
        let delay = backoffDelay(
            failures: consecutiveFailures,
            maximum: waiting ? settings.reconnectBackoffMaximumWhileQueued : settings.reconnectBackoffMaximum)
        if waiting {
            statistics.longestReconnectDelayWhileQueued = max(statistics.longestReconnectDelayWhileQueued, delay)
        }
        reconnectDue = MonotonicTime.now() &+ MonotonicTime.nanoseconds(delay)
        logger.debug(
            "reconnecting after backoff",
            metadata: [
                "endpoint": "\(settings.endpoint)", "delay": "\(delay)",
                "failures": "\(consecutiveFailures)",
            ])
        reconnectTimer = loop.schedule(after: delay) { [self] in
            self.reconnectTimer = nil
            guard !self.isShutdown else { return }
            let missingNow = self.settings.connections - self.connections.count { !$0.isGoingAway }
            for _ in 0..<max(0, missingNow) { self.openConnection() }
        }
    }

    /// `initial × 2^(failures-1)`, capped at `maximum`, then scaled by a random factor in
    /// [0.5, 1] so many pools that failed together do not reconnect in step.
    func backoffDelay(failures: Int, maximum: Duration) -> Duration {
        let initial = Double(MonotonicTime.nanoseconds(settings.reconnectBackoffInitial))
        let maximum = Double(MonotonicTime.nanoseconds(maximum))
        let exponent = Double(min(max(failures - 1, 0), 30))
        let capped = min(maximum, initial * pow(2, exponent))
        let jittered = capped * Double.random(in: 0.5...1.0)
        return .nanoseconds(Int64(jittered))
    }

    private func openConnection() {
        // Every attempt beyond the initial set replaces one that failed, broke or went away.
        if connectionAttempts >= settings.connections { statistics.reconnects += 1 }
        connectionAttempts += 1
        let connection = HTTP2Connection(
            id: nextConnectionID,
            settings: HTTP2Connection.Settings(
                endpoint: settings.endpoint, connectTimeout: settings.connectTimeout,
                pingInterval: settings.pingInterval, pingTimeout: settings.pingTimeout,
                authorizer: authorizer, keptResponseHeaders: settings.keptResponseHeaders,
                maxResponseBodyBytes: settings.maxResponseBodyBytes),
            loop: loop, tlsContext: tlsContext)
        nextConnectionID += 1
        connection.delegate = self
        connections.append(connection)
        connection.start()
    }

    // MARK: Timeouts

    private var sweepInterval: Duration {
        let twentieth = settings.requestTimeout / 20
        return min(max(twentieth, .milliseconds(10)), .milliseconds(500))
    }

    private func armSweep() {
        guard sweepTimer == nil, !isShutdown else { return }
        guard !queue.isEmpty || connections.contains(where: { $0.inFlight > 0 }) else { return }
        sweepTimer = loop.schedule(after: sweepInterval) { [self] in
            self.sweepTimer = nil
            self.expireDeadlines()
            self.armSweep()
        }
    }

    /// Fails requests past their deadline: queued ones directly, in-flight ones after
    /// resetting their stream.
    private func expireDeadlines() {
        let now = MonotonicTime.now()
        var expired: [PendingRequest] = []
        for connection in connections {
            for stream in connection.streams.values
            where !stream.request.isFinished && stream.request.deadline <= now {
                expired.append(stream.request)
            }
        }
        for pending in expired {
            // The reset is only queued here; it goes out in `flushConnections` below, after
            // the request is finished, so its stream close finds it answered.
            pending.connection?.cancelStream(pending.streamID)
            statistics.timeouts += 1
            pending.finish(
                .failure(
                    HTTP2ClientError(
                        .timeout,
                        "no response from \(settings.endpoint) within \(settings.requestTimeout); "
                            + "stream reset")))
        }
        // The queue is in deadline order except for retries put back at the front, which are
        // older still; scanning from the front until a live deadline is enough.
        while let first = queue.first, first.isFinished || first.deadline <= now {
            _ = queue.popFirst()
            guard !first.isFinished else { continue }
            statistics.timeouts += 1
            first.finish(.failure(queuedTimeoutError()))
        }
        flushConnections()
    }

    private func queuedTimeoutError() -> HTTP2ClientError {
        let hasReadyConnection = connections.contains { $0.state == .ready }
        if !hasReadyConnection, let lastConnectError {
            return HTTP2ClientError(
                lastConnectError.code,
                "\(settings.endpoint) unreachable for longer than the request timeout "
                    + "(\(settings.requestTimeout)): \(lastConnectError.message)")
        }
        return HTTP2ClientError(
            .timeout,
            "no stream to \(settings.endpoint) became free within \(settings.requestTimeout)")
    }

    // MARK: HTTP2ConnectionDelegate

    func connectionBecameReady(_ connection: HTTP2Connection) {
        consecutiveFailures = 0
        statistics.connectionsOpened += 1
        statistics.maxConcurrentStreamsSeen = max(
            statistics.maxConcurrentStreamsSeen, connection.remoteMaxConcurrentStreams)
        logger.debug(
            "\(settings.label) connection ready",
            metadata: [
                "endpoint": "\(settings.endpoint)", "connection": "\(connection.id)",
                "maxConcurrentStreams": "\(connection.remoteMaxConcurrentStreams)",
            ])
    }

    func connection(_ connection: HTTP2Connection, closed stream: HTTP2Stream, errorCode: UInt32) {
        let pending = stream.request
        if pending.connection === connection { pending.connection = nil }
        guard !pending.isFinished else { return }
        if stream.status != 0 {
            statistics.responses += 1
            if let authorizer, !pending.retriedAfterAuthorizationExpiry,
                authorizer.answerRefusesAsExpired(status: stream.status, body: stream.body)
            {
                // Renewed once and this request retried once.
                if let used = pending.authorizationUsed { authorizer.invalidate(used) }
                pending.retriedAfterAuthorizationExpiry = true
                statistics.retries += 1
                queue.prepend(pending)
                return
            }
            pending.finish(.success(stream.response(keptHeaderNames: settings.keptResponseHeaders)))
        } else if stream.refused {
            // Never processed by the server: retry on any connection, bounded by the timeout.
            statistics.retries += 1
            queue.prepend(pending)
        } else {
            pending.finish(
                .failure(
                    HTTP2ClientError(
                        .protocolError,
                        "\(settings.endpoint) reset the stream: "
                            + HTTP2Callbacks.describeHTTP2Error(errorCode))))
        }
    }

    func connection(
        _ connection: HTTP2Connection, receivedGoAway lastStreamID: Int32, errorCode: UInt32,
        debugData: String
    ) {
        statistics.goAwaysReceived += 1
        statistics.maxConcurrentStreamsSeen = max(
            statistics.maxConcurrentStreamsSeen, connection.remoteMaxConcurrentStreams)
        if !debugData.isEmpty { statistics.lastGoAwayReason = debugData }
        logger.info(
            "\(settings.label) GOAWAY",
            metadata: [
                "endpoint": "\(settings.endpoint)", "connection": "\(connection.id)",
                "lastStreamID": "\(lastStreamID)",
                "error": "\(HTTP2Callbacks.describeHTTP2Error(errorCode))",
                "debug": "\(debugData)",
            ])
        // A connection that goes away is replaced at once: GOAWAY is an orderly handover.
        ensureConnections()
    }

    func connectionMayAcceptStreams(_ connection: HTTP2Connection) {
        statistics.maxConcurrentStreamsSeen = max(
            statistics.maxConcurrentStreamsSeen, connection.remoteMaxConcurrentStreams)
        statistics.peakStreamsPerConnection = max(
            statistics.peakStreamsPerConnection, connection.peakConcurrentStreams)
        pump()
    }

    func connection(
        _ connection: HTTP2Connection, closedWith error: HTTP2ClientError?, wasReady: Bool,
        unanswered: [HTTP2Stream]
    ) {
        connections.removeAll { $0 === connection }
        statistics.pingsAcknowledged += connection.pingsAcknowledged
        statistics.peakStreamsPerConnection = max(
            statistics.peakStreamsPerConnection, connection.peakConcurrentStreams)
        if let error {
            statistics.lastConnectError = describe(error)
            if wasReady {
                statistics.connectionsLost += 1
                consecutiveFailures += 1
                logger.warning(
                    "\(settings.label) connection lost",
                    metadata: [
                        "endpoint": "\(settings.endpoint)", "connection": "\(connection.id)",
                        "error": "\(error)", "unanswered": "\(unanswered.count)",
                    ])
            } else {
                statistics.connectFailures += 1
                consecutiveFailures += 1
                lastConnectError = error
                logger.warning(
                    "\(settings.label) connect failed",
                    metadata: ["endpoint": "\(settings.endpoint)", "error": "\(error)"])
            }
        }
        // Requests that were on the wire may have reached the server: retry within a budget.
        for stream in unanswered.reversed() {
            let pending = stream.request
            if pending.connection === connection { pending.connection = nil }
            guard !pending.isFinished else { continue }
            if isShutdown {
                pending.finish(
                    .failure(shutdownError))
                continue
            }
            if !stream.refused {
                pending.connectionLossRetries += 1
                if pending.connectionLossRetries > settings.maxRetriesOnConnectionLoss {
                    pending.finish(
                        .failure(
                            HTTP2ClientError(
                                .connectionLost,
                                "lost \(pending.connectionLossRetries) connections with the "
                                    + "request in flight; last: "
                                    + (error?.message ?? "closed"))))
                    continue
                }
            }
            statistics.retries += 1
            queue.prepend(pending)
        }
        if let error, !wasReady,
            error.code == .tlsFailed || error.code == .alpnNotNegotiated || error.code == .certificateRejected,
            !connections.contains(where: { $0.state == .ready })
        {
            // Trust and protocol failures do not fix themselves within a request timeout.
            for pending in queue.removeAll() where !pending.isFinished {
                pending.finish(.failure(error))
            }
        }
        guard !isShutdown else { return }
        ensureConnections()
        pump()
    }

    // MARK: Shutdown

    private func shutdownOnLoop() {
        guard !isShutdown else { return }
        isShutdown = true
        drainInbox()
        if let reconnectTimer { loop.cancel(reconnectTimer) }
        if let sweepTimer { loop.cancel(sweepTimer) }
        reconnectTimer = nil
        sweepTimer = nil
        let error = shutdownError
        for pending in queue.removeAll() { pending.finish(.failure(error)) }
        for connection in connections {
            for stream in connection.streams.values { stream.request.finish(.failure(error)) }
        }
        for connection in connections { connection.retire() }
        // Retiring with no streams left closes synchronously; force whatever remains.
        for connection in connections { connection.close(nil) }
    }

    /// An error as the statistics show it, named after the service (`<service> connectFailed: …`).
    private func describe(_ error: HTTP2ClientError) -> String {
        "\(settings.label) \(error.code): \(error.message)"
    }

    private func publishStatistics() {
        var snapshot = statistics
        snapshot.liveConnections = connections.count { $0.state == .ready }
        snapshot.inFlight = connections.reduce(0) { $0 + $1.inFlight }
        snapshot.queued = queue.count
        snapshot.pingsAcknowledged += connections.reduce(0) { $0 + $1.pingsAcknowledged }
        for connection in connections {
            snapshot.peakStreamsPerConnection = max(
                snapshot.peakStreamsPerConnection, connection.peakConcurrentStreams)
            snapshot.maxConcurrentStreamsSeen = max(
                snapshot.maxConcurrentStreamsSeen, connection.remoteMaxConcurrentStreams)
        }
        if let lastConnectError, snapshot.lastConnectError == nil {
            snapshot.lastConnectError = describe(lastConnectError)
        }
        published.withLock { $0 = snapshot }
    }
}
