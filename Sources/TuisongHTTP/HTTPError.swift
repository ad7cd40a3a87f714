/// An HTTP-level failure: the status to answer with, a stable machine code and a human message.
/// The router renders it through the `ErrorResponder` of the path's dialect.
///
///     throw HTTPError.badRequest("field \"token\" is required")
public struct HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status code, e.g. 404.
    public var status: Int
    /// A stable snake_case code, e.g. `not_found`, `method_not_allowed`, `payload_too_large`,
    /// `unsupported_media_type`, `length_required`, `bad_request`, `request_timeout`, `uri_too_long`,
    /// `header_too_large`, `not_implemented`, `service_unavailable`, `internal_error`.
    public var code: String
    /// What went wrong, in words a client developer can act on.
    public var message: String
    /// For 405: the methods the path does accept (sent as `Allow`).
    public var allow: [HTTPMethod]

    public init(status: Int, code: String, message: String, allow: [HTTPMethod] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.allow = allow
    }

    public var description: String { "HTTP \(status) \(code): \(message)" }

    public static func notFound(_ message: String = "no such resource") -> HTTPError {
        HTTPError(status: 404, code: "not_found", message: message)
    }

    public static func methodNotAllowed(allow: [HTTPMethod], method: HTTPMethod) -> HTTPError {
        HTTPError(
            status: 405, code: "method_not_allowed",
            message: "method \(method.rawValue) is not allowed here; allowed: "
                + allow.map(\.rawValue).joined(separator: ", "),
            allow: allow)
    }

    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(
            status: 413, code: "payload_too_large",
            message: "request body is larger than the limit of \(limit) bytes")
    }

    /// A body without a `Content-Length` where one is required (411).
    public static func lengthRequired(_ message: String) -> HTTPError {
        HTTPError(status: 411, code: "length_required", message: message)
    }

    public static func unsupportedMediaType(_ message: String) -> HTTPError {
        HTTPError(status: 415, code: "unsupported_media_type", message: message)
    }

    public static func badRequest(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: "bad_request", message: message)
    }

    /// The handler did not answer within the server's request timeout.
    public static func requestTimeout(seconds: Double) -> HTTPError {
        HTTPError(
            status: 503, code: "request_timeout",
            message: "the server did not answer within \(seconds) s; try again later")
    }

    public static func headerTooLarge(_ message: String = "request header fields too large")
        -> HTTPError
    {
        HTTPError(status: 431, code: "header_too_large", message: message)
    }

    public static func uriTooLong(_ message: String = "request target too long") -> HTTPError {
        HTTPError(status: 414, code: "uri_too_long", message: message)
    }

    /// A feature of the request the server does not support (an unknown transfer coding).
    public static func notImplemented(_ message: String) -> HTTPError {
        HTTPError(status: 501, code: "not_implemented", message: message)
    }

    public static func serviceUnavailable(_ message: String) -> HTTPError {
        HTTPError(status: 503, code: "service_unavailable", message: message)
    }

    public static func internalError(_ message: String) -> HTTPError {
        HTTPError(status: 500, code: "internal_error", message: message)
    }
}

/// Renders an `HTTPError` in a caller's dialect (native JSON, a vendor's `error_code`, ...). The
/// request is the one that failed; its body may be empty when the error came before the body
/// was read (413, 404, 405).
public typealias ErrorResponder = @Sendable (HTTPError, Request) -> Response
