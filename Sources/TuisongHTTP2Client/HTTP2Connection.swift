internal import CNGHTTP2
import Foundation
import TuisongCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// What a connection tells its pool. Called on the loop thread, never from inside an nghttp2
/// callback (events are collected during `nghttp2_session_mem_recv` and delivered after it).
protocol HTTP2ConnectionDelegate: AnyObject {
    /// TLS is up, `h2` negotiated, and the server's first SETTINGS arrived.
    func connectionBecameReady(_ connection: HTTP2Connection)
    /// A stream ended: with a response (`stream.status != 0`), refused by the server
    /// (`stream.refused`), or reset with `errorCode`.
    func connection(_ connection: HTTP2Connection, closed stream: HTTP2Stream, errorCode: UInt32)
    /// The server sent GOAWAY; the connection accepts no new streams.
    func connection(
        _ connection: HTTP2Connection, receivedGoAway lastStreamID: Int32, errorCode: UInt32,
        debugData: String)
    /// After a batch of events: new streams may fit, queued requests can be assigned.
    func connectionMayAcceptStreams(_ connection: HTTP2Connection)
    /// The connection is gone. `error` is nil for an orderly close. `unanswered` are the
    /// streams that had no response yet, in submission order.
    func connection(
        _ connection: HTTP2Connection, closedWith error: HTTP2ClientError?, wasReady: Bool,
        unanswered: [HTTP2Stream])
}

/// One request's stream on a connection.
final class HTTP2Stream {
    let request: PendingRequest
    /// The `:status`, 0 until the response headers arrived.
    var status = 0
    /// The response headers the pool keeps (`Settings.keptResponseHeaders`): which one, and its value.
    var keptHeaders: [(index: Int, value: String)] = []
    var body: [UInt8] = []
    var payloadOffset = 0
    /// The server will never process this stream: above a GOAWAY's last stream id, reset with
    /// REFUSED_STREAM, or never sent because a GOAWAY arrived first. Safe to retry.
    var refused = false

    init(request: PendingRequest) {
        self.request = request
    }

    /// The answer as the pool hands it out: the kept headers named.
    func response(keptHeaderNames: [String]) -> HTTP2Response {
        HTTP2Response(
            status: status, headers: keptHeaders.map { (name: keptHeaderNames[$0.index], value: $0.value) },
            body: body)
    }
}

/// One HTTP/2 connection to a server: a non-blocking TCP socket, a TLS session and an nghttp2
/// client session, all driven by the pool's event loop and confined to its thread.
final class HTTP2Connection: EventLoopFileHandler {
    struct Settings {
        var endpoint: HTTP2Endpoint
        var connectTimeout: Duration
        var pingInterval: Duration
        /// A PING not acknowledged within this time means the connection is dead.
        var pingTimeout: Duration
        /// The pool's own authorization, if any: one stream until an answer on this connection
        /// shows it accepted.
        var authorizer: (any HTTP2Authorizer)?
        /// The response headers kept for the answer, lower-case names.
        var keptResponseHeaders: [String] = []
        /// At most this much of a response body is kept; a misbehaving server cannot make us
        /// hold more.
        var maxResponseBodyBytes = 16 * 1024
    }

    enum State: Equatable {
        case resolving, connecting, handshaking, awaitingSettings, ready, closed
    }

    let id: Int
    let settings: Settings
    private let loop: EventLoop
    private let tlsContext: TLSContext
    /// The pool (or the tester's probe). Not retained, and not `weak` either: a weak
    /// reference gives the pool a side table that makes every retain of it slow. The delegate
    /// outlives its connections: it is only called on the loop thread, which it keeps alive.
    unowned(unsafe) var delegate: (any HTTP2ConnectionDelegate)?

    private(set) var state = State.resolving
    private var hasBeenReady = false
    /// No new streams: GOAWAY received, stream ids exhausted, or the pool retired it.
    private(set) var isGoingAway = false
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (0 until its first SETTINGS).
    private(set) var remoteMaxConcurrentStreams = 0
    /// An answer on this connection showed the pool's authorization accepted
    /// (`HTTP2Authorizer.answerProvesAuthorized`).
    private(set) var authenticationConfirmed = false
    /// Peak of `streams.count`, for statistics and tests.
    private(set) var peakConcurrentStreams = 0
    private(set) var streamsOpened = 0
    /// Keepalive PINGs the server acknowledged.
    private(set) var pingsAcknowledged = 0
    var needsFlush = false

    fileprivate(set) var streams: [Int32: HTTP2Stream] = [:]
    private var addresses: [SocketAddress] = []
    private var addressIndex = 0
    private var lastAddressError: String?
    private var fd: Int32 = -1
    private var registration: FileRegistration?
    private var writeEventsEnabled = false
    private var tls: TLSConnection?
    /// `TLSv1.3` / `TLSv1.2`, once the handshake finished.
    private(set) var tlsVersion: String?
    private var session: OpaquePointer?

    private var connectTimer: TimerID?
    private var keepaliveTimer: TimerID?
    private var lastActivity: UInt64 = 0
    private var pingSentAt: UInt64?

    private let readBuffer: UnsafeMutableRawBufferPointer
    private var outBuffer: [UInt8] = []
    private var outOffset = 0
    private var headerScratch = HTTP2HeaderBlock()
    private var nameValueScratch: [nghttp2_nv] = []
    private let authorityBytes: [UInt8]
    /// `settings.keptResponseHeaders` as bytes, for the header callback's comparisons.
    fileprivate let keptHeaderBytes: [[UInt8]]

    // Events recorded by nghttp2 callbacks during mem_recv/mem_send, delivered afterwards.
    fileprivate var closedStreams: [(stream: HTTP2Stream, errorCode: UInt32)] = []
    private var closedStreamsScratch: [(stream: HTTP2Stream, errorCode: UInt32)] = []
    fileprivate var receivedSettings = false
    fileprivate var receivedGoAway: (lastStreamID: Int32, errorCode: UInt32, debugData: String)?

    init(id: Int, settings: Settings, loop: EventLoop, tlsContext: TLSContext) {
        self.id = id
        self.settings = settings
        self.loop = loop
        self.tlsContext = tlsContext
        authorityBytes = Array(settings.endpoint.authority.utf8)
        keptHeaderBytes = settings.keptResponseHeaders.map { Array($0.utf8) }
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        outBuffer.reserveCapacity(64 * 1024)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        if fd >= 0 { Glibc.close(fd) }
        readBuffer.deallocate()
    }

    var inFlight: Int { streams.count }

    /// The streams this connection may have open now: the server's limit, or one while the
    /// pool's authorization is unconfirmed.
    var streamLimit: Int {
        if settings.authorizer != nil && !authenticationConfirmed {
            return min(1, remoteMaxConcurrentStreams)
        }
        return remoteMaxConcurrentStreams
    }

    /// How many more requests can be submitted now.
    var availableStreams: Int {
        guard state == .ready, !isGoingAway else { return 0 }
        return max(0, streamLimit - streams.count)
    }

    // MARK: Connecting

    /// Starts resolving and connecting; the connect timeout covers DNS, TCP, TLS and the
    /// server's first SETTINGS.
    func start() {
        loop.assertOnLoop()
        // Timers hold the connection until they fire or `close` cancels them.
        connectTimer = loop.schedule(after: settings.connectTimeout) { [self] in
            guard self.state != .ready, self.state != .closed else { return }
            let detail = self.lastAddressError.map { " (\($0))" } ?? ""
            self.close(
                HTTP2ClientError(
                    .connectFailed,
                    "connect to \(self.settings.endpoint) timed out after "
                        + "\(self.settings.connectTimeout) while \(self.state)\(detail)"))
        }
        let endpoint = settings.endpoint
        let loop = self.loop
        let handle = LoopBound(self)
        Resolver.resolveInBackground(host: endpoint.host, port: endpoint.port) { result in
            loop.execute {
                let connection = handle.value
                guard connection.state == .resolving else { return }
                switch result {
                case .success(let addresses):
                    connection.addresses = addresses
                    connection.connectNextAddress()
                case .failure(let error):
                    connection.close(error)
                }
            }
        }
    }

    private func connectNextAddress() {
        while addressIndex < addresses.count {
            let address = addresses[addressIndex]
            addressIndex += 1
            let socketFD = socket(
                address.family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                    | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socketFD >= 0 else {
                lastAddressError = "socket: \(String(cString: strerror(errno)))"
                continue
            }
            var one: Int32 = 1
            setsockopt(
                socketFD, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)
            )
            let result = address.withSockAddr { connect(socketFD, $0, $1) }
            if result == 0 || errno == EINPROGRESS {
                fd = socketFD
                state = .connecting
                registration = loop.register(
                    fd: socketFD, events: EPOLLOUT.rawValue, handler: self)
                writeEventsEnabled = true
                return
            }
            lastAddressError = "connect \(address): \(String(cString: strerror(errno)))"
            Glibc.close(socketFD)
        }
        close(
            HTTP2ClientError(
                .connectFailed,
                "connect to \(settings.endpoint) failed: \(lastAddressError ?? "no address")"))
    }

    private func finishTCPConnect() {
        var socketError: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketError, &length)
        guard socketError == 0 else {
            let address = addresses[addressIndex - 1]
            lastAddressError = "connect \(address): \(String(cString: strerror(socketError)))"
            if let registration { loop.unregister(registration) }
            registration = nil
            Glibc.close(fd)
            fd = -1
            connectNextAddress()
            return
        }
        do {
            tls = try TLSConnection(
                context: tlsContext, fileDescriptor: fd, serverName: settings.endpoint.host)
        } catch {
            close(HTTP2ClientError(.tlsFailed, "TLS setup: \(error.message)"))
            return
        }
        state = .handshaking
        continueHandshake()
    }

    private func continueHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .done:
            tlsVersion = tls.protocolVersion
            guard tls.negotiatedALPN == "h2" else {
                let selected = tls.negotiatedALPN.map { "\"\($0)\"" } ?? "none"
                close(
                    HTTP2ClientError(
                        .alpnNotNegotiated,
                        "\(settings.endpoint) did not negotiate HTTP/2 through ALPN "
                            + "(offered \"h2\", server selected \(selected))"))
                return
            }
            do {
                try startHTTP2()
            } catch {
                close(error)
                return
            }
            state = .awaitingSettings
            setWriteEvents(false)
            flush()
        case .wantRead:
            setWriteEvents(false)
        case .wantWrite:
            setWriteEvents(true)
        case .closed:
            // A reset or EOF mid-handshake is a transport failure (a restarting server), not
            // a verdict on certificates: keep it retryable.
            close(
                HTTP2ClientError(
                    .connectFailed,
                    "\(settings.endpoint) closed the connection during the TLS handshake"))
        case .failed(let error):
            close(
                HTTP2ClientError(
                    error.code == .certificateRejectedByPeer ? .certificateRejected : .tlsFailed,
                    "TLS handshake with \(settings.endpoint): \(error.message)"))
        }
    }

    private func startHTTP2() throws(HTTP2ClientError) {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw HTTP2ClientError(.protocolError, "nghttp2_session_callbacks_new failed")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, HTTP2Callbacks.onFrameRecv)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, HTTP2Callbacks.onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
            callbacks, HTTP2Callbacks.onDataChunkRecv)
        nghttp2_session_callbacks_set_on_stream_close_callback(
            callbacks, HTTP2Callbacks.onStreamClose)
        nghttp2_session_callbacks_set_on_frame_not_send_callback(
            callbacks, HTTP2Callbacks.onFrameNotSend)

        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw HTTP2ClientError(.protocolError, "nghttp2_option_new failed")
        }
        defer { nghttp2_option_del(option) }
        // Until the server's SETTINGS arrive nothing is submitted anyway; this keeps nghttp2's
        // own view conservative too.
        nghttp2_option_set_peer_max_concurrent_streams(option, 1)

        var newSession: OpaquePointer?
        let context = Unmanaged.passUnretained(self).toOpaque()
        let result = nghttp2_session_client_new2(&newSession, callbacks, context, option)
        guard result == 0, let newSession else {
            throw HTTP2ClientError(
                .protocolError, "nghttp2_session_client_new2: \(HTTP2Callbacks.describe(result))")
        }
        session = newSession
        var entries = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        let submitted = nghttp2_submit_settings(
            newSession, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        guard submitted == 0 else {
            throw HTTP2ClientError(
                .protocolError, "nghttp2_submit_settings: \(HTTP2Callbacks.describe(submitted))")
        }
    }

    // MARK: Events

    func handleEvents(_ events: UInt32) {
        switch state {
        case .connecting:
            finishTCPConnect()
        case .handshaking:
            continueHandshake()
        case .awaitingSettings, .ready:
            if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                guard readAvailable() else { return }
            }
            deliverEvents()
            if state != .closed { flush() }
        case .resolving, .closed:
            break
        }
    }

    /// Reads and feeds nghttp2 until the socket would block; false when the connection closed.
    private func readAvailable() -> Bool {
        guard let tls, let session else { return false }
        var receivedData = false
        defer { if receivedData { lastActivity = MonotonicTime.now() } }
        while true {
            switch tls.read(into: readBuffer) {
            case .done(let count):
                receivedData = true
                let consumed = nghttp2_session_mem_recv(
                    session, readBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self), count)
                if consumed < 0 {
                    deliverEvents()
                    close(
                        HTTP2ClientError(
                            .protocolError,
                            "HTTP/2 from \(settings.endpoint): "
                                + HTTP2Callbacks.describe(Int32(consumed))))
                    return false
                }
            case .wantRead:
                return true
            case .wantWrite:
                setWriteEvents(true)
                return true
            case .closed:
                deliverEvents()
                guard state != .closed else { return false }
                closeAfterPeerEnded(detail: "\(settings.endpoint) closed the connection")
                return false
            case .failed(let error):
                deliverEvents()
                guard state != .closed else { return false }
                if error.code == .certificateRejectedByPeer {
                    // TLS 1.3: the server's verdict on our certificate arrives after our side
                    // of the handshake finished, as the first thing we read.
                    close(
                        HTTP2ClientError(
                            .certificateRejected,
                            "\(settings.endpoint) refused the client certificate: \(error.message)"))
                } else {
                    closeAfterPeerEnded(detail: error.message)
                }
                return false
            }
        }
    }

    /// The peer closed or reset the socket. After its GOAWAY with every stream answered that
    /// is the expected end (servers rarely send close_notify, which OpenSSL 3 reports as an
    /// "unexpected eof" error); otherwise the open streams were lost with the connection.
    private func closeAfterPeerEnded(detail: String) {
        if isGoingAway && streams.isEmpty {
            close(nil)
        } else {
            close(HTTP2ClientError(.connectionLost, detail))
        }
    }

    /// Hands the events recorded by the callbacks to the pool.
    private func deliverEvents() {
        if receivedSettings, let session {
            receivedSettings = false
            remoteMaxConcurrentStreams = Int(
                nghttp2_session_get_remote_settings(
                    session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
            if state == .awaitingSettings {
                state = .ready
                hasBeenReady = true
                if let connectTimer { loop.cancel(connectTimer) }
                connectTimer = nil
                lastActivity = MonotonicTime.now()
                scheduleKeepalive()
                delegate?.connectionBecameReady(self)
            }
        }
        if !closedStreams.isEmpty {
            // Swapped with a scratch array so neither reallocates per batch.
            var closed = closedStreamsScratch
            swap(&closed, &closedStreams)
            for (stream, errorCode) in closed {
                if let authorizer = settings.authorizer, !authenticationConfirmed,
                    authorizer.answerProvesAuthorized(status: stream.status)
                {
                    authenticationConfirmed = true
                }
                delegate?.connection(self, closed: stream, errorCode: errorCode)
            }
            closed.removeAll(keepingCapacity: true)
            closedStreamsScratch = closed
        }
        if let goAway = receivedGoAway {
            receivedGoAway = nil
            delegate?.connection(
                self, receivedGoAway: goAway.lastStreamID, errorCode: goAway.errorCode,
                debugData: goAway.debugData)
        }
        guard state == .ready else { return }
        delegate?.connectionMayAcceptStreams(self)
        if isGoingAway && streams.isEmpty && state == .ready {
            closeGracefully()
        }
    }

    // MARK: Writing

    /// Moves nghttp2's pending frames through TLS until done or the socket would block.
    func flush() {
        needsFlush = false
        guard state == .awaitingSettings || state == .ready, let tls, let session else { return }
        while true {
            while outOffset < outBuffer.count {
                let result = outBuffer.withUnsafeBytes { bytes in
                    tls.write(UnsafeRawBufferPointer(rebasing: bytes[outOffset...]))
                }
                switch result {
                case .done(let count):
                    outOffset += count
                case .wantWrite:
                    setWriteEvents(true)
                    return
                case .wantRead:
                    return
                case .closed:
                    closeAfterPeerEnded(detail: "\(settings.endpoint) closed the connection")
                    return
                case .failed(let error):
                    closeAfterPeerEnded(detail: error.message)
                    return
                }
            }
            outBuffer.removeAll(keepingCapacity: true)
            outOffset = 0
            while outBuffer.count < 64 * 1024 {
                var data: UnsafePointer<UInt8>?
                let length = nghttp2_session_mem_send(session, &data)
                if length < 0 {
                    close(
                        HTTP2ClientError(
                            .protocolError,
                            "nghttp2_session_mem_send: \(HTTP2Callbacks.describe(Int32(length)))"))
                    return
                }
                guard length > 0, let data else { break }
                outBuffer.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
            }
            if outBuffer.isEmpty {
                setWriteEvents(false)
                // Frames refused while serialising (GOAWAY raced a submit) surface here.
                if !closedStreams.isEmpty || receivedGoAway != nil {
                    deliverEvents()
                    if state == .closed { return }
                    continue
                }
                return
            }
        }
    }

    private func setWriteEvents(_ enabled: Bool) {
        guard enabled != writeEventsEnabled, let registration else { return }
        writeEventsEnabled = enabled
        loop.modify(
            registration, events: EPOLLIN.rawValue | (enabled ? EPOLLOUT.rawValue : 0))
    }

    // MARK: Requests

    /// Submits `pending` as a new stream (the caller checked `availableStreams`). Returns the
    /// stream id, or a negative nghttp2 error (`NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE` retires the
    /// connection).
    func submit(_ pending: PendingRequest, authorization: String?) -> Int32 {
        guard let session else { return Int32(NGHTTP2_ERR_INVALID_STATE.rawValue) }
        // Built in a local (swapped out of the scratch property and back) so the many appends
        // are plain local mutations rather than exclusivity-checked class accesses.
        var block = HTTP2HeaderBlock()
        swap(&block, &headerScratch)
        defer { swap(&block, &headerScratch) }
        block.reset()
        pending.head.writeHeaders(into: &block, authority: authorityBytes, authorization: authorization)

        let stream = HTTP2Stream(request: pending)
        let streamPointer = Unmanaged.passUnretained(stream).toOpaque()
        let streamID = block.withNameValues(scratch: &nameValueScratch) { nameValues, count in
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: streamPointer),
                read_callback: HTTP2Callbacks.readPayload)
            // nghttp2 copies the header block, so the pointers need only live for this call.
            // The stream's user data points at `stream`, which `streams` keeps alive until
            // nghttp2 reports the stream closed.
            return nghttp2_submit_request(
                session, nil, nameValues, count, &provider, streamPointer)
        }
        guard streamID > 0 else {
            if streamID == Int32(NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue) {
                isGoingAway = true
            }
            return streamID
        }
        streams[streamID] = stream
        streamsOpened += 1
        if streams.count > peakConcurrentStreams { peakConcurrentStreams = streams.count }
        pending.connection = self
        pending.streamID = streamID
        needsFlush = true
        return streamID
    }

    /// Resets a stream whose request timed out or was cancelled; the stream keeps counting
    /// against the limit until nghttp2 closes it.
    func cancelStream(_ streamID: Int32) {
        guard let session, streams[streamID] != nil else { return }
        nghttp2_submit_rst_stream(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
        needsFlush = true
    }

    // MARK: Closing

    /// Stops new streams; closes (sending GOAWAY) once the open ones are answered.
    func retire() {
        guard state != .closed else { return }
        isGoingAway = true
        if state != .ready || streams.isEmpty {
            closeGracefully()
        }
    }

    private func closeGracefully() {
        if let session, state == .ready || state == .awaitingSettings {
            nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
            flush()
        }
        if state != .closed { close(nil) }
    }

    /// Tears everything down now and reports the unanswered streams.
    func close(_ error: HTTP2ClientError?) {
        guard state != .closed else { return }
        state = .closed
        isGoingAway = true
        if let connectTimer { loop.cancel(connectTimer) }
        if let keepaliveTimer { loop.cancel(keepaliveTimer) }
        connectTimer = nil
        keepaliveTimer = nil
        if let registration { loop.unregister(registration) }
        registration = nil
        if error == nil { tls?.shutdown() }
        tls = nil
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        // nghttp2_session_del runs no callbacks; streams still open are reported below.
        if let session { nghttp2_session_del(session) }
        session = nil
        let unanswered = streams.sorted { $0.key < $1.key }.map(\.value)
        streams.removeAll()
        closedStreams.removeAll()
        delegate?.connection(
            self, closedWith: error, wasReady: hasBeenReady, unanswered: unanswered)
    }

    // MARK: Keepalive

    private func scheduleKeepalive() {
        let interval = settings.pingInterval
        let check = min(interval, settings.pingTimeout)
        keepaliveTimer = loop.schedule(after: check) { [self] in
            keepaliveTick()
        }
    }

    private func keepaliveTick() {
        keepaliveTimer = nil
        guard state == .ready, let session else { return }
        let now = MonotonicTime.now()
        if let pingSentAt {
            if now &- pingSentAt >= MonotonicTime.nanoseconds(settings.pingTimeout) {
                close(
                    HTTP2ClientError(
                        .connectionLost,
                        "\(settings.endpoint) did not answer PING within \(settings.pingTimeout)"))
                return
            }
        } else if streams.isEmpty
            && now &- lastActivity >= MonotonicTime.nanoseconds(settings.pingInterval)
        {
            nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
            pingSentAt = now
            flush()
            guard state == .ready else { return }
        }
        scheduleKeepalive()
    }

    fileprivate func pingAcknowledged() {
        if pingSentAt != nil { pingsAcknowledged += 1 }
        pingSentAt = nil
    }

    fileprivate func goAwayReceived(lastStreamID: Int32, errorCode: UInt32, debugData: String) {
        isGoingAway = true
        receivedGoAway = (lastStreamID, errorCode, debugData)
    }
}

@available(*, unavailable)
extension HTTP2Connection: Sendable {}

/// Carries a loop-confined object through a `@Sendable` closure back onto its loop.
struct LoopBound<Value: AnyObject>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only read inside a task running on the owning event loop.
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// The nghttp2 callbacks: static C-convention closures with no captures. Each recovers its
/// connection from the session's user data (an unretained pointer: the connection owns the
/// session and deletes it before going away) and only records what happened.
enum HTTP2Callbacks {
    static func describe(_ code: Int32) -> String {
        "\(String(cString: nghttp2_strerror(code))) (\(code))"
    }

    static func describeHTTP2Error(_ code: UInt32) -> String {
        "\(String(cString: nghttp2_http2_strerror(code))) (0x\(String(code, radix: 16)))"
    }

    private static func connection(_ userData: UnsafeMutableRawPointer?) -> HTTP2Connection {
        Unmanaged<HTTP2Connection>.fromOpaque(userData!).takeUnretainedValue()
    }

    /// The stream's user data: its `HTTP2Stream`, kept alive by the connection's `streams`
    /// until `onStreamClose` (after which nghttp2 no longer reports the stream).
    private static func stream(_ session: OpaquePointer?, _ streamID: Int32) -> HTTP2Stream? {
        guard let pointer = nghttp2_session_get_stream_user_data(session, streamID) else {
            return nil
        }
        return Unmanaged<HTTP2Stream>.fromOpaque(pointer).takeUnretainedValue()
    }

    static let onFrameRecv: nghttp2_on_frame_recv_callback = { _, frame, userData in
        guard let frame else { return 0 }
        let connection = HTTP2Callbacks.connection(userData)
        let header = frame.pointee.hd
        switch UInt32(header.type) {
        case NGHTTP2_SETTINGS.rawValue:
            if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 {
                connection.receivedSettings = true
            }
        case NGHTTP2_GOAWAY.rawValue:
            let goAway = frame.pointee.goaway
            var debugData = ""
            if let opaque = goAway.opaque_data, goAway.opaque_data_len > 0 {
                debugData = String(
                    decoding: UnsafeBufferPointer(start: opaque, count: goAway.opaque_data_len),
                    as: UTF8.self)
            }
            connection.goAwayReceived(
                lastStreamID: goAway.last_stream_id, errorCode: goAway.error_code,
                debugData: debugData)
        case NGHTTP2_PING.rawValue:
            if header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 {
                connection.pingAcknowledged()
            }
        default:
            break
        }
        return 0
    }

    static let onHeader: nghttp2_on_header_callback = {
        session, frame, name, nameLength, value, valueLength, _, userData in
        guard let frame, let name, let value,
            UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue
        else { return 0 }
        guard let stream = HTTP2Callbacks.stream(session, frame.pointee.hd.stream_id) else {
            return 0
        }
        if nameLength == 7 && memcmp(name, ":status", 7) == 0 {
            var status = 0
            for index in 0..<valueLength {
                let digit = Int(value[index]) - 48
                guard (0...9).contains(digit) else { return 0 }
                status = status * 10 + digit
            }
            // Informational (1xx) headers precede the final response.
            if status >= 200 { stream.status = status }
        } else {
            let kept = HTTP2Callbacks.connection(userData).keptHeaderBytes
            for index in kept.indices where kept[index].count == nameLength {
                let matches = kept[index].withUnsafeBytes { memcmp(name, $0.baseAddress!, nameLength) == 0 }
                guard matches else { continue }
                stream.keptHeaders.append(
                    (
                        index,
                        String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
                    ))
                break
            }
        }
        return 0
    }

    static let onDataChunkRecv: nghttp2_on_data_chunk_recv_callback = {
        session, _, streamID, data, length, userData in
        guard let data, let stream = HTTP2Callbacks.stream(session, streamID) else { return 0 }
        // Answers are small; cap what a misbehaving server can make us hold.
        let limit = HTTP2Callbacks.connection(userData).settings.maxResponseBodyBytes
        let room = max(0, limit - stream.body.count)
        stream.body.append(contentsOf: UnsafeBufferPointer(start: data, count: min(room, length)))
        return 0
    }

    static let onStreamClose: nghttp2_on_stream_close_callback = {
        _, streamID, errorCode, userData in
        let connection = HTTP2Callbacks.connection(userData)
        guard let stream = connection.streams.removeValue(forKey: streamID) else { return 0 }
        if stream.status == 0 && errorCode == NGHTTP2_REFUSED_STREAM.rawValue {
            stream.refused = true
        }
        connection.closedStreams.append((stream, errorCode))
        return 0
    }

    static let onFrameNotSend: nghttp2_on_frame_not_send_callback = {
        _, frame, _, userData in
        guard let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue else {
            return 0
        }
        let connection = HTTP2Callbacks.connection(userData)
        // The request never left: typically a GOAWAY arrived between submit and send.
        guard let stream = connection.streams.removeValue(forKey: frame.pointee.hd.stream_id)
        else { return 0 }
        stream.refused = true
        connection.closedStreams.append((stream, NGHTTP2_REFUSED_STREAM.rawValue))
        return 0
    }

    static let readPayload: nghttp2_data_source_read_callback = {
        _, _, buffer, length, flags, source, _ in
        guard let buffer, let flags, let pointer = source?.pointee.ptr else {
            return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
        }
        let stream = Unmanaged<HTTP2Stream>.fromOpaque(pointer).takeUnretainedValue()
        let payload = stream.request.body
        let count = min(length, payload.count - stream.payloadOffset)
        if count > 0 {
            payload.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(buffer).copyMemory(
                    from: bytes.baseAddress! + stream.payloadOffset, byteCount: count)
            }
        }
        stream.payloadOffset += count
        if stream.payloadOffset == payload.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
        }
        return count
    }
}

extension HTTP2HeaderBlock {
    /// Calls `body` with the `nghttp2_nv` array (built in `scratch`), valid only during the call.
    mutating func withNameValues<Result>(
        scratch: inout [nghttp2_nv], _ body: (UnsafeMutablePointer<nghttp2_nv>, Int) -> Result
    ) -> Result {
        let ranges = self.ranges
        var nameValues: [nghttp2_nv] = []
        swap(&nameValues, &scratch)
        defer {
            nameValues.removeAll(keepingCapacity: true)
            swap(&nameValues, &scratch)
        }
        return bytes.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            nameValues.removeAll(keepingCapacity: true)
            for range in ranges {
                nameValues.append(
                    nghttp2_nv(
                        name: base + range.name.lowerBound, value: base + range.value.lowerBound,
                        namelen: range.name.count, valuelen: range.value.count,
                        flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
            }
            return nameValues.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
        }
    }
}
