import Foundation
@_exported import TuisongHTTP2Client

/// Where APNs (or a look-alike) listens: an HTTP/2 endpoint of the shared engine.
///
/// ```swift
/// let production = APNsEndpoint(url: "https://api.push.apple.com:443")!
/// ```
public typealias APNsEndpoint = HTTP2Endpoint

extension HTTP2Endpoint {
    /// Apple's production and development hosts.
    public static let production = APNsEndpoint(host: "api.push.apple.com", port: 443)
    public static let sandbox = APNsEndpoint(host: "api.sandbox.push.apple.com", port: 443)
}

/// What APNs' pools report: the engine's pool figures.
public typealias PoolStatistics = HTTP2PoolStatistics

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

extension APNsRequest: HTTP2RequestHead {
    /// `POST /3/device/<token>` with the `apns-*` headers; `authorization` is the pool's provider
    /// token (token credentials), sent as `bearer <JWT>`.
    public func writeHeaders(into block: inout HTTP2HeaderBlock, authority: [UInt8], authorization: String?) {
        block.append(":method", "POST")
        block.append(":scheme", "https")
        block.append(":authority", authority)
        block.append(":path", "/3/device/", deviceToken)
        if let authorization { block.append("authorization", "bearer ", authorization) }
        block.append("apns-push-type", "", pushType)
        block.append("apns-topic", "", topic)
        if let priority { block.append("apns-priority", decimal: priority) }
        if let expiration { block.append("apns-expiration", decimal: expiration) }
        if let collapseID { block.append("apns-collapse-id", "", collapseID) }
        if let apnsID { block.append("apns-id", "", apnsID) }
        block.append("content-length", decimal: payload.count)
    }

    public var body: [UInt8] { payload }
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

/// Why a request got no APNs answer. The `code` says what kind of failure it was (the HTTP/2
/// engine's codes); `message` carries the underlying library's words (errno text, OpenSSL's
/// error queue, nghttp2's error).
public struct APNsTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure: the engine's (`HTTP2ClientError.Code`).
    public typealias Code = HTTP2ClientError.Code

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The engine's error, as APNs's.
    public init(_ error: HTTP2ClientError) {
        self.init(error.code, error.message)
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
