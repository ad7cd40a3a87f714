import Foundation
import TuisongCore
import TuisongHTTP

/// An error in Easemob's dialect: the HTTP status Easemob uses, its `error` code and an
/// `error_description` a developer can act on.
///
///     throw EasemobError.illegalArgument("target_type can only be 'users' or 'chatgroups' or 'chatrooms'")
public struct EasemobError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: Int
    /// Easemob's `error` (`unauthorized`, `illegal_argument`, `service_resource_not_found`, …).
    public var error: String
    public var errorDescription: String
    /// Seconds to wait, sent as `Retry-After` (429, 503).
    public var retryAfter: Int?

    public init(status: Int, error: String, _ description: String, retryAfter: Int? = nil) {
        self.status = status
        self.error = error
        self.errorDescription = description
        self.retryAfter = retryAfter
    }

    public var description: String { "\(status) \(error): \(errorDescription)" }

    /// Easemob's `exception` (the Java class its server threw), for the errors whose class
    /// Easemob's documentation shows; nil for the others.
    public var exception: String? {
        switch error {
        case "illegal_argument": "java.lang.IllegalArgumentException"
        case "unauthorized": "EasemobSecurityException"
        case "json_parse": "com.fasterxml.jackson.core.JsonParseException"
        default: nil
        }
    }

    /// No token, a token this gateway did not issue, an expired one, `Bearer None`, or a user
    /// token used for what only the app may do.
    static func unauthorized(_ description: String) -> EasemobError {
        EasemobError(status: 401, error: "unauthorized", description)
    }

    static func illegalArgument(_ description: String) -> EasemobError {
        EasemobError(status: 400, error: "illegal_argument", description)
    }

    /// The body is not JSON (Easemob names its parser's complaint).
    static func jsonParse(_ description: String) -> EasemobError {
        EasemobError(status: 400, error: "json_parse", description)
    }

    /// Wrong client id/secret or username/password at `POST token`.
    static func invalidGrant(_ description: String) -> EasemobError {
        EasemobError(status: 400, error: "invalid_grant", description)
    }

    static func duplicateUser(_ username: String) -> EasemobError {
        EasemobError(
            status: 400, error: "duplicate_unique_property_exists",
            "Application null Entity user requires that property named username be unique, value of \(username) exists")
    }

    /// A user, group or template that does not exist.
    static func notFound(_ description: String = "Service resource not found") -> EasemobError {
        EasemobError(status: 404, error: "service_resource_not_found", description)
    }

    /// A group operation that contradicts the group (adding a member twice, removing a non-member).
    static func forbidden(_ description: String) -> EasemobError {
        EasemobError(status: 403, error: "forbidden_op", description)
    }

    /// `/{org}/{app}` names no app configured for Easemob.
    static func applicationNotFound(org: String, app: String, path: String) -> EasemobError {
        EasemobError(
            status: 404, error: "organization_application_not_found",
            "Could not find application for \(org)/\(app) from URI: \(path.drop { $0 == "/" })")
    }

    /// Too many wrong passwords for one user at `POST token`: locked for `seconds`, the right
    /// password included.
    static func tooManyAttempts(seconds: Int) -> EasemobError {
        EasemobError(
            status: 429, error: "too_many_attempts",
            "too many wrong passwords for this user; try again in \(seconds) s", retryAfter: seconds)
    }

    /// The gateway's queue of CPU-bound work (password hashing) is full.
    static let busy = EasemobError(
        status: 503, error: "service_unavailable", "the server is busy hashing passwords; try again in a second",
        retryAfter: 1)

    /// The app's backlog is at the gateway's bound (`PushGateway.admit`): Easemob's own 429
    /// `reach_limit`, with `Retry-After`.
    static func backlogFull(_ error: BacklogFull) -> EasemobError {
        EasemobError(status: 429, error: "reach_limit", error.explanation, retryAfter: error.retryAfterSeconds)
    }

    /// The store cannot serve (busy, a full disk, no database): 503 with the reason and
    /// `Retry-After`, as Easemob answers when it is overloaded.
    static func storeUnavailable(_ error: StoreError) -> EasemobError {
        let kind = error.unavailability ?? .busy
        return EasemobError(
            status: 503, error: "service_unavailable", kind.explanation, retryAfter: kind.retryAfterSeconds)
    }

    static func internalError(_ description: String) -> EasemobError {
        EasemobError(status: 500, error: "internal_server_error", description)
    }

    /// The router's own failures (unknown path, method, body too large, timeout) as Easemob
    /// words them.
    init(_ httpError: HTTPError) {
        switch httpError.status {
        case 404:
            self = .notFound()
        case 405:
            self.init(status: 405, error: "unsupported_service_operation", "Service operation not supported")
        case 413:
            self.init(status: 413, error: "Request Entity Too Large", "Request Entity Too Large")
        case 415:
            self.init(status: 415, error: "web_application", "Unsupported Media Type")
        case 429:
            self.init(status: 429, error: "reach_limit", "This request has reached api limit")
        case 400, 431:
            self = .illegalArgument(httpError.message)
        case 500:
            self = .internalError(httpError.message)
        default:
            self.init(status: httpError.status, error: "service_unavailable", httpError.message)
        }
    }
}
