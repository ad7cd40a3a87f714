import Synchronization
internal import TuisongCrypto

/// A look-alike service: the channel name of the transport it stands in for. Open, as the channels are: each look-alike declares its own
/// (`extension AndroidPushService { public static let … }` in its folder).
public struct AndroidPushService: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// Counters of one Android service since start (or the last `resetStatistics()`).
public struct AndroidServiceStatistics: Sendable, Equatable {
    /// Access tokens issued by the service's token endpoint.
    public var tokenGrants = 0
    /// Token requests refused (bad secret, bad assertion, unknown client…).
    public var tokenRefusals = 0
    /// Send requests answered, whatever the answer.
    public var sendRequests = 0
    /// Send requests refused because of their access token (missing, unknown, expired, revoked,
    /// another project's or app's).
    public var authenticationFailures = 0
    /// Send requests refused as a whole (authentication, body validation, request-level faults).
    public var requestsRefused = 0
    /// Device tokens a message was accepted for (a batch of 1000 counts 1000).
    public var messagesDelivered = 0
    /// Device tokens refused inside otherwise processed requests (faults, malformed tokens), plus
    /// the tokens of requests refused as a whole.
    public var messagesRefused = 0
    /// Answers by HTTP status, token endpoint included.
    public var responsesByStatus: [Int: Int] = [:]
    /// Error answers by the service's own code (its look-alike says which field: an error code,
    /// a result code, OAuth's `error`).
    public var responsesByCode: [String: Int] = [:]

    public init() {}
}

/// Per-service counters of the look-alikes (each look-alike adds its own accessor, e.g.
/// `statistics.<service>`, from its folder).
public struct AndroidMockStatistics: Sendable, Equatable {
    private var services: [AndroidPushService: AndroidServiceStatistics] = [:]

    public init() {}

    public subscript(service: AndroidPushService) -> AndroidServiceStatistics {
        get { services[service] ?? AndroidServiceStatistics() }
        set { services[service] = newValue }
    }

    /// Equal when every service's counters are (a service never counted equals one at zero).
    public static func == (lhs: AndroidMockStatistics, rhs: AndroidMockStatistics) -> Bool {
        Set(lhs.services.keys).union(rhs.services.keys).allSatisfy { lhs[$0] == rhs[$0] }
    }
}

/// One accepted Android send request (validate-only requests are not deliveries and are not
/// recorded).
public struct ReceivedAndroidMessage: Sendable, Equatable {
    public var service: AndroidPushService
    /// The project or app it was sent for, in the service's terms (a project or app id, a
    /// package name, an app key).
    public var target: String
    /// Who sent it: a service account's email, an OAuth client id, an app key.
    public var principal: String
    /// Device tokens the message was accepted for.
    public var tokens: [String]
    /// Device tokens refused inside the request (those the answer lists as illegal, failed or
    /// expired).
    public var refusedTokens: [String]
    /// The service's id of the message in its answer (`,` between those of a batch that answers
    /// one per entry).
    public var messageID: String
    /// The request body bytes as received (for a send of a stored payload, the stored body).
    public var body: [UInt8]
    /// Server-wide connection number and HTTP/2 stream id of the request.
    public var connectionID: Int
    public var streamID: Int
    /// The request's `timestamp` header as sent, where the service signs with one; nil otherwise.
    public var timestampHeader: String?
    /// Receive time, milliseconds since 1970.
    public var receivedAtMilliseconds: Int64
    /// What else a look-alike notes of the request, by its own names (a header of its own;
    /// read through the accessors its folder adds).
    public var details: [String: String] = [:]

    package init(
        service: AndroidPushService, target: String, principal: String, tokens: [String], refusedTokens: [String],
        messageID: String, body: [UInt8], connectionID: Int, streamID: Int, timestampHeader: String?,
        receivedAtMilliseconds: Int64, details: [String: String] = [:]
    ) {
        self.service = service
        self.target = target
        self.principal = principal
        self.tokens = tokens
        self.refusedTokens = refusedTokens
        self.messageID = messageID
        self.body = body
        self.connectionID = connectionID
        self.streamID = streamID
        self.timestampHeader = timestampHeader
        self.receivedAtMilliseconds = receivedAtMilliseconds
        self.details = details
    }
}

/// An answer of a look-alike, with what the request log and statistics need.
package struct AndroidResponse {
    package var status: Int
    package var headers: [(String, String)] = []
    package var body: [UInt8]
    package var service: AndroidPushService
    /// Error code counted in `responsesByCode`; nil for success.
    package var code: String?
    /// Project or app id, client email or id, when known.
    package var target: String?
    package var principal: String?
    package var tokenCount = 0
    /// An answer of a sign-in (token) endpoint: counted as a grant or a refusal, not a send.
    package var isSignIn = false

    package init(
        status: Int, json: String, service: AndroidPushService, code: String?, extraHeaders: [(String, String)] = []
    ) {
        self.status = status
        body = Array(json.utf8)
        headers = [("content-type", "application/json; charset=UTF-8"), ("content-length", String(body.count))]
        headers += extraHeaders
        self.service = service
        self.code = code
    }
}

/// The access tokens the look-alikes' token endpoints issued, every service's in one store.
package final class AccessTokenStore: Sendable {
    package struct Issued: Sendable {
        package var service: AndroidPushService
        /// Who signed in: a client id, an account's email, an app key.
        package var principal: String
        /// Project or app the token may send for.
        package var target: String
        /// Granted scopes, where the service has them.
        package var scopes: [String]
        package var expiresAtMilliseconds: Int64
    }

    package enum Lookup {
        case valid(Issued)
        case expired(Issued)
        case unknown
    }

    private let tokens = Mutex<[String: Issued]>([:])

    func issue(_ issued: Issued, prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let token = prefix + Base64URL.encode(random)
        tokens.withLock { tokens in
            // Expired tokens are kept a while (a client may still present one and must hear
            // "expired", not "unknown"); beyond this many, the expired ones go.
            if tokens.count >= 100_000 {
                let now = WallClock.milliseconds()
                tokens = tokens.filter { $0.value.expiresAtMilliseconds > now }
            }
            tokens[token] = issued
        }
        return token
    }

    package func lookup(_ token: String, nowMilliseconds: Int64) -> Lookup {
        guard let issued = tokens.withLock({ $0[token] }) else { return .unknown }
        return nowMilliseconds < issued.expiresAtMilliseconds ? .valid(issued) : .expired(issued)
    }

    /// Every token issued so far expires now (the next use is answered as expired).
    func revokeAll() {
        let now = WallClock.milliseconds()
        tokens.withLock { tokens in
            for key in tokens.keys { tokens[key]!.expiresAtMilliseconds = min(tokens[key]!.expiresAtMilliseconds, now) }
        }
    }
}

/// Android counters and the bounded ring of accepted messages.
package final class AndroidRecorder: Sendable {
    private struct State {
        var statistics = AndroidMockStatistics()
        var ring: [ReceivedAndroidMessage] = []
        var ringStart = 0
    }

    private let state = Mutex(State())
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var statistics: AndroidMockStatistics { state.withLock { $0.statistics } }

    func count(_ response: AndroidResponse) {
        state.withLock { state in
            let service = response.service
            state.statistics[service].responsesByStatus[response.status, default: 0] += 1
            if let code = response.code { state.statistics[service].responsesByCode[code, default: 0] += 1 }
            if response.isSignIn {
                // Some services refuse with HTTP 200 and a code.
                if response.status == 200 && response.code == nil {
                    state.statistics[service].tokenGrants += 1
                } else {
                    state.statistics[service].tokenRefusals += 1
                }
            } else {
                state.statistics[service].sendRequests += 1
            }
        }
    }

    package func update(_ service: AndroidPushService, _ change: (inout AndroidServiceStatistics) -> Void) {
        state.withLock { change(&$0.statistics[service]) }
    }

    package func record(_ message: ReceivedAndroidMessage) {
        let capacity = capacity
        guard capacity > 0 else { return }
        state.withLock { state in
            if state.ring.count < capacity {
                state.ring.append(message)
            } else {
                state.ring[state.ringStart] = message
                state.ringStart = (state.ringStart + 1) % capacity
            }
        }
    }

    func messages() -> [ReceivedAndroidMessage] {
        state.withLock { Array($0.ring[$0.ringStart...] + $0.ring[..<$0.ringStart]) }
    }

    func resetMessages() {
        state.withLock { state in
            state.ring.removeAll()
            state.ringStart = 0
        }
    }

    func resetStatistics() {
        state.withLock { $0.statistics = AndroidMockStatistics() }
    }
}

/// Android token-prefix faults, longest prefix first.
package struct AndroidTokenPrefixFaults: Sendable {
    private let entries: [(prefix: String, fault: LookAlikeConfiguration.AndroidTokenFault)]

    init(_ prefixes: [String: LookAlikeConfiguration.AndroidTokenFault]) {
        entries = prefixes.map { (prefix: $0.key, fault: $0.value) }.sorted {
            $0.prefix.utf8.count > $1.prefix.utf8.count
        }
    }

    package func fault(forToken token: String) -> LookAlikeConfiguration.AndroidTokenFault? {
        guard !entries.isEmpty else { return nil }
        return entries.first { token.hasPrefix($0.prefix) }?.fault
    }
}
