import Foundation
import TuisongCore

/// The `reason` of an APNs error response or GOAWAY, one case per documented string.
/// Reasons Apple adds later arrive as `.unknown(raw)`, never as a crash.
public enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    // 400
    case badCollapseId
    case badDeviceToken
    case badExpirationDate
    case badMessageId
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    // 403
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case badEnvironmentKeyInToken
    // 404, 405
    case badPath
    case methodNotAllowed
    // 410
    case expiredToken
    case unregistered
    // 413
    case payloadTooLarge
    // 429
    case tooManyProviderTokenUpdates
    case tooManyRequests
    // 500, 503
    case internalServerError
    case serviceUnavailable
    case shutdown
    /// A reason this build does not know, kept verbatim.
    case unknown(String)

    /// Every known reason (not `.unknown`).
    public static let known: [APNsReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken, .missingTopic,
        .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden,
        .invalidProviderToken, .missingProviderToken, .badEnvironmentKeyInToken, .badPath, .methodNotAllowed,
        .expiredToken, .unregistered, .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests,
        .internalServerError, .serviceUnavailable, .shutdown,
    ]

    private static let byString: [String: APNsReason] = Dictionary(
        uniqueKeysWithValues: known.map { ($0.rawValue, $0) })

    /// `"BadDeviceToken"` → `.badDeviceToken`; anything else → `.unknown(string)`.
    public init(_ string: String) {
        self = APNsReason.byString[string] ?? .unknown(string)
    }

    /// The string APNs sends.
    public var rawValue: String {
        switch self {
        case .badCollapseId: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageId: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .badEnvironmentKeyInToken: "BadEnvironmentKeyInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .expiredToken: "ExpiredToken"
        case .unregistered: "Unregistered"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .unknown(let raw): raw
        }
    }

    public var description: String { rawValue }

    /// The HTTP status Apple documents for this reason (nil for `.unknown`): what the APNs
    /// mock answers when it injects the reason.
    public var status: Int? {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic,
            .payloadEmpty, .topicDisallowed:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
            .missingProviderToken, .badEnvironmentKeyInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        case .unknown: nil
        }
    }
}

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
