import Foundation

/// Where an HTTP/2 server listens: TLS with ALPN `h2` to `host:port`.
///
/// ```swift
/// let endpoint = HTTP2Endpoint(url: "https://push.example.com")!
/// ```
public struct HTTP2Endpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int = 443) {
        self.host = host
        self.port = port
    }

    /// Parses `https://host[:port][/]`; `nil` for any other scheme, an empty host, a path or a
    /// port outside 1–65535. IPv6 literals are written in brackets (`https://[::1]:8443`).
    public init?(url: String) {
        let prefix = "https://"
        guard url.lowercased().hasPrefix(prefix) else { return nil }
        var rest = Substring(url.dropFirst(prefix.count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("@") else { return nil }
        var hostPart: Substring
        var portPart: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portPart = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        } else {
            hostPart = rest
        }
        guard !hostPart.isEmpty else { return nil }
        var port = 443
        if let portPart {
            guard let parsed = Int(portPart), (1...65535).contains(parsed) else { return nil }
            port = parsed
        }
        self.init(host: String(hostPart), port: port)
    }

    /// `https://host:port` (brackets around IPv6 literals).
    public var description: String {
        isIPv6Literal ? "https://[\(host)]:\(port)" : "https://\(host):\(port)"
    }

    private var isIPv6Literal: Bool { host.utf8.contains(UInt8(ascii: ":")) }

    /// The `:authority` pseudo-header: the port only when it is not 443.
    public var authority: String {
        let hostText = isIPv6Literal ? "[\(host)]" : host
        return port == 443 ? hostText : "\(hostText):\(port)"
    }
}

/// Why a request got no answer. The `code` says what kind of failure it was; `message` carries
/// the underlying library's words (errno text, OpenSSL's error queue, nghttp2's error).
public struct HTTP2ClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure. A struct, not an enum, so kinds can be added without breaking
    /// exhaustive switches in callers.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Kind: String, Sendable, Hashable {
            case connectFailed, tlsFailed, alpnNotNegotiated, timeout, connectionLost, shutdown,
                protocolError, cancelled, credentialFailed, certificateRejected
        }

        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }

        /// DNS, TCP connect or connect timeout failed.
        public static let connectFailed = Code(.connectFailed)
        /// The TLS handshake failed (certificate not trusted, host name mismatch, alert, …).
        public static let tlsFailed = Code(.tlsFailed)
        /// TLS worked but the server did not select `h2` through ALPN.
        public static let alpnNotNegotiated = Code(.alpnNotNegotiated)
        /// No answer within the request timeout; the stream was reset.
        public static let timeout = Code(.timeout)
        /// The connection broke while the request was in flight, more often than the retry
        /// budget allows.
        public static let connectionLost = Code(.connectionLost)
        /// The pool was shut down.
        public static let shutdown = Code(.shutdown)
        /// The server broke HTTP/2 (or reset the stream with an error).
        public static let protocolError = Code(.protocolError)
        /// The calling task was cancelled; the stream was reset.
        public static let cancelled = Code(.cancelled)
        /// The credential could not be used locally (e.g. signing a pool's authorization failed).
        public static let credentialFailed = Code(.credentialFailed)
        /// The server refused the client certificate during the TLS handshake (an alert such as
        /// bad_certificate, unknown_ca or certificate_expired): unusable until replaced.
        public static let certificateRejected = Code(.certificateRejected)

        public var description: String { kind.rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "HTTP/2 \(code): \(message)" }
}

/// What a request puts on the wire: its header block and its body. The service's request type
/// conforms, so its headers go straight into the connection's block with no list in between.
///
/// ```swift
/// extension MyRequest: HTTP2RequestHead {
///     func writeHeaders(into block: inout HTTP2HeaderBlock, authority: [UInt8], authorization: String?) {
///         block.append(":method", "POST")
///         block.append(":scheme", "https")
///         block.append(":authority", authority)
///         block.append(":path", "", path)
///         block.append("content-length", decimal: body.count)
///     }
/// }
/// ```
public protocol HTTP2RequestHead: Sendable {
    /// Writes every header of the request, pseudo-headers first (`:method`, `:scheme`,
    /// `:authority` — the endpoint's, given as `authority` — and `:path`). `authorization` is the
    /// pool's `HTTP2Authorizer` value for this attempt (nil without one); the request decides
    /// how it is sent.
    func writeHeaders(into block: inout HTTP2HeaderBlock, authority: [UInt8], authorization: String?)
    /// The request body, sent as DATA frames.
    var body: [UInt8] { get }
}

/// What a server answered to one request: its status, the response headers the pool was asked
/// to keep (`HTTP2ConnectionPool.Configuration.responseHeaders`) and the body (capped).
public struct HTTP2Response: Sendable {
    public var status: Int
    /// The kept headers, names in lower case, in the order they came.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first kept header of that (lower-case) name.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// One answer to a request sent with `HTTP2ConnectionPool.send(_:onAnswers:)`.
public struct HTTP2BatchAnswer: Sendable {
    /// The request's position in the array given to `send(_:onAnswers:)`.
    public var index: Int
    /// The server's response (any HTTP status), or why there is none.
    public var result: Result<HTTP2Response, HTTP2ClientError>

    public init(index: Int, result: Result<HTTP2Response, HTTP2ClientError>) {
        self.index = index
        self.result = result
    }
}

/// A pool-wide authorization value (a signed token the pool renews), as handed to requests.
public struct HTTP2Authorization: Sendable, Hashable {
    /// What the request writes (e.g. after `bearer `).
    public var value: String
    /// When it was issued: the one to drop when the server refuses it as expired.
    public var issuedAt: Date

    public init(value: String, issuedAt: Date) {
        self.value = value
        self.issuedAt = issuedAt
    }
}

/// Authorization a pool adds to every request itself, for a service that authenticates a
/// connection's requests with one token it renews (rather than each request carrying its own).
///
/// The pool asks for the current value once per round of assignments, opens one stream per
/// connection until an answer shows the value accepted (a wrong key then costs one request,
/// not a burst), and when an answer refuses it as expired, invalidates it and sends that
/// request once more.
public protocol HTTP2Authorizer: AnyObject, Sendable {
    /// The value for requests sent now. Called on the pool's thread: no waiting.
    func currentAuthorization() throws(HTTP2ClientError) -> HTTP2Authorization
    /// Whether an answer with this status shows the server accepted the authorization.
    func answerProvesAuthorized(status: Int) -> Bool
    /// Whether this answer refuses the authorization as expired (the request is retried once).
    func answerRefusesAsExpired(status: Int, body: [UInt8]) -> Bool
    /// The server refused `authorization` as expired: the next `currentAuthorization` is new.
    func invalidate(_ authorization: HTTP2Authorization)
}

/// A request's header block: every name and value in one byte buffer, with their ranges, then
/// handed to nghttp2 as name/value entries pointing into it (nghttp2 copies them on submit).
public struct HTTP2HeaderBlock {
    var bytes: [UInt8] = []
    var ranges: [(name: Range<Int>, value: Range<Int>)] = []

    public init() {}

    mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        ranges.removeAll(keepingCapacity: true)
    }

    public mutating func append(_ name: StaticString, _ value: StaticString) {
        let header = beginHeader(name)
        value.withUTF8Buffer { bytes.append(contentsOf: $0) }
        endHeader(header)
    }

    public mutating func append(_ name: StaticString, _ value: [UInt8]) {
        let header = beginHeader(name)
        bytes.append(contentsOf: value)
        endHeader(header)
    }

    /// `prefix` then `value`, as one header value (`bearer <token>`, `/3/device/<token>`).
    public mutating func append(_ name: StaticString, _ prefix: StaticString, _ value: String) {
        let header = beginHeader(name)
        prefix.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: value.utf8)
        endHeader(header)
    }

    public mutating func append(_ name: StaticString, decimal value: Int) {
        let header = beginHeader(name)
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        let digitsStart = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        bytes[digitsStart...].reverse()
        endHeader(header)
    }

    /// Appends the name; returns where the name and the value start.
    private mutating func beginHeader(_ name: StaticString) -> (name: Int, value: Int) {
        let nameStart = bytes.count
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        return (nameStart, bytes.count)
    }

    private mutating func endHeader(_ start: (name: Int, value: Int)) {
        ranges.append((start.name..<start.value, start.value..<bytes.count))
    }
}

@available(*, unavailable)
extension HTTP2HeaderBlock: Sendable {}
