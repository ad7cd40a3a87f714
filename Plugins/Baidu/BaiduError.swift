import TuisongCore
import TuisongHTTP

/// A Baidu Cloud Push error as the wire shows it: Baidu's `error_code`, an `error_msg` that
/// names what was wrong, and the (non-200) HTTP status it is answered with.
///
///     throw BaiduError.invalidParameter("push_type", "must be 1, 2 or 3")
///     // 400 {"request_id":…,"error_code":30602,"error_msg":"request params not valid: push_type must be 1, 2 or 3"}
public struct BaiduError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Baidu's error codes (the server's table and the iOS SDK's `BPushErrorCode`).
    public enum Code: Int, Sendable, Hashable, CaseIterable {
        case internalError = 30600
        case methodNotAllowed = 30601
        case invalidParameters = 30602
        case authenticationFailed = 30603
        case quotaUsedUp = 30604
        case dataNotFound = 30605
        case requestExpired = 30606
        case channelTokenTimeout = 30607
        case bindNotFound = 30608
        case tooManyBinds = 30609
        case duplicateOperation = 30610
        case tagNotFound = 30611
        case applicationForbidden = 30612
        case applicationNotInitialised = 30613
        case tooManyUserTags = 30614
        case tooManyAppTags = 30615
        case tooFrequent = 30699

        /// Baidu's own wording, the start of every `error_msg`.
        var summary: String {
            switch self {
            case .internalError: "internal server error"
            case .methodNotAllowed: "method not allowed"
            case .invalidParameters: "request params not valid"
            case .authenticationFailed: "authentication failed"
            case .quotaUsedUp: "quota used up"
            case .dataNotFound: "data required not found"
            case .requestExpired: "request time expires"
            case .channelTokenTimeout: "channel token timeout"
            case .bindNotFound: "bind relation not found"
            case .tooManyBinds: "bind number too many"
            case .duplicateOperation: "duplicate operation"
            case .tagNotFound: "group not found"
            case .applicationForbidden: "application forbidden"
            case .applicationNotInitialised: "application must be initialised in the console first"
            case .tooManyUserTags: "too many tags for this user"
            case .tooManyAppTags: "too many tags for this application"
            case .tooFrequent: "requests are too frequent, temporarily rejected"
            }
        }

        /// The HTTP status: Baidu answered every error with a non-200 status.
        var httpStatus: Int {
            switch self {
            case .internalError: 500
            case .methodNotAllowed, .invalidParameters, .tooManyBinds, .tooManyUserTags, .tooManyAppTags: 400
            case .authenticationFailed, .requestExpired, .channelTokenTimeout: 401
            case .quotaUsedUp, .applicationForbidden, .applicationNotInitialised: 403
            case .dataNotFound, .bindNotFound, .tagNotFound: 404
            case .duplicateOperation: 409
            case .tooFrequent: 429
            }
        }
    }

    public let code: Code
    /// The whole `error_msg`: Baidu's summary, then the detail.
    public let message: String
    public let httpStatus: Int

    public init(_ code: Code, _ detail: String? = nil, httpStatus: Int? = nil) {
        self.code = code
        if let detail, !detail.isEmpty {
            message = "\(code.summary): \(detail)"
        } else {
            message = code.summary
        }
        self.httpStatus = httpStatus ?? code.httpStatus
    }

    public var description: String { "\(code.rawValue) \(message)" }

    /// 30602 naming the parameter: `"<name> <problem>"`.
    static func invalidParameter(_ name: String, _ problem: String) -> BaiduError {
        BaiduError(.invalidParameters, "\(name) \(problem)")
    }

    static func missingParameter(_ name: String) -> BaiduError {
        BaiduError(.invalidParameters, "\(name) is required")
    }

    /// A router-level failure (no route, wrong HTTP method, body too large, bad encoding) in
    /// Baidu's terms, keeping the HTTP status the router chose.
    init(_ error: HTTPError) {
        switch error.status {
        case 404, 405: self.init(.methodNotAllowed, error.message, httpStatus: error.status)
        case 400, 411, 413, 414, 415, 431: self.init(.invalidParameters, error.message, httpStatus: error.status)
        case 429: self.init(.tooFrequent, error.message, httpStatus: error.status)
        default: self.init(.internalError, error.message, httpStatus: error.status)
        }
    }
}

extension BaiduError {
    /// The store cannot serve (busy, a full disk, no database): Baidu has no such code, so its
    /// internal error, with HTTP 503 and the reason in words, answered with `Retry-After`
    /// (`BaiduProvider.respond`) — never "see the gateway log" for what is not a bug.
    static func storeUnavailable(_ error: StoreError) -> BaiduError {
        let kind = error.unavailability ?? .busy
        return BaiduError(.internalError, kind.explanation, httpStatus: 503)
    }
}

extension BaiduError {
    /// The app's backlog is at the gateway's bound (`PushGateway.admit`): Baidu's own "requests
    /// are too frequent, temporarily rejected", HTTP 429, answered with `Retry-After`
    /// (`BaiduProvider.respond`).
    static func backlogFull(_ error: BacklogFull) -> BaiduError {
        BaiduError(.tooFrequent, error.explanation)
    }
}
