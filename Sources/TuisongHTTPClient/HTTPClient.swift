import Logging

/// An HTTP/1.1 and HTTP/2 client on libcurl's multi interface, for the push services that
/// speak HTTP/1.1 or HTTP/2 over libcurl: many small JSON requests to few hosts.
///
///     let client = try HTTPClient(label: "push")
///     let result = await client.execute(HTTPClientRequest(url: url, headers: headers, body: body))
///     client.shutdown()
///
/// One event thread per client drives every transfer: over TLS it negotiates HTTP/2 where the
/// server offers it (ALPN) and multiplexes concurrent requests on one connection per host
/// (up to `maxConnectionsPerHost` when a connection's streams are all in use); otherwise it keeps
/// HTTP/1.1 connections alive and reuses them. At most `maxInFlight` requests are in curl at
/// once; the rest wait in a FIFO.
public final class HTTPClient: Sendable {
    public struct Configuration: Sendable {
        /// A PEM bundle of CAs to trust instead of the system's (a test or private CA).
        public var caFile: String?
        /// TCP connect plus TLS handshake.
        public var connectTimeout: Duration
        /// Connections open at once to one host (and port).
        public var maxConnectionsPerHost: Int
        /// Streams at once on one HTTP/2 connection (lower if the server says so).
        public var maxConcurrentStreams: Int
        /// Requests handed to curl at once; the others wait in the client's FIFO.
        public var maxInFlight: Int
        public var userAgent: String
        /// Asked before every connection the client opens (each address curl tries, after its
        /// own resolution): false refuses it, and the request fails "AddressRefused" unless
        /// another address of the host is allowed. nil allows every address.
        public var connectAddressPolicy: (@Sendable (ConnectAddress) -> Bool)?

        public init(
            caFile: String? = nil, connectTimeout: Duration = .seconds(10), maxConnectionsPerHost: Int = 4,
            maxConcurrentStreams: Int = 1000, maxInFlight: Int = 2000, userAgent: String = "tuisong",
            connectAddressPolicy: (@Sendable (ConnectAddress) -> Bool)? = nil
        ) {
            self.connectAddressPolicy = connectAddressPolicy
            self.caFile = caFile
            self.connectTimeout = connectTimeout
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.maxConcurrentStreams = maxConcurrentStreams
            self.maxInFlight = maxInFlight
            self.userAgent = userAgent
        }
    }

    private let engine: CurlEngine

    /// Starts the client's event thread (named after `label`, at most 15 bytes kept).
    public init(
        configuration: Configuration = .init(), label: String, logger: Logger = Logger(label: "tuisong.http-client")
    ) throws(HTTPClientError) {
        let engine = try CurlEngine(configuration: configuration, label: label, logger: logger)
        try engine.start()
        self.engine = engine
    }

    deinit { engine.shutdown(releasingClient: true) }

    /// Sends `request`. Thread-safe; `completion` runs on the client's event thread and must be
    /// cheap (hand real work elsewhere) — every other transfer waits while it runs. After
    /// `shutdown()` it runs at once on the calling thread with code "Shutdown".
    public func execute(
        _ request: HTTPClientRequest,
        completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) {
        engine.submit(request, completion: completion)
    }

    /// Sends every request of `requests` (taking the client's queue lock and waking its thread
    /// once, however many there are). `completion` gets the answers in groups, each with its
    /// request's position in `requests`: all the answers that ended in one pass of the client's
    /// event loop come in one call, so it runs once per pass rather than once per request, on
    /// the client's event thread (cheap, as for `execute(_:completion:)`), until every request
    /// has had exactly one answer. After `shutdown()` it runs at once on the calling thread with
    /// every request failed "Shutdown".
    ///
    ///     client.execute(requests) { answers in
    ///         for (index, result) in answers { record(index, result) }
    ///     }
    public func execute(
        _ requests: [HTTPClientRequest],
        completion: @escaping @Sendable ([(index: Int, result: Result<HTTPClientResponse, HTTPClientError>)]) -> Void
    ) {
        engine.submit(requests, completion: completion)
    }

    /// Sends `request` and waits for its answer. Cancelling the waiting task does not stop the
    /// request: it ends with its answer or its timeout.
    public func execute(_ request: HTTPClientRequest) async -> Result<HTTPClientResponse, HTTPClientError> {
        await withCheckedContinuation { continuation in
            engine.submit(request) { continuation.resume(returning: $0) }
        }
    }

    public var statistics: HTTPClientStatistics { engine.counters.snapshot }

    /// Idempotent: fails queued and in-flight requests with code "Shutdown", closes the
    /// connections and joins the event thread (from a completion, it only asks the thread to stop).
    public func shutdown() {
        engine.shutdown()
    }
}
