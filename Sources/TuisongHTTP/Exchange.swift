internal import CMicroHTTPD
internal import CTuisongShims
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One request from its first line to its completion: created by MHD's URI-log callback,
/// driven by the access handler, released by the request-completed callback.
///
/// `@unchecked Sendable` is true because of two invariants:
/// - every `var` outside `outcome` is touched only by the MHD worker thread that owns the
///   connection (MHD calls a connection's callbacks from one thread at a time); the handler
///   task receives an immutable `Request` copy, never these fields;
/// - what other threads need of the request (to render a timeout) is copied into `outcome`;
/// - `connection` is used from other threads only for `MHD_resume_connection`, under
///   `outcome`'s lock and only while `outcome.suspended` is true. A suspended connection stays
///   alive until it is resumed: MHD never closes it on its own, and `HTTPServer` resumes every
///   suspended connection before it calls `MHD_stop_daemon`.
final class Exchange: @unchecked Sendable {
    enum Phase {
        /// Waiting for the first access-handler call (headers complete).
        case headers
        /// Routed; collecting the body until the final call.
        case body
        /// The request will be answered with this error once it is complete; up to
        /// `budget` more body bytes are read and dropped meanwhile so the answer can be sent
        /// (and the connection kept unless `closing`). Past the budget the connection is closed.
        case discarding(HTTPError, budget: Int, closing: Bool = false)
        /// An error response was queued before the request was complete; further body data
        /// is discarded.
        case rejected
        /// The handler was started; the next call (after a resume) queues its response.
        case handling
    }

    /// Decided across threads: who answers first (handler, timeout or shutdown) wins.
    struct Outcome {
        /// The answer waiting to be queued on the MHD thread.
        var response: Response?
        /// An answer has been chosen; later ones are dropped.
        var settled = false
        /// The connection is suspended and waits for `MHD_resume_connection`.
        var suspended = false
        /// The handler task, kept while suspended so a timeout can cancel it.
        var task: Task<Void, Never>?
        /// What a timeout or shutdown needs to render its error in the route's dialect, set
        /// before the exchange is registered as pending.
        var request: Request?
        var routes: RouteTableSnapshot?
    }

    let core: ServerCore
    let rawTarget: String
    let outcome = Mutex(Outcome())

    /// How far past its limit a chunked body is still read to answer 413 properly.
    static let overLimitAllowance = 64 * 1024

    private var phase = Phase.headers
    private var connection: OpaquePointer?
    private var method = HTTPMethod.GET
    private var target: RequestTarget?
    private var headers = HTTPHeaders()
    private var body: [UInt8] = []
    private var discarded = 0
    private var route: ResolvedRoute?
    private var routes: RouteTableSnapshot?

    /// False when the request line's target was not UTF-8 (`rawTarget` holds a repaired copy).
    let rawTargetIsValid: Bool

    init(core: ServerCore, rawTarget: String, rawTargetIsValid: Bool) {
        self.core = core
        self.rawTarget = rawTarget
        self.rawTargetIsValid = rawTargetIsValid
    }

    // MARK: Access handler steps (MHD worker thread)

    func step(
        connection: OpaquePointer, method: UnsafePointer<CChar>, version: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>
    ) -> MHD_Result {
        switch phase {
        case .headers:
            self.connection = connection
            phase = .body
            return begin(method: method, version: version.map { String(cString: $0) } ?? "")
        case .body:
            let count = uploadSize.pointee
            if count > 0 && core.graceOver.load(ordering: .relaxed) {
                // Shutdown's grace is over: no handler will run. MHD cannot answer mid-body,
                // so read the rest and answer 503 once it is in.
                uploadSize.pointee = 0
                body = []
                phase = .discarding(.serviceUnavailable("the server is shutting down"), budget: Int.max)
                return MHD_Result.YES
            }
            if count > 0 {
                uploadSize.pointee = 0
                let limit = route?.bodyLimit ?? 0
                guard body.count + count <= limit else {
                    // A chunked body (no Content-Length) ran past the limit. Drop a little
                    // more in case it ends soon and can get a proper 413; otherwise cut it off.
                    discarded = body.count + count
                    body = []
                    phase = .discarding(
                        .payloadTooLarge(limit: limit), budget: limit + Self.overLimitAllowance)
                    return discarded > limit + Self.overLimitAllowance
                        ? reject(.payloadTooLarge(limit: limit)) : MHD_Result.YES
                }
                body.append(contentsOf: UnsafeRawBufferPointer(start: uploadData, count: count))
                return MHD_Result.YES
            }
            return startHandler()
        case .discarding(let error, let budget, let closing):
            let count = uploadSize.pointee
            if count > 0 {
                uploadSize.pointee = 0
                discarded += count
                return discarded > budget ? reject(error, closingConnection: closing) : MHD_Result.YES
            }
            return reject(error, closingConnection: closing)
        case .rejected:
            uploadSize.pointee = 0
            return MHD_Result.YES
        case .handling:
            let response = outcome.withLock { $0.response.take() }
            return queue(response ?? Router.nativeErrorResponse(.internalError("no response")))
        }
    }

    private func begin(method methodName: UnsafePointer<CChar>, version: String) -> MHD_Result {
        let methodText = String(cString: methodName)
        method = HTTPMethod(rawValue: methodText)
        let collected = collectHeaders()
        headers = collected.headers
        let routes = core.router.snapshot()
        self.routes = routes
        if core.graceOver.load(ordering: .relaxed) {
            // Headers completed after shutdown's grace: answer now, before any body (the one
            // moment MHD accepts an early answer); MHD then closes the connection.
            target = try? RequestTarget(parsing: rawTarget)
            return reject(.serviceUnavailable("the server is shutting down"))
        }
        let requestLineBytes = methodText.utf8.count + rawTarget.utf8.count + version.utf8.count + 4
        let headerBytes = Int(tuisong_mhd_connection_header_size(connection))
        if let refusal = FrontDoor.sizeRefusal(
            headerBytes: headerBytes, requestLineBytes: requestLineBytes, limit: core.maxHeaderBytes)
            ?? FrontDoor.framingRefusal(headers: headers, version: version)
            ?? FrontDoor.nulRefusal(
                head: UnsafeRawBufferPointer(start: methodName, count: headerBytes), headers: collected)
        {
            // Answered before MHD reads any body, closing the connection: whatever follows on it
            // (a body framed some other way, a request hidden in it) is never read.
            target =
                (rawTargetIsValid ? try? RequestTarget(parsing: rawTarget) : nil)
                ?? RequestTarget(undecodable: rawTarget)
            return reject(refusal, closingConnection: true)
        }
        let target: RequestTarget
        do throws(HTTPError) {
            guard rawTargetIsValid else { throw .badRequest("request target is not valid UTF-8") }
            target = try RequestTarget(parsing: rawTarget)
        } catch {
            self.target = RequestTarget(undecodable: rawTarget)
            return answerWhenComplete(error, limit: routes.table.defaultBodyLimit)
        }
        self.target = target
        switch routes.table.resolve(method: method, path: target.path, segments: target.segments) {
        case .failure(let error):
            return answerWhenComplete(error, limit: routes.table.defaultBodyLimit)
        case .success(let route):
            self.route = route
            if core.chunkedRequests == .refuse && headers["Transfer-Encoding"] != nil {
                return refuseChunkedBody()
            }
            if let length = declaredLength {
                guard length <= route.bodyLimit else {
                    return refuseDeclaredBody(length: length, limit: route.bodyLimit)
                }
                body.reserveCapacity(length)
            }
            return MHD_Result.YES
        }
    }

    /// A chunked body (the front door has made sure `Transfer-Encoding` is exactly `chunked`)
    /// where only `Content-Length` is taken: 411, and the connection closed, so nothing
    /// libmicrohttpd's lenient chunk parser would read after it is ever run. A client waiting
    /// for `100-continue` gets it at once; one already sending has up to `overLimitAllowance`
    /// bytes of it read and dropped first, so the kernel's reset does not destroy the answer
    /// (see `refuseDeclaredBody`), and a longer one is cut off.
    private func refuseChunkedBody() -> MHD_Result {
        let error = HTTPError.lengthRequired(
            "send the request body with a Content-Length; Transfer-Encoding: chunked is not accepted here")
        guard headers["Expect"]?.lowercased() != "100-continue" else { return reject(error, closingConnection: true) }
        phase = .discarding(error, budget: Self.overLimitAllowance, closing: true)
        return MHD_Result.YES
    }

    /// A declared body over the route's limit. A client that asked `Expect: 100-continue` is
    /// waiting for the answer before it sends the body: it gets the 413 at once. One that is
    /// sending the body already has it read and dropped, up to `discardAllowance` over the
    /// limit, and gets the 413 afterwards on a connection that stays open: answered at once,
    /// libmicrohttpd would close the connection with the body unread, and the kernel's reset can
    /// destroy the 413 before the client reads it (clients then saw "connection reset" instead of
    /// the vendor's error). A body far larger than that is cut off at once.
    private func refuseDeclaredBody(length: Int, limit: Int) -> MHD_Result {
        let error = HTTPError.payloadTooLarge(limit: limit)
        let waitsForContinue = headers["Expect"]?.lowercased() == "100-continue"
        guard !waitsForContinue, length <= limit + Self.discardAllowance else { return reject(error) }
        phase = .discarding(error, budget: length)
        return MHD_Result.YES
    }

    /// `Content-Length` as a number, saturated at `Int.max`: libmicrohttpd takes any value up to
    /// 2^64 − 1 (it answers a longer one itself), and one of 2^63 or more, not an `Int`, must not
    /// pass as "no declared length" and leave the connection waiting for a body that never ends.
    private var declaredLength: Int? {
        guard let declared = headers["Content-Length"], !declared.isEmpty,
            declared.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return Int(declared) ?? Int.max
    }

    /// How far past its limit a declared body is read and dropped to answer 413 properly.
    static let discardAllowance = 1 << 20

    /// Answers `error` once the request is complete (keeping the connection open), or now if
    /// the declared body is larger than `limit`.
    private func answerWhenComplete(_ error: HTTPError, limit: Int) -> MHD_Result {
        if let length = declaredLength, length > limit {
            return reject(error)
        }
        phase = .discarding(error, budget: limit)
        return MHD_Result.YES
    }

    /// Queues the error now, before (the rest of) the body is read; MHD then closes the
    /// connection if body bytes remain unread, and always with `closingConnection`.
    private func reject(_ error: HTTPError, closingConnection: Bool = false) -> MHD_Result {
        phase = .rejected
        if let connection { core.connections.requestReceived(connection) }
        let response = Self.render(error, for: makeRequest(withBody: false), with: routes)
        // libmicrohttpd refuses a response while body bytes are still arriving
        // (MHD_queue_response returns MHD_NO); answering MHD_NO then closes the connection,
        // which is the cut-off wanted here.
        return queue(response, closingConnection: closingConnection)
    }

    private func startHandler() -> MHD_Result {
        guard let route else { return reject(.internalError("no route")) }
        phase = .handling
        if let connection { core.connections.requestReceived(connection) }
        var request = makeRequest(withBody: true)
        request.pathParameters = route.parameters
        body = []
        let handler = route.handler
        let started = ContinuousClock.now
        // Runs the handler on this thread until its first suspension point: a handler that
        // answers without awaiting is queued below with no suspend, resume or thread hop.
        let task = Task.immediate { [self, request] in
            deliver(await handler(request))
        }
        let immediate: Response? = outcome.withLock { outcome in
            if outcome.response != nil { return outcome.response.take() }
            outcome.request = request
            outcome.routes = routes
            guard core.pending.register(self, deadline: started + core.requestTimeout) else {
                // Shutdown has begun: answer now rather than suspend.
                outcome.settled = true
                task.cancel()
                return Self.render(
                    .serviceUnavailable("the server is shutting down"), for: request, with: routes)
            }
            outcome.suspended = true
            outcome.task = task
            MHD_suspend_connection(connection)
            return nil
        }
        if let immediate { return queue(immediate) }
        return MHD_Result.YES
    }

    // MARK: Answers from other threads

    /// The handler's answer. Dropped when a timeout or shutdown answered first.
    func deliver(_ response: Response) {
        outcome.withLock { outcome in
            guard !outcome.settled else { return }
            outcome.settled = true
            outcome.response = response
            resumeIfSuspended(&outcome)
        }
    }

    /// Answers with `error` in the route's dialect unless the handler already answered, and
    /// cancels the handler.
    func abandon(with error: HTTPError) {
        let context = outcome.withLock { outcome in
            outcome.settled ? nil : (request: outcome.request, routes: outcome.routes)
        }
        guard let context, let request = context.request else { return }
        // Rendered outside the lock: a dialect responder is caller code.
        let response = Self.render(error, for: request, with: context.routes)
        outcome.withLock { outcome in
            guard !outcome.settled else { return }
            outcome.settled = true
            outcome.response = response
            outcome.task?.cancel()
            resumeIfSuspended(&outcome)
        }
    }

    private func resumeIfSuspended(_ outcome: inout Outcome) {
        guard outcome.suspended else { return }
        outcome.suspended = false
        outcome.task = nil
        core.pending.unregister(self)
        MHD_resume_connection(connection)
    }

    /// Called by MHD's request-completed callback: no answer may reach the connection after
    /// this.
    func finish() {
        outcome.withLock { outcome in
            outcome.settled = true
            outcome.response = nil
            outcome.task = nil
            outcome.request = nil
            outcome.routes = nil
        }
    }

    private static func render(
        _ error: HTTPError, for request: Request, with routes: RouteTableSnapshot?
    ) -> Response {
        routes?.table.renderError(error, for: request) ?? Router.nativeErrorResponse(error)
    }

    // MARK: MHD access

    private func makeRequest(withBody: Bool) -> Request {
        Request(
            method: method, rawTarget: rawTarget,
            target: target ?? RequestTarget(undecodable: rawTarget), headers: headers,
            body: withBody ? body : [], remoteAddress: remoteAddress(), isTLS: core.isTLS)
    }

    private func collectHeaders() -> CollectedHeaders {
        let count = Int(max(MHD_get_connection_values_n(connection, MHD_ValueKind.HEADER_KIND, nil, nil), 0))
        var collected = CollectedHeaders(headers: HTTPHeaders(reservingCapacity: count), places: [])
        collected.places.reserveCapacity(count)
        withUnsafeMutablePointer(to: &collected) { pointer in
            _ = MHD_get_connection_values_n(
                connection, MHD_ValueKind.HEADER_KIND, MHDCallbacks.collectHeader, pointer)
        }
        return collected
    }

    private func remoteAddress() -> String? {
        guard let connection, let address = tuisong_mhd_connection_client_address(connection)
        else { return nil }
        return formatAddress(address)
    }

    /// Hands `response` to MHD (which copies the body). A header MHD refuses (e.g. one with a
    /// line break) turns the answer into a 500.
    private func queue(_ response: Response, closingConnection: Bool = false) -> MHD_Result {
        var response = response
        if let error = response.error {
            response = Self.render(error, for: makeRequest(withBody: false), with: routes)
        }
        if let mhdResponse = makeMHDResponse(response, closingConnection: closingConnection) {
            defer { MHD_destroy_response(mhdResponse) }
            return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
        }
        let fallback = Router.nativeErrorResponse(
            .internalError("the handler produced an invalid response (status or header)"))
        guard let mhdResponse = makeMHDResponse(fallback, closingConnection: closingConnection)
        else { return MHD_Result.NO }
        defer { MHD_destroy_response(mhdResponse) }
        return MHD_queue_response(connection, UInt32(fallback.status), mhdResponse)
    }

    /// With `closingConnection` (or during shutdown) the answer carries `Connection: close`, on
    /// which MHD closes the connection once it is sent.
    private func makeMHDResponse(_ response: Response, closingConnection: Bool) -> OpaquePointer? {
        guard (100...999).contains(response.status) else { return nil }
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                .RESPMEM_MUST_COPY)
        }
        guard let created else { return nil }
        for (name, value) in response.headers
        where !asciiCaseInsensitiveEquals(name, "Content-Length") {
            guard MHD_add_response_header(created, name, value) == MHD_Result.YES else {
                MHD_destroy_response(created)
                return nil
            }
        }
        if closingConnection || core.shuttingDown.load(ordering: .relaxed) {
            _ = MHD_add_response_header(created, "Connection", "close")
        }
        return created
    }
}

extension RequestTarget {
    /// Stand-in for a target that failed to decode, so its error can still be rendered.
    init(undecodable rawTarget: String) {
        let rawPath = rawTarget.prefix { $0 != "?" }
        self.init(
            path: rawPath.isEmpty ? "/" : String(rawPath), segments: [], query: QueryParameters())
    }
}

/// `127.0.0.1` / `::1` for an IPv4 / IPv6 socket address.
func formatAddress(_ address: UnsafePointer<sockaddr>) -> String? {
    let family = Int32(address.pointee.sa_family)
    guard family == AF_INET || family == AF_INET6 else { return nil }
    // A stack buffer: this runs once per request.
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) {
        buffer -> String? in
        let written: UnsafePointer<CChar>?
        if family == AF_INET {
            written = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                var raw = ipv4.pointee.sin_addr
                return inet_ntop(AF_INET, &raw, buffer.baseAddress, socklen_t(buffer.count))
            }
        } else {
            written = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                var raw = ipv6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &raw, buffer.baseAddress, socklen_t(buffer.count))
            }
        }
        guard let written else { return nil }
        return String(validatingCString: written)
    }
}
