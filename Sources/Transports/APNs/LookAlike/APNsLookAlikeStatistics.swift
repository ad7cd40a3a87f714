import Synchronization
import TuisongLookAlikeKit

/// Counters of the APNs look-alike since start (or the last `resetStatistics()`); the
/// connections' are the server's (`LookAlikeServer.statistics`).
public struct APNsLookAlikeStatistics: Sendable, Equatable {
    /// Requests that were complete and answered (validation errors and faults included), on
    /// APNs's paths or on a path no other look-alike claims. Refused streams and streams beyond
    /// a GOAWAY are not requests.
    public var requests = 0
    /// Answers by HTTP status, e.g. `[200: 950, 410: 50]`.
    public var responsesByStatus: [Int: Int] = [:]
    /// Error answers by APNs reason, e.g. `["Unregistered": 50]`.
    public var responsesByReason: [String: Int] = [:]
    /// Distinct provider tokens (JWT strings) that were accepted.
    public var providerTokensAccepted = 0
    /// Requests whose provider token was rejected (403 Invalid/Expired/MissingProviderToken).
    public var providerTokenRejections = 0
    /// Requests authenticated by a TLS client certificate.
    public var certificateAuthenticatedRequests = 0

    public init() {}
}

/// One APNs request as the look-alike received it, with the answer it got.
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
    /// The `apns-id` answered: the request's, or the one the look-alike generated.
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
final class APNsRecorder: Sendable {
    private struct State {
        var statistics = APNsLookAlikeStatistics()
        var ring: [ReceivedNotification] = []
        var ringStart = 0
        var acceptedProviderTokens: Set<String> = []
    }

    private let state = Mutex(State())
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    var statistics: APNsLookAlikeStatistics {
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
            state.statistics = APNsLookAlikeStatistics()
            state.acceptedProviderTokens.removeAll()
        }
    }
}

/// One JSON line per APNs request for `logRequests`.
enum APNsRequestLogLine {
    static func make(_ notification: ReceivedNotification, method: String?, path: String?) -> String {
        let quoted = RequestLogLine.quoted
        var fields: [String] = [
            #""time":\#(notification.receivedAtMilliseconds)"#,
            #""connection":\#(notification.connectionID)"#,
            #""stream":\#(notification.streamID)"#,
            #""status":\#(notification.status)"#,
            #""apns-id":\#(quoted(notification.apnsID))"#,
            #""payload-bytes":\#(notification.payload.count)"#,
        ]
        func add(_ key: String, _ value: String?) {
            if let value { fields.append("\(quoted(key)):\(quoted(value))") }
        }
        add("method", method)
        add("path", path)
        add("reason", notification.reason)
        add("apns-topic", notification.topic)
        add("apns-push-type", notification.pushType)
        add("apns-priority", notification.priority)
        add("apns-expiration", notification.expiration)
        add("apns-collapse-id", notification.collapseID)
        add("team", notification.teamID)
        return "{" + fields.joined(separator: ",") + "}"
    }
}
