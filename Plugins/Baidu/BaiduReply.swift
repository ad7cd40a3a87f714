import Foundation
import TuisongCore
import TuisongHTTP

/// Baidu's response envelopes. Server APIs answer `{"request_id", "response_params"}` on
/// success and `{"request_id", "error_code", "error_msg"}` otherwise; the device API (what
/// the iOS SDK's callbacks received) carries `error_code` 0 on success too.
enum BaiduReply {
    /// A fresh `request_id`: Baidu's were unsigned 32-bit numbers, logged on both sides to
    /// trace one call.
    static func newRequestID() -> Int64 {
        Int64(UInt32.random(in: 1...UInt32.max))
    }

    static func success(_ requestID: Int64, _ parameters: [String: JSONValue]) -> Response {
        json(["request_id": .int(requestID), "response_params": .object(parameters)], status: 200)
    }

    static func deviceSuccess(_ requestID: Int64, _ parameters: [String: JSONValue]) -> Response {
        json(
            ["request_id": .int(requestID), "error_code": 0, "response_params": .object(parameters)],
            status: 200)
    }

    static func failure(_ requestID: Int64, _ error: BaiduError) -> Response {
        json(
            [
                "request_id": .int(requestID), "error_code": .int(Int64(error.code.rawValue)),
                "error_msg": .string(error.message),
            ],
            status: error.httpStatus)
    }

    /// Renders router errors (404, 405, 413, 415, timeouts) under Baidu's paths.
    static let errorResponder: ErrorResponder = { error, _ in
        failure(newRequestID(), BaiduError(error))
    }

    private static func json(_ object: [String: JSONValue], status: Int) -> Response {
        Response(
            status: status, headers: ["Content-Type": "application/json;charset=utf-8"],
            body: JSONValue.object(object).serialized())
    }
}

extension JSONValue {
    /// Epoch seconds, as Baidu writes times.
    static func seconds(_ date: Date) -> JSONValue {
        .int(Int64(date.timeIntervalSince1970.rounded(.down)))
    }
}
