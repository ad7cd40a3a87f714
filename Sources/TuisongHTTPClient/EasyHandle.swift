internal import CCurl
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The client's counters: written on the event thread (and by curl's socket callbacks, which
/// run there), read from any thread through `HTTPClient.statistics`.
final class ClientCounters: Sendable {
    let openConnections = Atomic<Int>(0)
    let connectionsOpened = Atomic<Int>(0)
    let requestsStarted = Atomic<Int>(0)
    let requestsCompleted = Atomic<Int>(0)
    let requestsFailed = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    /// The client's `connectAddressPolicy`, asked by the open-socket callback.
    let addressPolicy: (@Sendable (ConnectAddress) -> Bool)?

    init(addressPolicy: (@Sendable (ConnectAddress) -> Bool)? = nil) {
        self.addressPolicy = addressPolicy
    }

    var snapshot: HTTPClientStatistics {
        HTTPClientStatistics(
            openConnections: openConnections.load(ordering: .relaxed),
            connectionsOpened: connectionsOpened.load(ordering: .relaxed),
            requestsStarted: requestsStarted.load(ordering: .relaxed),
            requestsCompleted: requestsCompleted.load(ordering: .relaxed),
            requestsFailed: requestsFailed.load(ordering: .relaxed),
            inFlight: inFlight.load(ordering: .relaxed))
    }
}

/// What every transfer of one client shares.
struct TransferSettings {
    var connectTimeoutMilliseconds: Int
    var caFile: String?
    var userAgent: String
}

typealias Completion = @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void
typealias BatchCompletion = @Sendable ([(index: Int, result: Result<HTTPClientResponse, HTTPClientError>)]) -> Void

/// The caller of a batch `execute`: answers are gathered here as transfers end and handed over
/// together once per pass of the event loop (`CurlEngine.flushBatches`), so a batch's caller
/// pays one call (and whatever lock it takes) per pass rather than one per request.
final class BatchReceiver: @unchecked Sendable {
    // @unchecked Sendable: `completion` is immutable; `pending` and `enlisted` are touched only on
    // the event thread (a receiver crosses threads once, inside the inbox lock, before any answer).
    let completion: BatchCompletion
    var pending: [(index: Int, result: Result<HTTPClientResponse, HTTPClientError>)] = []
    /// Listed in the engine's receivers to flush at the end of the pass.
    var enlisted = false

    init(_ completion: @escaping BatchCompletion) {
        self.completion = completion
    }
}

/// Who hears a request's answer: its own completion, or its batch's receiver (with its index).
enum Receiver {
    case single(Completion)
    case batch(BatchReceiver, Int)
}

/// One curl easy handle and the transfer it carries. Reused from request to request; owned by the
/// client's event thread and never touched elsewhere.
final class EasyHandle {
    let curl: UnsafeMutableRawPointer
    /// curl writes its message for a failed transfer here (CURLOPT_ERRORBUFFER).
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// The last request's header list, kept set on the handle and reused while the next request's
    /// headers are the same (a transport's requests share theirs): curl_slist_append mallocs a
    /// node and a copy per line.
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var listedHeaders: [(name: String, value: String)] = []
    /// The request body, handed to curl by pointer (CURLOPT_POSTFIELDS) rather than copied by
    /// curl (CURLOPT_COPYPOSTFIELDS, a malloc and free per request): grown as needed, reused.
    private var bodyBuffer: UnsafeMutableRawPointer
    private var bodyCapacity: Int

    /// CURLOPT_UPLOAD_BUFFERSIZE's minimum.
    static let uploadBufferSize = 16 * 1024
    static let downloadBufferSize = 8 * 1024

    // The transfer in progress.
    var receiver: Receiver?
    /// Monotonic nanoseconds after which the request has outlived its timeout.
    var deadline: UInt64 = 0
    private var responseHeaders: [(name: String, value: String)] = []
    private var responseBody: [UInt8] = []
    /// The request's `responseHeaders`: nil keeps every header.
    private var wantedHeaders: [String]?
    /// The request's `maxResponseBytes`, and the header bytes read so far.
    private var bodyLimit = HTTPClientRequest.defaultMaxResponseBytes
    private var headerBytes = 0
    /// Set when the answer passed a limit: the callback that saw it returned a short count, so
    /// curl ended the transfer (CURLE_WRITE_ERROR) without reading the rest.
    private var exceededLimit: String?
    /// The client's counters and address policy (the open-socket callback's, through this handle).
    let counters: ClientCounters
    /// Set by the open-socket callback when the address policy refused an address of this transfer.
    var refusedAddress: ConnectAddress?

    /// Creates the handle with the options every request of the client shares; `counters` (the
    /// socket callbacks' context) must outlive the handle.
    init(settings: TransferSettings, counters: UnsafeMutableRawPointer) throws(HTTPClientError) {
        guard let curl = curl_easy_init() else {
            throw HTTPClientError(code: "Other", detail: "curl_easy_init failed")
        }
        self.curl = curl
        self.counters = Unmanaged<ClientCounters>.fromOpaque(counters).takeUnretainedValue()
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        bodyCapacity = 1024
        bodyBuffer = .allocate(byteCount: bodyCapacity, alignment: 16)
        let context = Unmanaged.passUnretained(self).toOpaque()
        var failed: CURLcode = CURLE_OK
        func check(_ code: CURLcode) {
            if code != CURLE_OK && failed == CURLE_OK { failed = code }
        }
        // Only HTTP(S): a URL from configuration must not become file:// or gopher://.
        check(tuisong_curl_easy_setopt_str(curl, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(tuisong_curl_easy_setopt_long(curl, CURLOPT_NOSIGNAL, 1))
        check(tuisong_curl_easy_setopt_long(curl, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
        // Wait for a connection that may multiplex rather than open one more per request.
        check(tuisong_curl_easy_setopt_long(curl, CURLOPT_PIPEWAIT, 1))
        check(tuisong_curl_easy_setopt_long(curl, CURLOPT_TCP_NODELAY, 1))
        // Buffers a handle allocates once and keeps: 64 KB for uploads and 16 KB for downloads by
        // default, 80 KB for each of up to maxInFlight handles. Push requests and answers are
        // small JSON; larger bodies still pass, in more rounds.
        check(tuisong_curl_easy_setopt_long(curl, CURLOPT_UPLOAD_BUFFERSIZE, Self.uploadBufferSize))
        check(tuisong_curl_easy_setopt_long(curl, CURLOPT_BUFFERSIZE, Self.downloadBufferSize))
        if let caFile = settings.caFile {
            check(tuisong_curl_easy_setopt_str(curl, CURLOPT_CAINFO, caFile))
        }
        check(tuisong_curl_easy_setopt_str(curl, CURLOPT_USERAGENT, settings.userAgent))
        check(tuisong_curl_easy_setopt_ptr(curl, CURLOPT_ERRORBUFFER, errorBuffer))
        check(tuisong_curl_easy_setopt_write_function(curl, CURLOPT_WRITEFUNCTION, bodyCallback))
        check(tuisong_curl_easy_setopt_ptr(curl, CURLOPT_WRITEDATA, context))
        check(tuisong_curl_easy_setopt_write_function(curl, CURLOPT_HEADERFUNCTION, headerCallback))
        check(tuisong_curl_easy_setopt_ptr(curl, CURLOPT_HEADERDATA, context))
        check(tuisong_curl_easy_setopt_opensocket_function(curl, openSocketCallback))
        check(tuisong_curl_easy_setopt_ptr(curl, CURLOPT_OPENSOCKETDATA, context))
        check(tuisong_curl_easy_setopt_closesocket_function(curl, closeSocketCallback))
        check(tuisong_curl_easy_setopt_ptr(curl, CURLOPT_CLOSESOCKETDATA, counters))
        guard failed == CURLE_OK else { throw error(for: failed) }
    }

    deinit {
        curl_easy_cleanup(curl)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
        bodyBuffer.deallocate()
    }

    /// Sets the options of `request`, every one a previous request may have set (the handle is
    /// reused without curl_easy_reset, which would throw away the shared options above).
    /// Returns the error when curl refuses one.
    func prepare(
        _ request: HTTPClientRequest, timeoutMilliseconds: Int, connectTimeoutMilliseconds: Int
    ) -> HTTPClientError? {
        errorBuffer[0] = 0
        // The last line of defence against header injection: a CR or LF would end the line and
        // start another header (or the body), a NUL would cut it short. Credentials and ids are
        // checked where they are added; nothing that slipped past reaches the wire.
        if let bad = Self.unsafeHeader(request.headers) {
            return HTTPClientError(
                code: "InvalidHeader", detail: "the request's header \(bad) contains CR, LF or NUL; not sent")
        }
        var failed: CURLcode = CURLE_OK
        func check(_ code: CURLcode) {
            if code != CURLE_OK && failed == CURLE_OK { failed = code }
        }
        check(tuisong_curl_easy_setopt_str(curl, CURLOPT_URL, request.url))
        check(tuisong_curl_easy_setopt_long(curl, CURLOPT_TIMEOUT_MS, timeoutMilliseconds))
        check(
            tuisong_curl_easy_setopt_long(
                curl, CURLOPT_CONNECTTIMEOUT_MS, min(connectTimeoutMilliseconds, timeoutMilliseconds)))

        // The common case without uppercased()'s new String.
        let method = request.method == "POST" ? "POST" : request.method.uppercased()
        if method == "HEAD" {
            check(tuisong_curl_easy_setopt_long(curl, CURLOPT_NOBODY, 1))
            check(tuisong_curl_easy_setopt_str(curl, CURLOPT_CUSTOMREQUEST, nil))
        } else if !request.body.isEmpty || method == "POST" || method == "PUT" || method == "PATCH" {
            check(tuisong_curl_easy_setopt_long(curl, CURLOPT_NOBODY, 0))
            // The body stays in `bodyBuffer` until the transfer has ended (the handle is reused
            // only after that). The size first: setting it drops a COPYPOSTFIELDS copy, never the
            // pointer set after it; curl sends exactly that many bytes (NULs included).
            let count = request.body.count
            if count > bodyCapacity {
                bodyBuffer.deallocate()
                bodyCapacity = max(count, bodyCapacity * 2)
                bodyBuffer = .allocate(byteCount: bodyCapacity, alignment: 16)
            }
            request.body.withUnsafeBytes { bytes in
                if count > 0 { bodyBuffer.copyMemory(from: bytes.baseAddress!, byteCount: count) }
            }
            check(tuisong_curl_easy_setopt_off(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(count)))
            check(tuisong_curl_easy_setopt_ptr(curl, CURLOPT_POSTFIELDS, bodyBuffer))
            check(tuisong_curl_easy_setopt_str(curl, CURLOPT_CUSTOMREQUEST, method == "POST" ? nil : method))
        } else {
            // Back to a bodiless GET (NOBODY off, no upload), then the method's own name.
            check(tuisong_curl_easy_setopt_long(curl, CURLOPT_HTTPGET, 1))
            check(tuisong_curl_easy_setopt_str(curl, CURLOPT_CUSTOMREQUEST, method == "GET" ? nil : method))
        }

        if headerList == nil || !Self.sameHeaders(request.headers, listedHeaders) {
            var list: UnsafeMutablePointer<curl_slist>?
            for header in request.headers {
                // "Name;" is curl's way to send a header with an empty value ("Name:" removes it).
                let line = header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)"
                list = curl_slist_append(list, line)
            }
            // No "Expect: 100-continue" round trip before an HTTP/1.1 body over 1 KB.
            list = curl_slist_append(list, "Expect:")
            let set = tuisong_curl_easy_setopt_ptr(curl, CURLOPT_HTTPHEADER, list)
            check(set)
            if set == CURLE_OK {
                // curl holds the new list now; the old one is no longer referenced.
                curl_slist_free_all(headerList)
                headerList = list
                listedHeaders = request.headers
            } else {
                // curl kept the old list (and the request fails): the new one was never its.
                curl_slist_free_all(list)
            }
        }
        wantedHeaders = request.responseHeaders
        refusedAddress = nil
        bodyLimit = max(0, request.maxResponseBytes)
        headerBytes = 0
        exceededLimit = nil
        // A declared Content-Length over the limit is refused before any of the body is read
        // (CURLE_FILESIZE_EXCEEDED); a body without one is cut in `receiveBody`.
        check(tuisong_curl_easy_setopt_off(curl, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(bodyLimit)))

        guard failed == CURLE_OK else { return error(for: failed) }
        return nil
    }

    /// The answer (or error) of the finished transfer; leaves the handle empty.
    func outcome(_ result: CURLcode) -> Result<HTTPClientResponse, HTTPClientError> {
        defer {
            responseHeaders = []
            responseBody = []
            exceededLimit = nil
        }
        if let exceededLimit {
            return .failure(HTTPClientError(code: "ResponseTooLarge", detail: exceededLimit))
        }
        if result != CURLE_OK, let refusedAddress {
            return .failure(
                HTTPClientError(
                    code: "AddressRefused",
                    detail: "connecting to \(refusedAddress) is not allowed by the client's policy"))
        }
        if result == CURLE_FILESIZE_EXCEEDED {
            return .failure(
                HTTPClientError(
                    code: "ResponseTooLarge", detail: "the answer's Content-Length is over \(bodyLimit) bytes"))
        }
        guard result == CURLE_OK else { return .failure(error(for: result)) }
        var status = 0
        _ = tuisong_curl_easy_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status)
        var version = 0
        _ = tuisong_curl_easy_getinfo_long(curl, CURLINFO_HTTP_VERSION, &version)
        let httpVersion =
            switch version {
            case Int(CURL_HTTP_VERSION_2_0): 2
            case Int(CURL_HTTP_VERSION_3): 3
            default: 1
            }
        return .success(
            HTTPClientResponse(
                status: status, headers: responseHeaders, body: responseBody, httpVersion: httpVersion))
    }

    /// The name of the first header whose name or value holds CR, LF or NUL, or has a colon or
    /// nothing in its name (its value is never told: it may be a secret); nil when all are safe.
    static func unsafeHeader(_ headers: [(name: String, value: String)]) -> String? {
        func unsafe(_ byte: UInt8) -> Bool { byte == 0x0D || byte == 0x0A || byte == 0 }
        for header in headers {
            let nameUnsafe =
                header.name.isEmpty || header.name.utf8.contains { unsafe($0) || $0 == UInt8(ascii: ":") }
            if nameUnsafe || header.value.utf8.contains(where: unsafe) {
                let printable = String(
                    decoding: header.name.utf8.filter { !unsafe($0) }.prefix(64), as: UTF8.self)
                return "\"\(printable)\""
            }
        }
        return nil
    }

    /// Forgets the request once its transfer has ended: its receiver and response. The header
    /// list stays set for the next request that sends the same headers, and the body in
    /// `bodyBuffer` until the next request replaces it (a GET sends none).
    func clear() {
        receiver = nil
        wantedHeaders = nil
        responseHeaders = []
        responseBody = []
        exceededLimit = nil
    }

    /// Same names and values in the same order. Strings of the same storage (one token's
    /// headers, shared by a batch) compare without reading their bytes.
    static func sameHeaders(
        _ a: [(name: String, value: String)], _ b: [(name: String, value: String)]
    ) -> Bool {
        guard a.count == b.count else { return false }
        for index in a.indices where a[index].name != b[index].name || a[index].value != b[index].value {
            return false
        }
        return true
    }

    func error(for code: CURLcode) -> HTTPClientError {
        var detail = String(cString: errorBuffer)
        if detail.isEmpty { detail = String(cString: curl_easy_strerror(code)) }
        return HTTPClientError(code: Self.errorCode(for: code), detail: "\(detail) (curl error \(code.rawValue))")
    }

    static func errorCode(for code: CURLcode) -> String {
        switch code {
        case CURLE_OPERATION_TIMEDOUT: "Timeout"
        case CURLE_COULDNT_CONNECT: "ConnectFailed"
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: "ResolveFailed"
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_CLIENTCERT,
            CURLE_USE_SSL_FAILED:
            "TLS"
        case CURLE_ABORTED_BY_CALLBACK: "Aborted"
        default: "Other"
        }
    }

    // MARK: Called from curl's callbacks (on the event thread, inside curl_multi_perform)

    /// Keeps the bytes, or says no (false) once the answer passes the request's limit.
    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard responseBody.count + bytes.count <= bodyLimit else {
            exceededLimit = "the answer's body passed \(bodyLimit) bytes"
            return false
        }
        responseBody.append(contentsOf: bytes)
        return true
    }

    /// One header line as curl hands it over (CRLF included). A status line starts a new
    /// header block, so an interim 1xx answer's headers are dropped. False once the header
    /// lines of the answer (every block) pass `HTTPClientRequest.maxResponseHeaderBytes`.
    fileprivate func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Bool {
        headerBytes += line.count
        guard headerBytes <= HTTPClientRequest.maxResponseHeaderBytes else {
            exceededLimit = "the answer's headers passed \(HTTPClientRequest.maxResponseHeaderBytes) bytes"
            return false
        }
        receiveHeader(line)
        return true
    }

    private func receiveHeader(_ line: UnsafeRawBufferPointer) {
        var end = line.count
        while end > 0 && (line[end - 1] == 10 || line[end - 1] == 13) { end -= 1 }
        guard end > 0 else { return }
        if end >= 5 && line[0] == UInt8(ascii: "H") && line[1] == UInt8(ascii: "T") && line[2] == UInt8(ascii: "T")
            && line[3] == UInt8(ascii: "P") && line[4] == UInt8(ascii: "/")
        {
            responseHeaders.removeAll(keepingCapacity: true)
            return
        }
        // A line without a colon (an obsolete folded continuation) carries no header of its own.
        guard let colon = line[..<end].firstIndex(of: UInt8(ascii: ":")) else { return }
        if let wanted = wantedHeaders, !wanted.contains(where: { Self.nameMatches($0, line, colon) }) { return }
        var valueStart = colon + 1
        while valueStart < end && (line[valueStart] == 32 || line[valueStart] == 9) { valueStart += 1 }
        var valueEnd = end
        while valueEnd > valueStart && (line[valueEnd - 1] == 32 || line[valueEnd - 1] == 9) { valueEnd -= 1 }
        let name = String(unsafeUninitializedCapacity: colon) { buffer in
            for index in 0..<colon {
                let byte = line[index]
                buffer[index] = byte >= 65 && byte <= 90 ? byte + 32 : byte
            }
            return colon
        }
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: line[valueStart..<valueEnd]), as: UTF8.self)
        responseHeaders.append((name: name, value: value))
    }

    /// `name` equals the first `length` bytes of `line`, ASCII case-insensitively.
    private static func nameMatches(_ name: String, _ line: UnsafeRawBufferPointer, _ length: Int) -> Bool {
        var index = 0
        for byte in name.utf8 {
            guard index < length else { return false }
            let other = line[index]
            guard (byte >= 65 && byte <= 90 ? byte + 32 : byte) == (other >= 65 && other <= 90 ? other + 32 : other)
            else { return false }
            index += 1
        }
        return index == length
    }
}

@available(*, unavailable)
extension EasyHandle: Sendable {}

// C callbacks: free functions (never closures written in main.swift, see design.md), touching
// only the object their context pointer names.

/// CURLOPT_WRITEFUNCTION: appends body bytes to the handle's response. Returning fewer bytes
/// than handed over (0) makes curl end the transfer: how an answer over its limit is cut off.
private let bodyCallback: curl_write_callback = { buffer, size, count, context in
    let length = size * count
    guard let buffer, let context, length > 0 else { return length }
    let kept = Unmanaged<EasyHandle>.fromOpaque(context).takeUnretainedValue()
        .receiveBody(UnsafeRawBufferPointer(start: buffer, count: length))
    return kept ? length : 0
}

/// CURLOPT_HEADERFUNCTION: one header line at a time; 0 ends the transfer as above.
private let headerCallback: curl_write_callback = { buffer, size, count, context in
    let length = size * count
    guard let buffer, let context, length > 0 else { return length }
    let kept = Unmanaged<EasyHandle>.fromOpaque(context).takeUnretainedValue()
        .receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: length))
    return kept ? length : 0
}

/// CURLOPT_OPENSOCKETFUNCTION: asks the client's address policy about the address curl is about
/// to connect to (every connection, whatever the host resolved to this time), then opens the
/// socket as curl would (curl sets non-blocking and the socket options afterwards) and counts it.
private let openSocketCallback: curl_opensocket_callback = { context, _, address in
    guard let context, let address else { return tuisong_curl_socket_bad() }
    let handle = Unmanaged<EasyHandle>.fromOpaque(context).takeUnretainedValue()
    let counters = handle.counters
    if let policy = counters.addressPolicy {
        guard let candidate = connectAddress(address), policy(candidate) else {
            handle.refusedAddress = connectAddress(address) ?? ConnectAddress(bytes: [], port: 0)
            return tuisong_curl_socket_bad()
        }
    }
    let fd = socket(
        address.pointee.family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
    guard fd >= 0 else { return tuisong_curl_socket_bad() }
    counters.openConnections.add(1, ordering: .relaxed)
    counters.connectionsOpened.add(1, ordering: .relaxed)
    return fd
}

/// CURLOPT_CLOSESOCKETFUNCTION: closes what the open callback opened, and counts it.
private let closeSocketCallback: curl_closesocket_callback = { context, fd in
    if let context {
        Unmanaged<ClientCounters>.fromOpaque(context).takeUnretainedValue()
            .openConnections.subtract(1, ordering: .relaxed)
    }
    return close(fd)
}

/// The IPv4 or IPv6 address and port of curl's socket address; nil for another family. curl's
/// `addr` is declared a `struct sockaddr` but is followed by room for an IPv6 address (curl
/// allocates a `sockaddr_storage`), so it is read through a raw pointer at its offset.
private func connectAddress(_ address: UnsafeMutablePointer<curl_sockaddr>) -> ConnectAddress? {
    let base = UnsafeRawPointer(address).advanced(by: MemoryLayout<curl_sockaddr>.offset(of: \.addr)!)
    let length = Int(address.pointee.addrlen)
    switch address.pointee.family {
    case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
        let v4 = base.loadUnaligned(as: sockaddr_in.self)
        return withUnsafeBytes(of: v4.sin_addr) {
            ConnectAddress(bytes: Array($0), port: Int(UInt16(bigEndian: v4.sin_port)))
        }
    case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
        let v6 = base.loadUnaligned(as: sockaddr_in6.self)
        return withUnsafeBytes(of: v6.sin6_addr) {
            ConnectAddress(bytes: Array($0), port: Int(UInt16(bigEndian: v6.sin6_port)))
        }
    default:
        return nil
    }
}
