internal import CNGHTTP2
internal import CTuisongShims
internal import TuisongCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The head of a request as it arrives, header by header.
struct RequestHead {
    var method: String?
    var path: String?
    var authority: String?
    var headers = HeaderFields()

    /// Stores one header field; names arrive lower-case (HTTP/2 requires it, nghttp2 enforces it).
    mutating func add(name: String, value: String) {
        switch name {
        case ":method": method = value
        case ":path": path = value
        case ":authority", "host": authority = value
        case ":scheme": break
        default: headers.append(name: name, value: value)
        }
    }
}

/// One request stream as it arrives.
final class MockStream {
    var head = RequestHead()
    var body: [UInt8] = []
    var bodyLength = 0
    /// How much of the body is kept: set at the first DATA frame from the path.
    var bodyStorageLimit = 0
    var processed = false
    var responseBody: [UInt8] = []
    var responseOffset = 0
    /// The endless-answers fault: after `responseBody`, filler that never ends.
    var endlessResponse = false
    /// Held back by the latency fault until its timer fires.
    var delayedResponse: LookAlikeAnswer?
    /// When the latency fault lets the answer go (monotonic nanoseconds): a held answer waits
    /// for both the release and its latency.
    var answerNotBefore: UInt64 = 0
}

@available(*, unavailable)
extension MockStream: Sendable {}

/// One client connection: TLS on a non-blocking socket, then an nghttp2 server session.
/// Confined to its event loop's thread; nghttp2 calls back into it only from inside
/// `nghttp2_session_mem_recv`/`mem_send`, which run on that thread too.
final class HTTP2ServerConnection {
    enum Phase {
        case handshaking, established
        /// GOAWAY sent and every stream at or below it answered: our side is shut (close_notify,
        /// FIN) and what the client still sends is read and dropped until it closes.
        case lingering
        case closed
    }

    /// How often a held answer (the `holdAnswers` fault) looks whether it may go.
    static let holdPollNanoseconds: UInt64 = 5_000_000
    /// The timer "stream" that ends a lingering connection.
    static let lingerTimer: Int32 = -1

    let id: UInt64
    let socket: Int32
    unowned let loop: MockEventLoop
    private let transport: TLSConnection
    private(set) var phase = Phase.handshaking
    private var session: OpaquePointer?
    var streams: [Int32: MockStream] = [:]
    /// The client presented a certificate one of the configured CAs issued: the connection
    /// starts at the full stream limit.
    private var hasClientCertificate = false
    /// What each service keeps about this connection, in the services' order.
    private var serviceStates: [AnyObject?] = []
    private var processedRequests = 0
    private var streamLimitRaised = false
    /// SETTINGS frames submitted and acknowledged, in order: a lowered limit is in force once
    /// the client has acknowledged the SETTINGS frame that carried it.
    private var settingsSubmitted = 0
    private var settingsAcknowledged = 0
    /// `settingsSubmitted` right after the lowering SETTINGS; nil until the limit is lowered.
    private var loweringSettingsNumber: Int?
    private var goawayLastStreamID: Int32?
    private var dropRequested = false
    private let output = ByteQueue(capacity: 64 * 1024)
    private var writableInterest = false
    /// SSL_read asked for a writable socket (TLS may need to send while reading).
    private var readWaitsForWritable = false

    init(id: UInt64, socket: Int32, loop: MockEventLoop) throws(CryptoError) {
        self.id = id
        self.socket = socket
        self.loop = loop
        transport = try TLSConnection(context: loop.core.tlsContext, fileDescriptor: socket)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    var core: MockServerCore { loop.core }

    // MARK: Events

    func handle(events: UInt32) {
        switch phase {
        case .handshaking:
            continueHandshake()
        case .established:
            let readable = events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0
            if readable || (readWaitsForWritable && events & EPOLLOUT.rawValue != 0) {
                readAvailable()
            }
            if phase == .established { flush() }
        case .lingering:
            if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { drainWhileLingering() }
        case .closed:
            break
        }
    }

    private func continueHandshake() {
        switch transport.handshake() {
        case .done:
            guard transport.negotiatedALPN == "h2" else {
                core.logger.debug(
                    "look-alike server: a connection did not negotiate h2, closing", metadata: ["connection": "\(id)"])
                core.recorder.update { $0.handshakeFailures += 1 }
                close()
                return
            }
            var clientCertificate: Certificate?
            if let certificate = transport.peerCertificate, transport.verificationFailure == nil {
                clientCertificate = certificate
                hasClientCertificate = true
            }
            serviceStates = core.lookAlikes.services.map { $0.connectionOpened(clientCertificate: clientCertificate) }
            do throws(LookAlikeServerError) {
                try startSession()
            } catch {
                core.logger.error(
                    "look-alike server: connection failed", metadata: ["connection": "\(id)", "error": "\(error)"])
                close()
                return
            }
            phase = .established
            setWritableInterest(false)
            // TLS 1.3 clients send the HTTP/2 preface right behind Finished; it may already
            // sit in OpenSSL's buffer, where epoll cannot see it.
            readAvailable()
            if phase == .established { flush() }
        case .wantRead:
            setWritableInterest(false)
        case .wantWrite:
            setWritableInterest(true)
        case .closed:
            core.recorder.update { $0.handshakeFailures += 1 }
            close()
        case .failed(let error):
            core.logger.debug(
                "look-alike server: TLS handshake failed", metadata: ["connection": "\(id)", "error": "\(error)"])
            core.recorder.update { $0.handshakeFailures += 1 }
            close()
        }
    }

    private func startSession() throws(LookAlikeServerError) {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw LookAlikeServerError(operation: "nghttp2_session_callbacks_new", code: 0, message: "out of memory")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        NGHTTP2ServerCallbacks.install(in: callbacks)
        var session: OpaquePointer?
        var options: OpaquePointer?
        guard nghttp2_option_new(&options) == 0, let options else {
            throw LookAlikeServerError(operation: "nghttp2_option_new", code: 0, message: "out of memory")
        }
        defer { nghttp2_option_del(options) }
        if loop.currentFaults().faults.ignorePings { nghttp2_option_set_no_auto_ping_ack(options, 1) }
        let result = nghttp2_session_server_new2(
            &session, callbacks, Unmanaged.passUnretained(self).toOpaque(), options)
        guard result == 0, let session else {
            throw NGHTTP2ServerCallbacks.error("nghttp2_session_server_new", Int32(result))
        }
        self.session = session
        let configuration = core.configuration
        let initialLimit =
            hasClientCertificate ? configuration.maxConcurrentStreams : configuration.streamsBeforeFirstValidToken
        try submitSettings(maxConcurrentStreams: initialLimit)
        // A roomy connection window: 100+ streams of 4 KB payloads must not wait for
        // WINDOW_UPDATE round trips.
        _ = nghttp2_session_set_local_window_size(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 16 * 1024 * 1024)
    }

    private func submitSettings(maxConcurrentStreams: Int) throws(LookAlikeServerError) {
        guard let session else { return }
        var entries = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: UInt32(clamping: max(0, maxConcurrentStreams)))
        ]
        let result = nghttp2_submit_settings(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        guard result == 0 else { throw NGHTTP2ServerCallbacks.error("nghttp2_submit_settings", result) }
        settingsSubmitted += 1
    }

    /// The client acknowledged our oldest unacknowledged SETTINGS frame.
    func settingsAcknowledgedByClient() {
        settingsAcknowledged += 1
    }

    /// A request stream opened; checks it against a lowered limit already in force.
    func requestStreamOpened() {
        guard let lowering = loweringSettingsNumber, settingsAcknowledged >= lowering else { return }
        let open = streams.count
        core.recorder.update { $0.peakStreamsAfterLowering = max($0.peakStreamsAfterLowering, open) }
    }

    /// Reads until OpenSSL wants more bytes from the socket, feeding nghttp2. Reading to
    /// exhaustion matters: bytes OpenSSL already decrypted do not make the socket readable.
    private func readAvailable() {
        readWaitsForWritable = false
        let buffer = loop.readBuffer
        while phase == .established && !dropRequested {
            switch transport.read(
                into: UnsafeMutableRawBufferPointer(start: buffer, count: MockEventLoop.readBufferSize))
            {
            case .done(let count):
                guard let session else { return }
                let consumed = nghttp2_session_mem_recv(
                    session, buffer.assumingMemoryBound(to: UInt8.self), count)
                if consumed < 0 {
                    core.logger.debug(
                        "look-alike server: reading from a connection failed",
                        metadata: [
                            "connection": "\(id)",
                            "error": "\(NGHTTP2ServerCallbacks.error("nghttp2_session_mem_recv", Int32(consumed)))",
                        ]
                    )
                    close()
                    return
                }
            case .wantRead:
                return
            case .wantWrite:
                readWaitsForWritable = true
                setWritableInterest(true)
                return
            case .closed:
                close()
                return
            case .failed(let error):
                core.logger.debug(
                    "look-alike server: connection closed on an error",
                    metadata: ["connection": "\(id)", "error": "\(error)"])
                close()
                return
            }
        }
        if dropRequested {
            // The drop fault: answers produced so far go out, then the socket closes with
            // neither GOAWAY nor close_notify.
            flush()
            core.recorder.update { $0.connectionsDropped += 1 }
            close()
        }
    }

    /// Moves nghttp2's pending frames through TLS to the socket until either side runs dry.
    func flush() {
        guard phase == .established, let session else { return }
        while true {
            while output.count < 64 * 1024 {
                var chunk: UnsafePointer<UInt8>?
                let count = nghttp2_session_mem_send(session, &chunk)
                if count < 0 {
                    core.logger.debug(
                        "look-alike server: writing to a connection failed",
                        metadata: [
                            "connection": "\(id)",
                            "error": "\(NGHTTP2ServerCallbacks.error("nghttp2_session_mem_send", Int32(count)))",
                        ]
                    )
                    close()
                    return
                }
                guard count > 0, let chunk else { break }
                output.append(chunk, count: count)
            }
            if output.isEmpty { break }
            switch transport.write(UnsafeRawBufferPointer(start: output.readable, count: output.count)) {
            case .done(let written):
                output.consume(written)
            case .wantWrite, .wantRead:
                setWritableInterest(true)
                return
            case .closed:
                close()
                return
            case .failed(let error):
                core.logger.debug(
                    "look-alike server: connection closed on an error",
                    metadata: ["connection": "\(id)", "error": "\(error)"])
                close()
                return
            }
        }
        if !readWaitsForWritable { setWritableInterest(false) }
        // After a GOAWAY, nghttp2 wants neither once the last stream is done: close cleanly.
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            linger()
        }
    }

    /// Shuts our side and waits for the client to close. Closing the socket at once, with the
    /// client's frames sent before it saw the GOAWAY still unread, makes the kernel answer with
    /// a reset, and a reset can take the GOAWAY and the last answers with it before the client
    /// reads them: the client then sees a lost connection and sends processed requests again.
    /// A server closes after the client does (or after a while), as the real services do.
    private func linger() {
        guard phase == .established else { return }
        phase = .lingering
        transport.shutdown()
        Glibc.shutdown(socket, Int32(SHUT_WR))
        setWritableInterest(false)
        // How long it waits for the client to close before closing anyway.
        let linger = UInt64(max(0, core.configuration.lingerMilliseconds)) * 1_000_000
        loop.schedule(after: linger, connectionID: id, streamID: Self.lingerTimer)
        drainWhileLingering()
    }

    /// Reads and drops what the client sends until it closes (or the read fails).
    private func drainWhileLingering() {
        let buffer = loop.readBuffer
        while phase == .lingering {
            let count = Glibc.read(socket, buffer, MockEventLoop.readBufferSize)
            if count > 0 {
                core.recorder.update { $0.bytesDrainedWhileLingering += count }
                continue
            }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
            close()
        }
    }

    private func setWritableInterest(_ wanted: Bool) {
        guard wanted != writableInterest, phase != .closed else { return }
        writableInterest = wanted
        loop.updateInterest(socket: socket, token: id, writable: wanted)
    }

    /// Sends GOAWAY(NO_ERROR) and what is pending, then closes; for server shutdown.
    func closeGracefully() {
        if phase == .lingering {
            close()
            return
        }
        if phase == .established, let session {
            let lastStream = nghttp2_session_get_last_proc_stream_id(session)
            if nghttp2_submit_goaway(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStream,
                NGHTTP2_NO_ERROR.rawValue, nil, 0) == 0
            {
                flush()
            }
        }
        close()
    }

    func close() {
        guard phase != .closed else { return }
        phase = .closed
        Glibc.close(socket)
        loop.connectionClosed(self)
    }

    // MARK: Requests (called from nghttp2 callbacks, inside mem_recv)

    /// A request's END_STREAM arrived: the services answer it (each counts and records what it
    /// answers), then the answer goes out (now or after the latency fault) and the
    /// per-connection GOAWAY and drop faults apply.
    func requestCompleted(streamID: Int32) {
        guard let stream = streams[streamID], !stream.processed, !dropRequested else { return }
        // Streams above a GOAWAY's last stream id are the client's to retry; they are neither
        // processed nor counted.
        if let last = goawayLastStreamID, streamID > last { return }
        stream.processed = true
        processedRequests += 1

        let faults = loop.currentFaults()
        let head = stream.head
        let request = LookAlikeRequest(
            method: head.method, path: head.path ?? "", authority: head.authority, headers: head.headers,
            body: stream.body, bodyLength: stream.bodyLength, connectionID: Int(id), streamID: Int(streamID),
            receivedAtMilliseconds: WallClock.milliseconds())
        let answer =
            core.lookAlikes.answer(request, faults: faults, connectionStates: serviceStates)
            ?? LookAlikeAnswer(
                status: 404, headers: [("content-length", "0")], body: [], raisesStreamLimit: false,
                endlessUnderFault: false)
        if answer.raisesStreamLimit && !streamLimitRaised {
            streamLimitRaised = true
            if !hasClientCertificate {
                do throws(LookAlikeServerError) {
                    try submitSettings(maxConcurrentStreams: core.configuration.maxConcurrentStreams)
                    core.recorder.update { $0.streamLimitRaises += 1 }
                } catch {
                    core.logger.error(
                        "look-alike server: connection failed", metadata: ["connection": "\(id)", "error": "\(error)"])
                }
            }
        }
        respond(answer, on: stream, streamID: streamID, faults: faults)
    }

    /// Sends (or, with the latency fault, schedules) the answer, then applies the per-connection
    /// GOAWAY, stream-limit and drop faults, which count every processed request.
    private func respond(_ answer: LookAlikeAnswer, on stream: MockStream, streamID: Int32, faults: ActiveFaults) {
        var response = answer
        if faults.faults.endlessAnswers && response.endlessUnderFault {
            response.headers.removeAll { $0.0 == "content-length" }
            stream.endlessResponse = true
        }
        let latency = faults.faults.latencyMilliseconds
        if faults.faults.holdAnswers {
            stream.delayedResponse = response
            stream.answerNotBefore = MonotonicClock.nanoseconds() + UInt64(max(0, latency)) * 1_000_000
            loop.schedule(after: Self.holdPollNanoseconds, connectionID: id, streamID: streamID)
        } else if latency > 0 {
            stream.delayedResponse = response
            loop.schedule(
                after: UInt64(latency) * 1_000_000, connectionID: id, streamID: streamID)
        } else {
            submit(response, on: stream, streamID: streamID)
        }

        if let limit = faults.faults.goawayAfterRequests, processedRequests == limit, goawayLastStreamID == nil,
            let session
        {
            goawayLastStreamID = streamID
            let reason = Array(#"{"reason":"Shutdown"}"#.utf8)
            _ = nghttp2_submit_goaway(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_NO_ERROR.rawValue,
                reason, reason.count)
        }
        if let limit = faults.faults.lowerStreamLimitAfterRequests, processedRequests == limit,
            loweringSettingsNumber == nil
        {
            do throws(LookAlikeServerError) {
                try submitSettings(maxConcurrentStreams: faults.faults.loweredStreamLimit)
                loweringSettingsNumber = settingsSubmitted
                core.recorder.update { $0.streamLimitLowerings += 1 }
            } catch {
                core.logger.error(
                    "look-alike server: connection failed", metadata: ["connection": "\(id)", "error": "\(error)"])
            }
        }
        if let limit = faults.faults.dropConnectionAfterRequests, processedRequests >= limit {
            dropRequested = true
        }
    }

    func countEndlessAnswerBytes(_ count: Int) {
        core.recorder.update { $0.endlessAnswerBytes += count }
    }

    /// The latency fault's timer, or a held answer's, fired for this stream.
    func deliverDelayedResponse(streamID: Int32) {
        if streamID == Self.lingerTimer {
            // The client never closed: close anyway.
            if phase == .lingering { close() }
            return
        }
        guard phase == .established, let stream = streams[streamID],
            let response = stream.delayedResponse
        else { return }
        if loop.currentFaults().faults.holdAnswers {
            loop.schedule(after: Self.holdPollNanoseconds, connectionID: id, streamID: streamID)
            return
        }
        let now = MonotonicClock.nanoseconds()
        if now < stream.answerNotBefore {
            loop.schedule(after: stream.answerNotBefore - now, connectionID: id, streamID: streamID)
            return
        }
        stream.delayedResponse = nil
        submit(response, on: stream, streamID: streamID)
    }

    private func submit(_ response: LookAlikeAnswer, on stream: MockStream, streamID: Int32) {
        guard let session else { return }
        stream.responseBody = response.body
        let result = NGHTTP2ServerCallbacks.withHeaderFields(status: response.status, response.headers) {
            fields, count in
            if stream.responseBody.isEmpty && !stream.endlessResponse {
                return nghttp2_submit_response(session, streamID, fields, count, nil)
            }
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: nil), read_callback: NGHTTP2ServerCallbacks.readResponseBody)
            return nghttp2_submit_response(session, streamID, fields, count, &provider)
        }
        if result != 0 {
            core.logger.debug(
                "look-alike server: submitting a response failed",
                metadata: [
                    "connection": "\(id)",
                    "error": "\(NGHTTP2ServerCallbacks.error("nghttp2_submit_response", result))",
                ])
        }
    }
}

@available(*, unavailable)
extension HTTP2ServerConnection: Sendable {}

/// One JSON line per request for `logRequests` (a service with its own line writes it itself).
package enum RequestLogLine {
    /// A token-based look-alike's request: the service, its project or app, the answer and its code.
    static func make(
        android response: AndroidResponse, method: String?, path: String, connectionID: Int, streamID: Int,
        receivedAt: Int64, payloadBytes: Int
    ) -> String {
        var fields: [String] = [
            #""time":\#(receivedAt)"#,
            #""connection":\#(connectionID)"#,
            #""stream":\#(streamID)"#,
            #""status":\#(response.status)"#,
            #""service":\#(quoted(response.service.rawValue))"#,
            #""payload-bytes":\#(payloadBytes)"#,
        ]
        func add(_ key: String, _ value: String?) {
            if let value { fields.append("\(quoted(key)):\(quoted(value))") }
        }
        add("method", method)
        add("path", path)
        add("code", response.code)
        add("target", response.target)
        add("principal", response.principal)
        if response.tokenCount > 0 { fields.append(#""tokens":\#(response.tokenCount)"#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    package static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
