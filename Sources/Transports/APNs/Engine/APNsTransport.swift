import Foundation

/// Where APNs (or a look-alike) listens.
///
/// ```swift
/// let production = APNsEndpoint(url: "https://api.push.apple.com:443")!
/// ```
public struct APNsEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    /// Apple's production and development hosts.
    public static let production = APNsEndpoint(host: "api.push.apple.com", port: 443)
    public static let sandbox = APNsEndpoint(host: "api.sandbox.push.apple.com", port: 443)

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
    var authority: String {
        let hostText = isIPv6Literal ? "[\(host)]" : host
        return port == 443 ? hostText : "\(hostText):\(port)"
    }
}

/// One notification to one device, exactly as it goes on the wire.
public struct APNsRequest: Sendable, Hashable {
    /// Hex device token (the `:path` is `/3/device/<deviceToken>`).
    public var deviceToken: String
    /// `apns-push-type`: alert, background, voip, …
    public var pushType: String
    /// `apns-topic`: the bundle id plus the push type's suffix.
    public var topic: String
    /// `apns-priority` (10, 5 or 1); omitted when `nil` (APNs then uses 10).
    public var priority: Int?
    /// `apns-expiration` in epoch seconds; `0` means deliver once or drop.
    public var expiration: Int?
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?
    /// `apns-id`, a lower-case canonical UUID; APNs assigns one when `nil`.
    public var apnsID: String?
    /// The JSON payload.
    public var payload: [UInt8]

    public init(
        deviceToken: String, pushType: String, topic: String, priority: Int? = nil,
        expiration: Int? = nil, collapseID: String? = nil, apnsID: String? = nil,
        payload: [UInt8]
    ) {
        self.deviceToken = deviceToken
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }
}

/// What APNs answered for one request.
public struct APNsResponse: Sendable, Hashable {
    /// The HTTP status: 200 accepted, otherwise an error with a `reason`.
    public var status: Int
    /// The `apns-id` response header.
    public var apnsID: String?
    /// The `reason` of the JSON error body (`BadDeviceToken`, `Unregistered`, …).
    public var reason: String?
    /// For 410: since when the token is no longer valid (the body's `timestamp`, in ms).
    public var timestamp: Date?

    public init(status: Int, apnsID: String? = nil, reason: String? = nil, timestamp: Date? = nil) {
        self.status = status
        self.apnsID = apnsID
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Builds a response from the status, the `apns-id` header and the raw body
    /// (`{"reason":"Unregistered","timestamp":1700000000000}`); a body that is not that JSON
    /// leaves `reason` nil rather than failing the request. A 200 body is ignored.
    init(status: Int, apnsID: String?, body: [UInt8]) {
        var reason: String?
        var timestamp: Date?
        if status != 200, body.first == UInt8(ascii: "{"),
            let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(body))
        {
            reason = decoded.reason
            timestamp = decoded.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) }
        }
        self.init(status: status, apnsID: apnsID, reason: reason, timestamp: timestamp)
    }

    private struct ErrorBody: Decodable {
        var reason: String?
        /// Milliseconds since 1970.
        var timestamp: Double?
    }
}

/// Why a request got no APNs answer. The `code` says what kind of failure it was; `message`
/// carries the underlying library's words (errno text, OpenSSL's error queue, nghttp2's error).
public struct APNsTransportError: Error, Sendable, Hashable, CustomStringConvertible {
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
        /// The credential could not be used locally (e.g. signing the provider token failed).
        public static let credentialFailed = Code(.credentialFailed)
        /// The server refused the client certificate during the TLS handshake (an alert such as
        /// bad_certificate, unknown_ca or certificate_expired): the certificate credential is
        /// unusable until replaced, like APNs' 403 BadCertificate.
        public static let certificateRejected = Code(.certificateRejected)

        public var description: String { kind.rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "APNs \(code): \(message)" }
}

/// Sends notifications to APNs. The connection pool is the real implementation; tests of the
/// layers above can supply their own.
///
/// An implementation must answer every `send` exactly once: with APNs' response (any status),
/// or with an `APNsTransportError` when no response could be obtained.
public protocol APNsTransport: Sendable {
    func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse
    /// Fails waiting requests with `.shutdown`, closes connections; idempotent.
    func shutdown() async
}
