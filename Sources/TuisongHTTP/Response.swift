import Foundation
import TuisongCore

/// What a handler answers. The server adds `Content-Length`, `Date` and the connection
/// headers itself; a `Content-Length` set here is ignored.
///
///     return .json(["ok": true])
///     return .text("pong")
///     return Response(status: 201, headers: ["Location": "/api/v1/devices/abc"])
public struct Response: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Set by `Response.error(_:)`: the router sends this error rendered in the dialect of the
    /// request's path instead of this response's own status, headers and body.
    public internal(set) var error: HTTPError?

    public init(status: Int = 200, headers: HTTPHeaders = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
        self.error = nil
    }

    /// Answers `error` in the dialect of the request's path (native JSON, a vendor's, ...), so a
    /// handler need not reach for its router:
    ///
    ///     do throws(HTTPError) {
    ///         let body = try request.decodeJSON(Registration.self)
    ///         ...
    ///     } catch {
    ///         return .error(error)
    ///     }
    public static func error(_ error: HTTPError) -> Response {
        var response = Response(status: error.status)
        response.error = error
        return response
    }

    static let jsonContentType = "application/json; charset=utf-8"

    /// `value` encoded as JSON with sorted keys, so equal values give equal bytes. An encoding
    /// failure (e.g. a non-finite Double) answers 500 instead.
    public static func json<T: Encodable>(_ value: T, status: Int = 200) -> Response {
        do {
            // JSONValue's encoder, not JSONEncoder: a chat message's answer is one of these,
            // and Foundation's encoder cost more than the rest of building it.
            return Response(
                status: status, headers: ["Content-Type": jsonContentType], body: try JSONValue.encodedText(value))
        } catch {
            return Router.nativeErrorResponse(
                .internalError("the response could not be encoded as JSON: \(error)"))
        }
    }

    /// A `JSONSerialization` value (dictionaries, arrays, strings, numbers, `NSNull`) encoded
    /// with sorted keys. An invalid object answers 500 instead.
    public static func json(object: Any, status: Int = 200) -> Response {
        // Written by JSONValue (sorted keys, unescaped slashes, as below): JSONSerialization's
        // validity check and writer were ~7 % of the gateway's CPU per chat message.
        if let value = JSONValue(jsonObject: object) {
            switch value {
            case .object, .array:
                return Response(status: status, headers: ["Content-Type": jsonContentType], body: value.serialized())
            default: break
            }
        }
        guard JSONSerialization.isValidJSONObject(object) else {
            return Router.nativeErrorResponse(
                .internalError("the response is not a valid JSON object"))
        }
        do {
            let data = try JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            return Response(
                status: status, headers: ["Content-Type": jsonContentType], body: [UInt8](data))
        } catch {
            return Router.nativeErrorResponse(
                .internalError("the response could not be encoded as JSON: \(error)"))
        }
    }

    /// Plain UTF-8 text.
    public static func text(_ string: String, status: Int = 200) -> Response {
        Response(
            status: status, headers: ["Content-Type": "text/plain; charset=utf-8"],
            body: Array(string.utf8))
    }

    /// No body (204 by default).
    public static func empty(status: Int = 204) -> Response {
        Response(status: status)
    }
}
