import Foundation
import TuisongCore

/// The body of an APNs error response: `{"reason":"…","timestamp":<ms since 1970>}`.
public struct APNsErrorBody: Sendable, Hashable {
    public var reason: String?
    /// For 410: since when the token is invalid.
    public var timestamp: Date?

    public init(reason: String?, timestamp: Date?) {
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Lenient: a body that is empty or not the expected JSON yields nil fields.
    public init(parsing body: [UInt8]) {
        guard !body.isEmpty, let json = try? JSONValue(parsing: body) else {
            self.init(reason: nil, timestamp: nil)
            return
        }
        let milliseconds = json["timestamp"]?.doubleValue
        self.init(
            reason: json["reason"]?.stringValue, timestamp: milliseconds.map { Date(timeIntervalSince1970: $0 / 1000) })
    }

    /// The JSON APNs sends (the mock writes this).
    public func serialized() -> [UInt8] {
        var object: [String: JSONValue] = [:]
        if let reason { object["reason"] = .string(reason) }
        if let timestamp { object["timestamp"] = .int(Int64((timestamp.timeIntervalSince1970 * 1000).rounded(.down))) }
        return JSONValue.object(object).serialized()
    }
}

/// What the gateway does with one APNs answer.
public enum APNsOutcome: Sendable, Hashable {
    /// 200: APNs accepted it.
    case delivered
    /// The token is dead (410 Unregistered/ExpiredToken, 400 BadDeviceToken): mark the
    /// device invalid and send it nothing more. `since` is APNs' timestamp when given.
    case invalidateDevice(APNsReason, since: Date?)
    /// Transient (429, 5xx, IdleTimeout): try again, no sooner than `after` when given,
    /// otherwise with the caller's back-off.
    case retry(APNsReason, after: Duration?)
    /// 403 ExpiredProviderToken: mint a new JWT (once per stale token) and resend.
    case refreshProviderToken
    /// The credential itself is refused (bad/missing provider token, bad certificate or
    /// environment): stop using it until an operator fixes it; hold, don't fail, deliveries.
    case credentialFailing(APNsReason)
    /// Permanently refused for this message (other 4xx): don't retry.
    case failed(APNsReason)

    /// How long to wait after 429 before trying the same device/credential again; APNs sends
    /// no Retry-After, and a minute stays clear of its per-device and token-update throttles.
    public static let throttleDelay: Duration = .seconds(60)

    /// Classifies a response per the reference's policy. Never traps: unknown statuses and
    /// reasons fall into `retry` (5xx and above) or `failed` (anything else).
    ///
    ///     APNsOutcome.classify(status: 410, reason: "Unregistered", timestamp: t)
    ///     // .invalidateDevice(.unregistered, since: t)
    public static func classify(status: Int, reason: String?, timestamp: Date?) -> APNsOutcome {
        // Before the reason is parsed: the common answer should not pay for a formatted string.
        if (200..<300).contains(status) { return .delivered }
        let parsed: APNsReason =
            if let reason, !reason.isEmpty { APNsReason(reason) } else { .unknown("HTTP \(status)") }
        switch status {
        case 410:
            return .invalidateDevice(parsed, since: timestamp)
        case 400 where parsed == .badDeviceToken:
            return .invalidateDevice(parsed, since: timestamp)
        case 400 where parsed == .idleTimeout:
            // The connection went idle, not the request: resend on a fresh connection.
            return .retry(parsed, after: nil)
        case 403:
            switch parsed {
            case .expiredProviderToken:
                return .refreshProviderToken
            case .invalidProviderToken, .badCertificate, .badCertificateEnvironment, .missingProviderToken,
                .badEnvironmentKeyInToken:
                return .credentialFailing(parsed)
            default:
                return .failed(parsed)
            }
        case 429:
            return .retry(parsed, after: throttleDelay)
        case 500...:
            return .retry(parsed, after: nil)
        default:
            return .failed(parsed)
        }
    }
}
