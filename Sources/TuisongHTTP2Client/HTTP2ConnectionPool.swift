import Foundation
public import Logging
public import TuisongCrypto

/// HTTP/2 connections to one endpoint, on one event-loop thread: Tuisong's HTTP/2 client engine
/// (libnghttp2 over OpenSSL), which every HTTP/2 push service's transport sends through.
///
/// Requests are spread over `connections` connections (the least-loaded one with a free
/// stream), never above what each server connection allows (SETTINGS_MAX_CONCURRENT_STREAMS,
/// and one stream until the pool's own authorization, if any, has been accepted). Requests
/// beyond that wait in a queue. GOAWAY, refused streams and broken connections are handled by
/// retrying on another connection; every request ends with a response or an
/// `HTTP2ClientError`, at the latest when `requestTimeout` runs out.
///
/// A request is any `HTTP2RequestHead`: the service's own type writes its headers.
///
/// ```swift
/// let pool = try HTTP2ConnectionPool(
///     configuration: .init(label: "Example", endpoint: endpoint), tlsContext: .client(alpn: ["h2"]), logger: logger)
/// pool.send(requests) { answers in … }
/// ```
public final class HTTP2ConnectionPool: Sendable {
    public struct Configuration: Sendable {
        /// The service's name in logs, errors and the loop thread's name, as its transport spells it.
        public var label: String
        public var endpoint: HTTP2Endpoint
        /// Connections kept open.
        public var connections: Int = 2
        /// DNS + TCP + TLS + the server's first SETTINGS.
        public var connectTimeout: Duration = .seconds(10)
        /// From `send` to the response, including waiting for a stream and retries.
        public var requestTimeout: Duration = .seconds(30)
        /// An idle connection sends a PING this often.
        public var pingInterval: Duration = .seconds(60)
        /// A PING unanswered this long means the connection is dead.
        public var pingTimeout: Duration = .seconds(10)
        /// How often a request that was in flight on a broken connection is retried.
        public var maxRetriesOnConnectionLoss: Int = 3
        /// Reconnect backoff after failures: doubles from `initial` up to `maximum`, jittered.
        public var reconnectBackoffInitial: Duration = .milliseconds(200)
        public var reconnectBackoffMaximum: Duration = .seconds(30)
        /// While requests wait for a connection, attempts are at most this far apart (jittered
        /// down to half), so an endpoint that comes back after an outage is in use again within
        /// about this long. `reconnectBackoffMaximum` applies only while nothing waits.
        public var reconnectBackoffMaximumWhileQueued: Duration = .seconds(1)
        /// Response headers kept in `HTTP2Response.headers` (lower-case names); others are dropped.
        public var responseHeaders: [String] = []
        /// At most this much of a response body is kept.
        public var maxResponseBodyBytes = 16 * 1024

        public init(label: String, endpoint: HTTP2Endpoint) {
            self.label = label
            self.endpoint = endpoint
        }
    }

    let core: PoolCore
    private let requestTimeoutNanoseconds: UInt64

    /// Starts the pool's event loop thread. Connections open on the first request (or
    /// `connect()`) and are then kept open.
    ///
    /// - Parameter tlsContext: a client context offering ALPN `h2` (a client certificate in it,
    ///   if the service authenticates connections that way).
    /// - Parameter authorizer: the pool's own authorization of every request (nil: requests
    ///   carry their own in their headers, or none).
    public init(
        configuration: Configuration, tlsContext: TLSContext, authorizer: (any HTTP2Authorizer)? = nil,
        logger: Logger
    ) throws(HTTP2ClientError) {
        guard configuration.connections > 0 else {
            throw HTTP2ClientError(.connectFailed, "a pool needs at least one connection")
        }
        requestTimeoutNanoseconds = MonotonicTime.nanoseconds(configuration.requestTimeout)
        core = try PoolCore(
            settings: PoolCore.Settings(
                label: configuration.label, endpoint: configuration.endpoint,
                connections: configuration.connections, connectTimeout: configuration.connectTimeout,
                requestTimeout: configuration.requestTimeout,
                pingInterval: configuration.pingInterval, pingTimeout: configuration.pingTimeout,
                maxRetriesOnConnectionLoss: configuration.maxRetriesOnConnectionLoss,
                reconnectBackoffInitial: configuration.reconnectBackoffInitial,
                reconnectBackoffMaximum: configuration.reconnectBackoffMaximum,
                reconnectBackoffMaximumWhileQueued: configuration.reconnectBackoffMaximumWhileQueued,
                keptResponseHeaders: configuration.responseHeaders.map { $0.lowercased() },
                maxResponseBodyBytes: configuration.maxResponseBodyBytes),
            authorizer: authorizer, tlsContext: tlsContext, logger: logger)
    }

    deinit {
        core.shutdownDetached()
    }

    /// Opens the pool's connections now (TLS and HTTP/2 set-up) instead of on the first
    /// request, so a request about to be sent does not wait for them. No effect once open.
    public func connect() {
        core.connect()
    }

    /// Sends one request and waits for the answer (any HTTP status is a response).
    /// Cancelling the calling task resets the stream and throws `.cancelled`.
    public func send(_ request: any HTTP2RequestHead) async throws(HTTP2ClientError) -> HTTP2Response {
        let pending = PendingRequest(head: request, deadline: MonotonicTime.now() &+ requestTimeoutNanoseconds)
        let core = self.core
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in
                pending.continuation = continuation
                core.submit(pending)
            }
        } onCancel: {
            core.cancel(pending)
        }
        return try result.get()
    }

    /// Sends many requests with one hand-off to the pool's thread, and returns at once.
    ///
    /// `onAnswers` runs on the pool's event loop thread at the end of each loop iteration in
    /// which requests of this batch finished, with their answers (`index` is the position in
    /// `requests`). Across its calls every request is answered exactly once: with the server's
    /// response (any status), or with an `HTTP2ClientError` (timeout, connection lost too
    /// often, shutdown, …) at the latest when `requestTimeout` runs out. The handler shares
    /// the thread that drives the connections: keep it short and never block in it. An empty
    /// batch is never answered. Requests of a batch cannot be cancelled one by one; `shutdown`
    /// fails those still waiting.
    public func send<Request: HTTP2RequestHead>(
        _ requests: [Request], onAnswers: @escaping @Sendable ([HTTP2BatchAnswer]) -> Void
    ) {
        guard !requests.isEmpty else { return }
        let sink = BatchSink(handler: onAnswers)
        let deadline = MonotonicTime.now() &+ requestTimeoutNanoseconds
        var batch: [PendingRequest] = []
        batch.reserveCapacity(requests.count)
        for (index, request) in requests.enumerated() {
            batch.append(PendingRequest(head: request, deadline: deadline, sink: sink, index: index))
        }
        core.submit(batch: batch)
    }

    /// Fails waiting and in-flight requests with `.shutdown`, closes the connections (GOAWAY)
    /// and stops the pool's thread. Idempotent.
    public func shutdown() async {
        await core.shutdown()
    }

    public var statistics: HTTP2PoolStatistics {
        core.published.withLock { $0 }
    }
}
