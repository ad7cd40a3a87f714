import Synchronization

/// Counters of everything the mock saw since start (or the last `resetStatistics()`).
public struct APNsMockStatistics: Sendable, Equatable {
    /// Requests that were complete and answered (validation errors and faults included).
    /// Refused streams and streams beyond a GOAWAY are not requests.
    public var requests = 0
    /// Answers by HTTP status, e.g. `[200: 950, 410: 50]`.
    public var responsesByStatus: [Int: Int] = [:]
    /// Error answers by APNs reason, e.g. `["Unregistered": 50]`.
    public var responsesByReason: [String: Int] = [:]
    /// TCP connections accepted.
    public var connectionsAccepted = 0
    /// Connections currently open.
    public var connectionsOpen = 0
    /// Connections whose TLS handshake failed (or that did not negotiate ALPN h2).
    public var handshakeFailures = 0
    /// Connections closed by the `dropConnectionAfterRequests` fault.
    public var connectionsDropped = 0
    /// GOAWAY frames sent (fault, shutdown or protocol error).
    public var goawaysSent = 0
    /// Streams answered RST_STREAM REFUSED_STREAM (over the advertised stream limit).
    public var refusedStreams = 0
    /// Times a connection raised its stream limit after its first valid provider token.
    public var streamLimitRaises = 0
    /// Times a connection lowered its stream limit (the `lowerStreamLimitAfterRequests` fault).
    public var streamLimitLowerings = 0
    /// The most request streams open at once on one connection after its client acknowledged
    /// a lowered limit: a client that honours SETTINGS keeps this at or below the new limit.
    public var peakStreamsAfterLowering = 0
    /// Bytes read and dropped from clients after the mock shut its side (a GOAWAY sent, the
    /// connection lingering until the client closes): read, they cannot make the kernel reset
    /// the connection.
    public var bytesDrainedWhileLingering = 0
    /// Filler bytes handed to nghttp2 for answers of the endless-answers fault: how far clients
    /// read an answer that never ends before they gave up on it.
    public var endlessAnswerBytes = 0
    /// PING frames received from clients (acknowledgements not counted).
    public var pingsReceived = 0
    /// Distinct provider tokens (JWT strings) that were accepted.
    public var providerTokensAccepted = 0
    /// Requests whose provider token was rejected (403 Invalid/Expired/MissingProviderToken).
    public var providerTokenRejections = 0
    /// Requests authenticated by a TLS client certificate.
    public var certificateAuthenticatedRequests = 0

    public init() {}
}

/// One request as the mock received it, with the answer it got.
public struct ReceivedNotification: Sendable, Equatable {
    /// Device token from the path (as sent, hex).
    public var deviceToken: String
    /// `apns-topic` as sent; nil when absent (certificate auth may omit it).
    public var topic: String?
    /// `apns-push-type` as sent, e.g. `alert`; nil when absent.
    public var pushType: String?
    /// `apns-priority` as sent (`10`, `5`, `1`); nil when absent.
    public var priority: String?
    /// `apns-expiration` as sent (epoch seconds); nil when absent.
    public var expiration: String?
    /// `apns-collapse-id` as sent; nil when absent.
    public var collapseID: String?
    /// The `apns-id` answered: the request's, or the one the mock generated.
    public var apnsID: String
    /// The request body bytes (JSON payload).
    public var payload: [UInt8]
    /// Server-wide connection number, to tell which connection carried the request.
    public var connectionID: Int
    /// HTTP/2 stream id of the request.
    public var streamID: Int
    /// Team id of the accepted provider token, or nil (certificate auth or rejected token).
    public var teamID: String?
    /// Key id of the accepted provider token.
    public var keyID: String?
    /// HTTP status answered.
    public var status: Int
    /// APNs reason answered, nil for 200.
    public var reason: String?
    /// Receive time, milliseconds since 1970.
    public var receivedAtMilliseconds: Int64
}

/// Counters and the bounded ring of received notifications, shared by every event loop.
final class MockRecorder: Sendable {
    private struct State {
        var statistics = APNsMockStatistics()
        var ring: [ReceivedNotification] = []
        var ringStart = 0
        var acceptedProviderTokens: Set<String> = []
    }

    private let state = Mutex(State())
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var statistics: APNsMockStatistics {
        state.withLock { $0.statistics }
    }

    func record(_ notification: ReceivedNotification, providerTokenRejected: Bool, certificateAuthenticated: Bool) {
        let capacity = capacity
        state.withLock { state in
            state.statistics.requests += 1
            state.statistics.responsesByStatus[notification.status, default: 0] += 1
            if let reason = notification.reason {
                state.statistics.responsesByReason[reason, default: 0] += 1
            }
            if providerTokenRejected { state.statistics.providerTokenRejections += 1 }
            if certificateAuthenticated { state.statistics.certificateAuthenticatedRequests += 1 }
            guard capacity > 0 else { return }
            if state.ring.count < capacity {
                state.ring.append(notification)
            } else {
                state.ring[state.ringStart] = notification
                state.ringStart = (state.ringStart + 1) % capacity
            }
        }
    }

    /// Counts a provider token once, however many requests carry it.
    func providerTokenAccepted(_ token: String) {
        state.withLock { state in
            // The set is only a de-duplicator; bound it so a token-per-request client cannot grow it.
            if state.acceptedProviderTokens.count >= 10_000 { state.acceptedProviderTokens.removeAll() }
            if state.acceptedProviderTokens.insert(token).inserted {
                state.statistics.providerTokensAccepted += 1
            }
        }
    }

    func update(_ change: (inout APNsMockStatistics) -> Void) {
        state.withLock { change(&$0.statistics) }
    }

    func notifications() -> [ReceivedNotification] {
        state.withLock { state in
            Array(state.ring[state.ringStart...] + state.ring[..<state.ringStart])
        }
    }

    func resetNotifications() {
        state.withLock { state in
            state.ring.removeAll()
            state.ringStart = 0
        }
    }

    func resetStatistics() {
        state.withLock { state in
            let open = state.statistics.connectionsOpen
            state.statistics = APNsMockStatistics()
            // Open connections are a gauge, not a counter: it stays true after a reset.
            state.statistics.connectionsOpen = open
            state.acceptedProviderTokens.removeAll()
        }
    }
}
