import Foundation
import TuisongCore
import TuisongHTTP

/// An error of the native API, rendered as `{"error": {"code": ..., "message": ...}}`.
struct NativeAPIError: Error, Sendable {
    var status: Int
    var code: String
    var message: String
    /// The seconds a refused client should wait before sending again (`Retry-After`).
    var retryAfter: Int?

    init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    init(httpError: HTTPError) {
        self.init(httpError.status, httpError.code, httpError.message)
    }

    static func deviceNotFound(_ token: DeviceToken) -> NativeAPIError {
        NativeAPIError(404, "device_not_found", "no device with token \(token.hex.prefix(8))… in this app")
    }

    static let unauthorized = NativeAPIError(
        401, "unauthorized", "send the app's API key as \"Authorization: Bearer <api_key>\"")

    var response: Response {
        var response = Response.json(object: ["error": ["code": code, "message": message]], status: status)
        if status == 401 { response.headers.replaceOrAdd(name: "WWW-Authenticate", value: "Bearer") }
        if let retryAfter { response.headers.replaceOrAdd(name: "Retry-After", value: String(retryAfter)) }
        return response
    }
}
