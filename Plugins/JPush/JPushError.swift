import Foundation
import TuisongCore
import TuisongHTTP

/// An error in JPush's words: the HTTP status and `{"error": {"code": N, "message": "…"}}`,
/// always that shape (JPush's server SDKs read `error.code` from any non-2xx answer and fail on
/// other JSON). Codes from JPush's REST API v3 pages (docs/jpush.md cites them): the push API's
/// 1xxx/2xxx, the device API's 7xxx, the report API's 3xxx, the schedule API's 8xxx.
struct JPushError: Error, Sendable, Equatable {
    var status: Int
    var code: Int
    var message: String
    /// Fields the answer carries beside `error` (`msg_id` and `sendno` for a push without
    /// targets, as JPush answers 1011).
    var fields: [String: JSONValue] = [:]
    /// Seconds a 429 or 503 asks the client to wait.
    var retryAfter: Int?

    init(_ status: Int, _ code: Int, _ message: String, fields: [String: JSONValue] = [:], retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields
        self.retryAfter = retryAfter
    }

    // MARK: The push API's codes

    static func internalError(_ reference: String) -> JPushError {
        JPushError(500, 1000, "internal error; the gateway's log has the details under reference \(reference)")
    }
    static let onlyPost = JPushError(405, 1001, "only POST is supported here")
    static func missing(_ what: String) -> JPushError { JPushError(400, 1002, "missing parameter: \(what)") }
    static func invalid(_ what: String) -> JPushError { JPushError(400, 1003, "invalid value: \(what)") }
    static let authenticationFailed = JPushError(
        401, 1004, "authentication failed: the Authorization header must be Basic base64(appKey:masterSecret)")
    static let bodyTooLarge = JPushError(400, 1005, "message is too long: the push object must be at most 4000 bytes")
    static let badAppKey = JPushError(400, 1008, "invalid app_key")
    static func noTarget(msgID: String, sendno: String) -> JPushError {
        JPushError(
            400, 1011, "cannot find user to push to: no device matches the audience",
            fields: ["msg_id": .string(msgID), "sendno": .string(sendno)])
    }
    static func notOffered(_ what: String) -> JPushError {
        JPushError(400, 1003, "\(what) is not offered by this gateway")
    }
    static func rateLimited(_ seconds: Int) -> JPushError {
        JPushError(429, 2002, "API call frequency exceeds the limit; retry in \(seconds) s", retryAfter: seconds)
    }
    static let notFound = JPushError(404, 1003, "no such API")

    // MARK: The device API's codes

    static func deviceInvalid(_ what: String) -> JPushError { JPushError(400, 7002, "invalid value: \(what)") }
    static func deviceMissing(_ what: String) -> JPushError { JPushError(400, 7001, "missing parameter: \(what)") }
    static let unknownRegistrationID = JPushError(400, 7002, "registration_id does not exist for this app")
    static let deviceAuthFailed = JPushError(401, 7004, "authentication failed")
    static let tagLimit = JPushError(400, 7009, "a device may have at most 1000 tags")
    static let aliasDevices = JPushError(400, 7010, "an alias may be bound to at most 10 devices")

    // MARK: Reports and schedules

    static func reportInvalid(_ what: String) -> JPushError { JPushError(400, 3002, "invalid value: \(what)") }
    static func reportMissing(_ what: String) -> JPushError { JPushError(400, 3001, "missing parameter: \(what)") }
    static func scheduleInvalid(_ what: String) -> JPushError { JPushError(400, 8400, "invalid value: \(what)") }
    static let scheduleNotFound = JPushError(404, 8404, "the schedule does not exist")

    /// The store cannot serve (busy, a full disk, no database): 503 with the reason and
    /// `Retry-After`, in JPush's shape with its "server busy" code.
    init(storeUnavailable error: StoreError) {
        let reason = error.unavailability ?? .busy
        self.init(503, 1030, "the service is unavailable, retry later: \(reason.explanation)", retryAfter: 5)
    }

    /// What the HTTP layer refuses under JPush's paths (404, 405, 411, 413, 400, timeouts).
    init(httpError: HTTPError) {
        switch httpError.status {
        case 404: self = .notFound
        case 405: self.init(405, 1001, "method not allowed: \(httpError.message)")
        case 413: self = .bodyTooLarge
        case 411: self.init(411, 1003, httpError.message)
        case 400: self.init(400, 1003, "the request could not be parsed: \(httpError.message)")
        case 503: self.init(503, 1030, httpError.message, retryAfter: 5)
        default: self.init(httpError.status, 1000, httpError.message)
        }
    }
}

/// JPush's answers: JSON bodies, errors as `JPushError` says.
enum JPushReply {
    static func ok(_ object: [String: JSONValue], status: Int = 200) -> Response {
        json(.object(object), status: status)
    }

    static func ok(_ value: JSONValue) -> Response { json(value, status: 200) }

    /// 200 with no body: what JPush answers a device or tag update.
    static let empty = Response(status: 200, headers: ["Content-Type": "application/json; charset=utf-8"], body: [])

    static func fail(_ error: JPushError) -> Response {
        var object = error.fields
        object["error"] = ["code": .int(Int64(error.code)), "message": .string(error.message)]
        var response = json(.object(object), status: error.status)
        if let seconds = error.retryAfter { response.headers.replaceOrAdd(name: "Retry-After", value: String(seconds)) }
        return response
    }

    static let errorResponder: ErrorResponder = { error, _ in fail(JPushError(httpError: error)) }

    private static func json(_ value: JSONValue, status: Int) -> Response {
        Response(
            status: status, headers: ["Content-Type": "application/json; charset=utf-8"], body: value.serialized())
    }
}
