package import TuisongCrypto

/// A service plugged into the look-alike server's port: the server reads each request off
/// TLS and HTTP/2 and asks the services, in the registry's order, for its answer
/// (`respond(to:call:)`); the first that answers, answers. The kit's `LookAlikeService` is this
/// with the token store, recorder and receipts the token-based look-alikes share; a service
/// with its own rules (its own tokens, client certificates, stream limits, faults and records)
/// implements it directly.
///
/// Called on the event-loop threads, many at once: what a service keeps across requests is
/// `Sendable`, and what it keeps per connection it makes in `connectionOpened`, which only that
/// connection's thread touches.
package protocol PortService: AnyObject, Sendable {
    /// The service it answers as (its channel's name).
    var service: AndroidPushService { get }
    /// Path prefixes whose request bodies are kept up to another size than the server's
    /// (`LookAlikeHost.bodyStorageLimit`): a service that refuses anything larger anyway keeps
    /// less. Read once, when the server starts.
    var bodyStorageLimits: [(pathPrefix: String, bytes: Int)] { get }
    /// Its own part of `faults`, made whenever the faults change (never per request) and
    /// handed back with each request (`PortCall.preparedFaults`); throws for faults of its own
    /// that do not read.
    func prepareFaults(_ faults: LookAlikeConfiguration.Faults) throws -> (any AnyObject & Sendable)?
    /// What it keeps about a connection (handed back as `PortCall.connectionState` with each
    /// request on it), made when the connection's TLS handshake is done; `clientCertificate`
    /// is the certificate the client presented when one of the configured CAs issued it.
    func connectionOpened(clientCertificate: Certificate?) -> AnyObject?
    /// Its answer to `request` when the path is one of its own; nil when it is not.
    func respond(to request: LookAlikeRequest, call: PortCall) -> LookAlikeAnswer?
    /// Its answer to a request no service claimed, when it is the one that answers those (the
    /// port's default); nil otherwise.
    func respondUnclaimed(to request: LookAlikeRequest, call: PortCall) -> LookAlikeAnswer?
    /// Trusts a stored credential of its channel (local mode: one an app uploaded), as the
    /// real service knows the credentials its console issued.
    func trust(vendorAppID: String, clientID: String, secret: [UInt8]) throws
    /// Forgets what it recorded of the requests it answered.
    func resetRecorded()
    /// Zeroes its counters.
    func resetStatistics()
    /// Its counters as the CLI's look-alike command prints them when it stops.
    func statisticsSummary() -> [String: Int]
}

extension PortService {
    package var bodyStorageLimits: [(pathPrefix: String, bytes: Int)] { [] }
    package func prepareFaults(_ faults: LookAlikeConfiguration.Faults) throws -> (any AnyObject & Sendable)? { nil }
    package func connectionOpened(clientCertificate: Certificate?) -> AnyObject? { nil }
    package func respondUnclaimed(to request: LookAlikeRequest, call: PortCall) -> LookAlikeAnswer? { nil }
    package func resetRecorded() {}
    package func resetStatistics() {}
}

/// What the server hands a service with a request besides the request. A few references, no
/// copy of anything large: it is made for every request.
package struct PortCall {
    /// The faults in force.
    package let faults: ActiveFaults
    /// What this service's `prepareFaults` made of them.
    package let preparedFaults: (any AnyObject & Sendable)?
    /// What this service's `connectionOpened` made for the request's connection.
    package let connectionState: AnyObject?
}

/// The request headers other than the pseudo-headers, in arrival order, names lower-case
/// (HTTP/2 requires it, nghttp2 enforces it). A request has a handful: one array reserved
/// once per request and scanned costs less than hashing them into a dictionary.
package struct HeaderFields {
    package private(set) var fields: [(name: String, value: String)] = []

    init() {}

    mutating func append(name: String, value: String) {
        if fields.capacity == 0 { fields.reserveCapacity(12) }
        fields.append((name, value))
    }

    /// The value of `name`; the last one when the header was repeated.
    package subscript(name: String) -> String? {
        for field in fields.reversed() where field.name == name { return field.value }
        return nil
    }
}

/// One request as the server received it.
package struct LookAlikeRequest {
    package var method: String?
    /// `:path` as sent (with its query string); empty when the request had none.
    package var path: String
    /// `:authority` (or `host`).
    package var authority: String?
    package var headers: HeaderFields
    /// The body, kept up to the path's storage limit.
    package var body: [UInt8]
    /// Bytes received, which may exceed `body`.
    package var bodyLength: Int
    /// Server-wide connection number and HTTP/2 stream id.
    package var connectionID: Int
    package var streamID: Int
    /// Receive time, milliseconds since 1970.
    package var receivedAtMilliseconds: Int64

    package init(
        method: String?, path: String, authority: String?, headers: HeaderFields, body: [UInt8], bodyLength: Int,
        connectionID: Int, streamID: Int, receivedAtMilliseconds: Int64
    ) {
        self.method = method
        self.path = path
        self.authority = authority
        self.headers = headers
        self.body = body
        self.bodyLength = bodyLength
        self.connectionID = connectionID
        self.streamID = streamID
        self.receivedAtMilliseconds = receivedAtMilliseconds
    }

    package var authorization: String? { headers["authorization"] }
    package var contentType: String? { headers["content-type"] }

    /// `path` without its query string.
    package var pathWithoutQuery: String {
        path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
    }
}

/// A service's answer to one request.
package struct LookAlikeAnswer {
    package var status: Int
    /// Response headers besides `:status`.
    package var headers: [(String, String)]
    package var body: [UInt8]
    /// The connection's stream limit goes up to `maxConcurrentStreams` with this answer (once
    /// per connection; a connection that began with a client certificate is there already).
    package var raisesStreamLimit: Bool
    /// Under the endless-answers fault this answer's body never ends (its length header dropped).
    package var endlessUnderFault: Bool

    package init(
        status: Int, headers: [(String, String)], body: [UInt8], raisesStreamLimit: Bool, endlessUnderFault: Bool
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.raisesStreamLimit = raisesStreamLimit
        self.endlessUnderFault = endlessUnderFault
    }
}
