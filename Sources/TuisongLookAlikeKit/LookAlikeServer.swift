import Logging
import Synchronization
public import TuisongCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The look-alikes' server: HTTP/2 over TLS on nghttp2's server API, one port for every
/// service its `LookAlikeRegistry` declares (each a `PortService`, asked in the registry's
/// order for each request: see `LookAlikeDeclaration` and `docs/reference/android.md`), with
/// connection faults injected on demand and connection counters (`statistics`); each service
/// validates, answers, records and counts its own requests.
///
///     let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.app")
///     let server = try LookAlikeServer(configuration: setup.configuration(), certificate: setup.serverCertificate,
///                                      key: setup.serverKey)
///     try server.start()
///     // point a client at https://127.0.0.1:\(server.port), trusting setup.caCertificatePEM
///     server.shutdown()
///
/// Served by `eventLoopThreads` epoll threads with non-blocking sockets and TLS; no thread per
/// connection or request.
public final class LookAlikeServer: Sendable {
    private enum Lifecycle {
        case idle
        case running(loops: [MockEventLoop], listenFD: Int32, port: Int)
        case stopped
    }

    private let core: MockServerCore
    private let lifecycle = Mutex(Lifecycle.idle)

    /// - Parameters:
    ///   - certificate, key, chain: the TLS server identity (e.g. `LookAlikeLocalSetup`'s).
    ///   - requestLog: receives one JSON line per request when `logRequests` is on; default stdout.
    ///     Called on event-loop threads.
    ///   - logger: lifecycle and connection errors.
    ///   - lookAlikes: the services' look-alikes it serves (`LookAlikeRegistry.standard` unless a
    ///     test adds one; the `TuisongLookAlikes` module's `init` without it uses that).
    public init(
        lookAlikes: LookAlikeRegistry, configuration: LookAlikeConfiguration, certificate: Certificate, key: PrivateKey,
        chain: [Certificate] = [], requestLog: (@Sendable (String) -> Void)? = nil,
        logger: Logger = Logger(label: "tuisong.look-alikes")
    ) throws {
        var clientCAs: [Certificate] = []
        for pem in configuration.clientCertificateCAPEMs {
            clientCAs += try Certificate.parseChain(pem: pem)
        }
        let tlsContext = try TLSContext.server(
            certificate: certificate, key: key, chain: chain, alpn: ["h2"],
            clientCertificateCAs: clientCAs.isEmpty ? nil : clientCAs)
        var log = requestLog
        if configuration.logRequests && log == nil {
            log = { line in print(line) }
        }
        core = try MockServerCore(
            configuration: configuration, lookAlikes: lookAlikes, tlsContext: tlsContext,
            requestLog: configuration.logRequests ? log : nil, logger: logger)
    }

    deinit { shutdown() }

    public var configuration: LookAlikeConfiguration { core.configuration }

    /// Binds, listens and starts the event loops. Throws if already started or stopped.
    /// Ignores SIGPIPE for the process: OpenSSL writes with write(2), and a client that hangs
    /// up mid-answer would otherwise end whatever process embeds the mock.
    public func start() throws {
        signal(SIGPIPE, SIG_IGN)
        try lifecycle.withLock { lifecycle in
            guard case .idle = lifecycle else {
                throw LookAlikeServerError(operation: "start", code: 0, message: "the server was already started")
            }
            let configuration = core.configuration
            let (listenFD, port) = try Self.listen(host: configuration.host, port: configuration.port)
            var loops: [MockEventLoop] = []
            do {
                for index in 0..<max(1, configuration.eventLoopThreads) {
                    loops.append(try MockEventLoop(core: core, index: index))
                }
                try loops[0].adoptListener(listenFD, siblings: loops)
                for loop in loops { try loop.start() }
            } catch {
                for loop in loops {
                    loop.requestStop()
                    loop.join()
                }
                Glibc.close(listenFD)
                throw error
            }
            core.logger.info(
                "look-alike server listening", metadata: ["host": "\(configuration.host)", "port": "\(port)"])
            lifecycle = .running(loops: loops, listenFD: listenFD, port: port)
        }
    }

    /// The bound port (useful with `port: 0`); 0 before `start()` and after `shutdown()`.
    public var port: Int {
        lifecycle.withLock { lifecycle in
            if case .running(_, _, let port) = lifecycle { return port }
            return 0
        }
    }

    /// Sends GOAWAY on every connection, closes them and the listener, and joins the threads.
    /// Idempotent; a stopped server cannot be started again.
    public func shutdown() {
        let running = lifecycle.withLock { lifecycle -> ([MockEventLoop], Int32)? in
            defer { lifecycle = .stopped }
            if case .running(let loops, let listenFD, _) = lifecycle { return (loops, listenFD) }
            return nil
        }
        guard let (loops, listenFD) = running else { return }
        for loop in loops { loop.requestStop() }
        for loop in loops { loop.join() }
        Glibc.close(listenFD)
        core.logger.info("look-alike server stopped")
    }

    /// The connection counters since start or the last `resetStatistics()` (each look-alike's
    /// own are its accessors').
    public var statistics: LookAlikeServerStatistics { core.recorder.statistics }

    /// Forgets what every look-alike recorded.
    public func resetRecorded() {
        core.host.recorder.resetMessages()
        for service in core.lookAlikes.services { service.resetRecorded() }
    }

    /// Zeroes the counters, the connections' and every look-alike's (open connections stay counted).
    public func resetStatistics() {
        core.recorder.resetStatistics()
        core.host.recorder.resetStatistics()
        for service in core.lookAlikes.services { service.resetStatistics() }
    }

    /// The counters of `service`'s look-alike as the CLI's look-alike command prints them; empty when
    /// this server has none.
    public func statisticsSummary(of service: AndroidPushService) -> [String: Int] {
        core.lookAlikes.service(service)?.statisticsSummary() ?? [:]
    }

    // MARK: The look-alikes

    /// Per-service counters of the token-based look-alikes since start or the last `resetStatistics()`.
    public var androidStatistics: AndroidMockStatistics { core.host.recorder.statistics }

    /// The most recent accepted send requests of the token-based look-alikes (up to
    /// `recordedNotificationLimit`), oldest first.
    public func receivedAndroidMessages() -> [ReceivedAndroidMessage] { core.host.recorder.messages() }

    /// The services whose look-alikes this server runs.
    public var lookAlikeServices: [AndroidPushService] { core.lookAlikes.services.map(\.service) }

    /// The running look-alike of `service`, for its folder's own accessors (its `trust…` methods).
    package func lookAlike(_ service: AndroidPushService) -> (any PortService)? {
        core.lookAlikes.service(service)
    }

    /// Teaches the look-alike of `channel` a stored credential (an uploaded service account, a
    /// client, an app, a token key: in the channel credential's shape), so local mode delivers
    /// with it as the real service would. False when this server has no look-alike of `channel`.
    @discardableResult
    public func trust(channel: String, vendorAppID: String, clientID: String, secret: [UInt8]) throws -> Bool {
        guard let lookAlike = core.lookAlikes.service(AndroidPushService(channel)) else { return false }
        try lookAlike.trust(vendorAppID: vendorAppID, clientID: clientID, secret: secret)
        return true
    }

    /// From now on, sends the delivery receipts of accepted pushes the way each service does
    /// (as its look-alike declares them), to the receipt configuration `sink` names for each
    /// push (local mode: the gateway's own `/receipts/{channel}/{app}`).
    public func sendReceipts(to sink: any LookAlikeReceiptSink) {
        core.host.receiptSink.withLock { $0 = sink }
    }

    /// Every access token issued so far expires now: its next use is answered as an expired
    /// token in the service's words, so a client's "refresh once and resend" path can be exercised.
    public func revokeAccessTokens() { core.host.tokens.revokeAll() }

    /// The faults in force.
    public var faults: LookAlikeConfiguration.Faults { core.faultBoard.faults }

    /// Replaces the faults; requests completing after this call see the new ones.
    public func setFaults(_ faults: LookAlikeConfiguration.Faults) { core.faultBoard.replace(faults) }

    // MARK: Listening socket

    private static func listen(host: String, port: Int) throws(LookAlikeServerError) -> (Int32, Int) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw LookAlikeServerError(
                operation: "getaddrinfo", code: Int(status),
                message: "\(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        let address = first.pointee
        let fd = socket(
            address.ai_family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .posix("socket") }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, address.ai_addr, address.ai_addrlen) == 0 else {
            let error = LookAlikeServerError.posix("bind \(host):\(port)")
            Glibc.close(fd)
            throw error
        }
        guard Glibc.listen(fd, 1024) == 0 else {
            let error = LookAlikeServerError.posix("listen")
            Glibc.close(fd)
            throw error
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            let error = LookAlikeServerError.posix("getsockname")
            Glibc.close(fd)
            throw error
        }
        let family = storage.ss_family
        let boundPort = withUnsafePointer(to: &storage) { pointer -> UInt16 in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
        }
        return (fd, Int(UInt16(bigEndian: boundPort)))
    }
}
