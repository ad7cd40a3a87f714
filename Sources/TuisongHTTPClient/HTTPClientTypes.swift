/// One HTTP request for `HTTPClient`.
///
///     let request = HTTPClientRequest(
///         url: "https://push.example.com/v1/messages:send",
///         headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")],
///         body: Array(json.utf8))
public struct HTTPClientRequest: Sendable {
    /// "POST", "GET", "PUT", "DELETE", "PATCH", "HEAD" (any other token is sent as is).
    public var method: String
    /// An absolute `http://` or `https://` URL; other schemes are refused.
    public var url: String
    /// Sent in this order. A body without a `Content-Type` goes out as curl's default,
    /// `application/x-www-form-urlencoded`.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The whole request, counted from `execute`: time waiting in the client's queue, connecting,
    /// sending and receiving. Past it the request fails with code "Timeout".
    public var timeout: Duration
    /// The response headers to keep, by name (compared case-insensitively): nil keeps them all.
    /// Each kept header costs two Strings on the client's thread; a caller that reads one header
    /// of the answer (`["retry-after"]`) names it and the others are skipped unread.
    public var responseHeaders: [String]?
    /// The most body bytes read of the answer: past it the transfer is cut off and the request
    /// fails with code "ResponseTooLarge", so an upstream that streams an endless or huge reply
    /// costs at most this much memory (each push service's documented answers are a few KB).
    public var maxResponseBytes: Int

    /// Every service's answer to a push or a sign-in fits well within this; a batch answer that
    /// lists its tokens asks for more (`TokenBatchTransport`).
    public static let defaultMaxResponseBytes = 64 * 1024
    /// The most header bytes (all lines of the answer together) read before the request fails
    /// with "ResponseTooLarge".
    public static let maxResponseHeaderBytes = 64 * 1024

    public init(
        method: String = "POST", url: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        timeout: Duration = .seconds(30), responseHeaders: [String]? = nil,
        maxResponseBytes: Int = HTTPClientRequest.defaultMaxResponseBytes
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.responseHeaders = responseHeaders
        self.maxResponseBytes = maxResponseBytes
    }
}

/// An HTTP answer, whatever its status (a 4xx or 5xx is a response, not an `HTTPClientError`).
public struct HTTPClientResponse: Sendable {
    public var status: Int
    /// In the order received; names lowercased. Interim (1xx) answers are not included, nor
    /// headers the request's `responseHeaders` did not name.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// 1 or 2: the HTTP version the connection negotiated (2 only over TLS with ALPN h2).
    public var httpVersion: Int

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [], httpVersion: Int = 1) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    /// The first header named `name`, compared case-insensitively: `response.header("Retry-After")`.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name == wanted }?.value
    }
}

/// A request that got no HTTP answer.
///
/// `code` is one of a few stable names — "Timeout", "ConnectFailed", "ResolveFailed", "TLS",
/// "ResponseTooLarge" (the answer passed the request's `maxResponseBytes` or the header limit),
/// "InvalidHeader" (a header's name or value holds CR, LF or NUL: the request is not sent),
/// "Shutdown", "Aborted", "Other" — and `detail` is curl's own message (its error buffer).
public struct HTTPClientError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: String
    public var detail: String

    public init(code: String, detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? code : "\(code): \(detail)" }

    static func shutdown() -> HTTPClientError {
        HTTPClientError(code: "Shutdown", detail: "the HTTP client was shut down")
    }
}

/// A snapshot of one client's counters, since it was created.
public struct HTTPClientStatistics: Sendable, Hashable {
    /// Sockets open now (connections in use or kept alive in curl's cache).
    public var openConnections: Int
    /// Sockets ever opened (each connection attempt counts, successful or not).
    public var connectionsOpened: Int
    /// Requests handed to curl.
    public var requestsStarted: Int
    /// Requests answered with an HTTP status (any status).
    public var requestsCompleted: Int
    /// Requests that ended without an HTTP answer: transport errors, timeouts (queued ones
    /// included) and shutdown.
    public var requestsFailed: Int
    /// Requests in curl now (at most `Configuration.maxInFlight`); the rest wait in the queue.
    public var inFlight: Int

    public init(
        openConnections: Int = 0, connectionsOpened: Int = 0, requestsStarted: Int = 0, requestsCompleted: Int = 0,
        requestsFailed: Int = 0, inFlight: Int = 0
    ) {
        self.openConnections = openConnections
        self.connectionsOpened = connectionsOpened
        self.requestsStarted = requestsStarted
        self.requestsCompleted = requestsCompleted
        self.requestsFailed = requestsFailed
        self.inFlight = inFlight
    }
}

/// An address the client is about to connect to (`HTTPClient.Configuration.connectAddressPolicy`).
public struct ConnectAddress: Sendable, Hashable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6, in network order.
    public var bytes: [UInt8]
    public var port: Int

    public init(bytes: [UInt8], port: Int) {
        self.bytes = bytes
        self.port = port
    }

    public var isIPv4: Bool { bytes.count == 4 }

    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        var groups: [String] = []
        for index in stride(from: 0, to: bytes.count, by: 2) {
            groups.append(String(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]), radix: 16))
        }
        return "[" + groups.joined(separator: ":") + "]"
    }
}
