internal import CMicroHTTPD
internal import CTuisongShims
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server on libmicrohttpd: a pool of poll(2) threads reads requests, the router
/// picks a handler, and each handler runs as a Swift task while its connection is suspended,
/// so no server thread ever waits for a handler.
///
///     let server = HTTPServer(configuration: .init(port: 0), router: router)
///     try server.start()
///     print(server.port)
///     ...
///     await server.shutdown()
public final class HTTPServer: Sendable {
    public struct Configuration: Sendable {
        /// A numeric IPv4 or IPv6 address or a host name to resolve (`0.0.0.0` for all).
        public var host: String
        /// 0 picks a free port; read it back from `HTTPServer.port`.
        public var port: Int
        /// libmicrohttpd worker threads, each polling its own share of the connections.
        public var threads: Int
        /// Seconds a connection may stay silent (idle keep-alive, or a client that stops
        /// sending mid-request) before it is closed. Whole seconds; 0 disables.
        public var connectionTimeout: Double
        /// Seconds a handler may take; past that the client gets 503 `request_timeout` in the
        /// route's dialect, the handler task is cancelled and its late answer dropped. 0 or less
        /// disables the limit.
        public var requestTimeout: Double
        /// Room for the request line and headers. Requests up to this size are accepted; a
        /// larger one is answered in the route's dialect, 414 when the request line alone is
        /// over it, else 431, and its connection closed. libmicrohttpd's per-connection memory
        /// pool is four times this size so that such requests reach Tuisong; one too large even
        /// for the pool is answered by libmicrohttpd itself, 414 or 431 with a small HTML body
        /// (see docs/security.md).
        public var maxHeaderBytes: Int
        /// Seconds a request may take to arrive, from its request line to its last body byte,
        /// however steadily the client trickles it; the connection is then closed. A connection
        /// that sends no request line is closed after the longer of this and
        /// `connectionTimeout`. 0 disables.
        public var receiveTimeout: Double
        /// Concurrent connections accepted; more wait in the listen backlog.
        public var maxConnections: Int
        /// Concurrent connections one client address may hold; more are closed at once. Never
        /// more than `maxConnections` less a sixteenth (at least one), so one address cannot take
        /// every connection and a health check from elsewhere still gets in.
        public var maxConnectionsPerAddress: Int
        /// How long `shutdown()` lets in-flight requests finish before answering them 503.
        public var shutdownGracePeriod: Double
        /// After the grace period, how long `shutdown()` still waits for requests that were
        /// uploading to finish their body, so they can be answered 503 (libmicrohttpd cannot
        /// answer a request mid-body); one still uploading after that is closed unanswered.
        public var shutdownAnswerWindow: Double
        /// Serve HTTPS with this certificate chain and key (PEM text) instead of plain HTTP.
        public var tls: TLS?
        /// What a request body sent with `Transfer-Encoding: chunked` gets.
        public var chunkedRequests: ChunkedRequests
        /// Receives libmicrohttpd's own log lines (malformed requests, resource limits...).
        public var diagnostics: (@Sendable (String) -> Void)?

        /// Whether request bodies without a `Content-Length` are taken.
        ///
        /// libmicrohttpd decodes a chunked body itself and reads a bare LF as a line end where
        /// RFC 9112 §7.1 asks for CRLF; a proxy in front that reads it strictly frames the rest
        /// differently. Every vendor SDK, browser and `curl -d` sends `Content-Length`, so by
        /// default a chunked request is refused: 411 Length Required in the route's dialect, the
        /// connection closed. `.accept` takes chunked bodies with libmicrohttpd's leniency
        /// (docs/security.md).
        public enum ChunkedRequests: String, Sendable, CaseIterable {
            case refuse
            case accept
        }

        public struct TLS: Sendable {
            public var certificateChainPEM: String
            public var privateKeyPEM: String

            public init(certificateChainPEM: String, privateKeyPEM: String) {
                self.certificateChainPEM = certificateChainPEM
                self.privateKeyPEM = privateKeyPEM
            }
        }

        public init(
            host: String = "127.0.0.1", port: Int = 8080, threads: Int = HTTPServer.coreCount,
            connectionTimeout: Double = 30, requestTimeout: Double = 30,
            maxHeaderBytes: Int = 16 * 1024, receiveTimeout: Double = 30, maxConnections: Int = 4096,
            maxConnectionsPerAddress: Int = 256, shutdownGracePeriod: Double = 10,
            shutdownAnswerWindow: Double = 5, tls: TLS? = nil, chunkedRequests: ChunkedRequests = .refuse,
            diagnostics: (@Sendable (String) -> Void)? = nil
        ) {
            self.host = host
            self.port = port
            self.threads = threads
            self.connectionTimeout = connectionTimeout
            self.requestTimeout = requestTimeout
            self.maxHeaderBytes = maxHeaderBytes
            self.receiveTimeout = receiveTimeout
            self.maxConnections = maxConnections
            self.maxConnectionsPerAddress = maxConnectionsPerAddress
            self.shutdownGracePeriod = shutdownGracePeriod
            self.shutdownAnswerWindow = shutdownAnswerWindow
            self.tls = tls
            self.chunkedRequests = chunkedRequests
            self.diagnostics = diagnostics
        }
    }

    /// The per-address limit handed to libmicrohttpd: the configured one, but always leaving a
    /// sixteenth of `maxConnections` (at least one connection) to other addresses.
    public static func effectivePerAddressLimit(maxConnections: Int, maxConnectionsPerAddress: Int) -> Int {
        let reserved = max(1, maxConnections / 16)
        return max(1, min(maxConnectionsPerAddress, maxConnections - reserved))
    }

    /// Online processor cores, the default thread count.
    public static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    public let configuration: Configuration
    private let core: ServerCore
    private let state = Mutex(State.idle)

    private enum State {
        case idle
        case running(Running)
        case stopping(Task<Void, Never>)
        case stopped
    }

    private struct Running {
        let daemon: MHDDaemon
        let listener: Int32
        let port: Int
        let sweeper: Task<Void, Never>
    }

    public init(configuration: Configuration, router: Router) {
        self.configuration = configuration
        self.core = ServerCore(router: router, configuration: configuration)
    }

    deinit {
        // Without shutdown(): stop at once, after answering suspended requests so that
        // MHD_stop_daemon finds none.
        if case .running(let running) = state.withLock({ $0 }) {
            running.sweeper.cancel()
            core.shuttingDown.store(true, ordering: .relaxed)
            core.abandonAllPending(with: .serviceUnavailable("the server is shutting down"))
            core.connections.stop()
            running.daemon.stop()
            close(running.listener)
        }
    }

    /// Binds and starts serving. Throws `HTTPServerError` with the system's reason (e.g.
    /// "Address already in use") or libmicrohttpd's.
    public func start() throws {
        try state.withLock { state in
            guard case .idle = state else {
                throw HTTPServerError(
                    operation: "start", errno: nil, message: "the server was already started")
            }
            let listener = try ListeningSocket(
                host: configuration.host, port: configuration.port,
                backlog: max(128, min(configuration.maxConnections, 4096)))
            let daemon: MHDDaemon
            do {
                daemon = try MHDDaemon(
                    core: core, configuration: configuration, listenSocket: listener.descriptor,
                    isIPv6: listener.isIPv6)
            } catch {
                listener.closeIfStillOurs()
                throw error
            }
            // Timeouts fire within a twentieth of the limit (10 ms to 250 ms late). Wall-clock
            // time, not the injected clock: the timeouts are owed to peers on real sockets.
            let timeout = configuration.requestTimeout
            let tick = Duration.milliseconds(
                Int64(timeout > 0 ? min(250, max(10, timeout * 1000 / 20)) : 250))
            let sweeper = Task.detached { [core] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: tick)
                    core.expireOverdue(now: .now)
                }
            }
            state = .running(
                Running(
                    daemon: daemon, listener: listener.descriptor, port: listener.port,
                    sweeper: sweeper))
        }
    }

    /// The bound port once started (the real one when configured with 0), else the configured
    /// one.
    public var port: Int {
        state.withLock { state in
            if case .running(let running) = state { return running.port }
            return configuration.port
        }
    }

    /// Stops accepting connections, lets in-flight requests finish (up to
    /// `shutdownGracePeriod`, then answers the rest 503 — a request still uploading as soon as
    /// its body is in, within `shutdownAnswerWindow`), and stops the daemon. Answers sent
    /// meanwhile carry `Connection: close`. Every caller returns once the server has stopped;
    /// calling it again afterwards (or before `start()`) does nothing.
    public func shutdown() async {
        let stopping: Task<Void, Never>? = state.withLock { state in
            switch state {
            case .idle, .stopped:
                return nil
            case .stopping(let task):
                return task
            case .running(let running):
                let task = Task { [core, configuration] in
                    await Self.stop(
                        running, core: core, gracePeriod: configuration.shutdownGracePeriod,
                        answerWindow: configuration.shutdownAnswerWindow)
                }
                state = .stopping(task)
                return task
            }
        }
        guard let stopping else { return }
        await stopping.value
        state.withLock { $0 = .stopped }
    }

    private static func stop(
        _ running: Running, core: ServerCore, gracePeriod: Double, answerWindow: Double
    ) async {
        core.shuttingDown.store(true, ordering: .relaxed)
        running.daemon.quiesce()
        close(running.listener)

        // Real time: the grace period is given to clients on real sockets, and libmicrohttpd
        // tells nobody when its last exchange ends, so the count is polled.
        let clock = ContinuousClock()
        let grace = clock.now + .milliseconds(Int64(max(0, gracePeriod) * 1000))
        while core.liveExchanges.load(ordering: .relaxed) > 0 && clock.now < grace {
            try? await Task.sleep(for: .milliseconds(5))
        }
        // From here every request still arriving is answered 503: those with a handler now,
        // those still uploading once their body is in (see `Exchange.step`).
        core.graceOver.store(true, ordering: .relaxed)
        core.abandonAllPending(with: .serviceUnavailable("the server is shutting down"))
        // Give the answers just released a moment to be written, and uploads a moment to end
        // so they can be answered, before connections close.
        let flush = clock.now + .milliseconds(Int64(max(1, answerWindow) * 1000))
        while core.liveExchanges.load(ordering: .relaxed) > 0 && clock.now < flush {
            try? await Task.sleep(for: .milliseconds(5))
        }
        running.sweeper.cancel()
        core.connections.stop()
        running.daemon.stop()
    }

    /// Requests MHD has started and not yet completed (for tests).
    var liveRequestCount: Int { core.liveExchanges.load(ordering: .relaxed) }
    /// A shutdown's grace period ended: requests still in are answered 503 (for tests).
    var graceIsOver: Bool { core.graceOver.load(ordering: .relaxed) }
    /// Handlers running on a suspended connection (for tests).
    var pendingHandlerCount: Int { core.pending.count }
}

/// Owns one `MHD_Daemon`. `@unchecked Sendable`: the pointer is only passed to
/// `MHD_quiesce_daemon` and `MHD_stop_daemon`, which libmicrohttpd allows from any thread;
/// `lifecycle` (under a lock) orders them and makes each happen once.
final class MHDDaemon: @unchecked Sendable {
    private let daemon: OpaquePointer
    private enum Lifecycle { case serving, quiesced, stopped }
    private let lifecycle = Mutex(Lifecycle.serving)
    /// MHD keeps pointers to the PEM strings; they live as long as the daemon.
    private let tlsKey: UnsafeMutablePointer<CChar>?
    private let tlsCertificate: UnsafeMutablePointer<CChar>?

    init(
        core: ServerCore, configuration: HTTPServer.Configuration, listenSocket: Int32, isIPv6: Bool
    )
        throws(HTTPServerError)
    {
        // poll(2), not epoll: with epoll, libmicrohttpd 0.9.75's MHD_quiesce_daemon races a
        // worker removing the listening socket from the same epoll set, and the loser's
        // epoll_ctl(DEL) answers ENOENT, on which MHD aborts the process ("Failed to remove
        // listen FD from epoll set", seen in our shutdown tests under load; an open MHD defect).
        // With poll, quiescing signals the workers through their inter-thread channel instead.
        // Each worker polls only its own share of the connections, so poll's cost stays small.
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ERROR_LOG.rawValue
            | MHD_USE_TURBO.rawValue
        if isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        if configuration.tls != nil {
            guard MHD_is_feature_supported(.FEATURE_TLS) == MHD_Result.YES else {
                throw HTTPServerError(
                    operation: "start HTTPS", errno: nil,
                    message: "this libmicrohttpd was built without TLS support")
            }
            flags |= MHD_USE_TLS.rawValue
        }
        tlsKey = configuration.tls.map { strdup($0.privateKeyPEM) }
        tlsCertificate = configuration.tls.map { strdup($0.certificateChainPEM) }

        let coreContext = Unmanaged.passUnretained(core).toOpaque()
        var options = tuisong_mhd_daemon_config()
        options.flags = flags
        options.listen_fd = listenSocket
        options.thread_pool_size = UInt32(max(1, configuration.threads))
        options.connection_timeout_seconds = UInt32(
            max(0, configuration.connectionTimeout.rounded(.up)))
        options.connection_memory_limit = Self.memoryLimit(
            maxHeaderBytes: configuration.maxHeaderBytes)
        options.connection_limit = UInt32(max(1, configuration.maxConnections))
        options.per_ip_connection_limit = UInt32(
            HTTPServer.effectivePerAddressLimit(
                maxConnections: max(1, configuration.maxConnections),
                maxConnectionsPerAddress: configuration.maxConnectionsPerAddress))
        options.notify_connection = MHDCallbacks.notifyConnection
        options.notify_connection_cls = coreContext
        options.access_handler = MHDCallbacks.accessHandler
        options.request_completed = MHDCallbacks.requestCompleted
        options.uri_log = MHDCallbacks.uriLog
        options.uri_log_cls = coreContext
        options.unescape = MHDCallbacks.keepEscaped
        options.logger = MHDCallbacks.logger
        options.logger_cls = coreContext
        options.tls_key_pem = UnsafePointer(tlsKey)
        options.tls_cert_pem = UnsafePointer(tlsCertificate)

        core.recentLibraryMessages.withLock { $0.removeAll() }
        guard let daemon = tuisong_mhd_start_daemon(&options) else {
            let code = errno
            free(tlsKey)
            free(tlsCertificate)
            let messages = core.recentLibraryMessages.withLock { $0 }
            throw HTTPServerError(
                operation: "start libmicrohttpd", errno: messages.isEmpty ? code : nil,
                message: messages.isEmpty
                    ? String(cString: strerror(code)) : messages.joined(separator: " "))
        }
        self.daemon = daemon
    }

    /// The per-connection memory pool (MHD_OPTION_CONNECTION_MEMORY_LIMIT): the request line
    /// and headers must fit with room left for MHD's bookkeeping (one record per header) and
    /// the response headers. Measured on 0.9.75: with only a few KiB of slack, a request near
    /// the budget left too little room and MHD closed the connection without an answer; at 2×
    /// every request shape tried was answered. At 4×, a request up to about twice the budget
    /// still fits and reaches Tuisong, which answers 414/431 in JSON; only beyond that does
    /// libmicrohttpd answer on its own, in HTML. The cost: 0.9.75 zeroes the whole pool when a
    /// keep-alive connection's next request begins (`MHD_pool_reset`), 64 KiB at the default
    /// budget, ~1.7 % of the CPU of a chat line (perf, Easemob on SQLite); a smaller pool would
    /// answer the large requests above in MHD's HTML instead.
    static func memoryLimit(maxHeaderBytes: Int) -> Int {
        max(8 * 1024, 4 * maxHeaderBytes)
    }

    /// Stops accepting; open connections carry on. MHD hands the listening socket back and
    /// no longer closes it: it is TuisongHTTP's (created by `ListeningSocket`, closed by
    /// `HTTPServer`).
    func quiesce() {
        lifecycle.withLock { lifecycle in
            guard lifecycle == .serving else { return }
            lifecycle = .quiesced
            _ = MHD_quiesce_daemon(daemon)
        }
    }

    /// Closes every connection and joins MHD's threads.
    func stop() {
        lifecycle.withLock { lifecycle in
            if lifecycle == .stopped { return }
            if lifecycle == .serving { _ = MHD_quiesce_daemon(daemon) }
            lifecycle = .stopped
            MHD_stop_daemon(daemon)
            free(tlsKey)
            free(tlsCertificate)
        }
    }

    deinit {
        stop()
    }
}
