import Foundation
import TuisongCore
import TuisongHTTP

/// An error of the admin API, rendered as `{"error": {"code": ..., "message": ...}}` with
/// extra fields when the console needs them (`retry_after` for 429, `field` for a bad input).
extension AdminError {
    /// The store could not serve: which way (busy, a full disk, no database) and when to retry.
    static func storeUnavailable(_ error: any Error) -> AdminError {
        let kind = (error as? StoreError)?.unavailability ?? .busy
        return AdminError(503, kind.rawValue, kind.explanation, retryAfter: kind.retryAfterSeconds)
    }
}

struct AdminError: Error, Sendable {
    var status: Int
    var code: String
    var message: String
    /// The request field the error is about, so the console can mark that input.
    var field: String?
    var retryAfter: Int?
    /// The values a console words the code with (`{"name": "订单助手"}` for `app_name_taken`),
    /// so its own sentence, in its own language, says what the English message says.
    var params: [String: String] = [:]
    /// The message in both of the console's languages (`"text": {"en", "zh"}`), when a transport
    /// words a case-by-case detail the console cannot from the code alone.
    var text: LocalizedText?

    init(
        _ status: Int, _ code: String, _ message: String, field: String? = nil, retryAfter: Int? = nil,
        params: [String: String] = [:], text: LocalizedText? = nil
    ) {
        self.text = text
        self.params = params
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    static let unauthorized = AdminError(401, "unauthorized", "log in first: no valid console session")
    static let csrf = AdminError(
        403, "csrf_failed", "missing or wrong X-CSRF-Token header; reload the console and try again")

    static func invalid(_ field: String, _ message: String) -> AdminError {
        AdminError(400, "invalid_request", message, field: field)
    }

    static func notFound(_ what: String) -> AdminError {
        AdminError(404, "not_found", "no such \(what)")
    }

    static func conflict(_ field: String, _ message: String) -> AdminError {
        AdminError(409, "conflict", message, field: field)
    }

    init(httpError: HTTPError) {
        self.init(httpError.status, httpError.code, httpError.message)
    }

    var response: Response {
        var detail: [String: Any] = ["code": code, "message": message]
        if let field { detail["field"] = field }
        if let retryAfter { detail["retry_after"] = retryAfter }
        if !params.isEmpty { detail["params"] = params }
        if let text { detail["text"] = text.json }
        var response = Response.json(object: ["error": detail], status: status)
        if let retryAfter { response.headers.replaceOrAdd(name: "Retry-After", value: String(retryAfter)) }
        return AdminHeaders.apply(to: response)
    }
}

/// Headers on every admin API answer: nothing is cached, nothing is sniffed or framed.
enum AdminHeaders {
    static func apply(to response: Response) -> Response {
        var response = response
        response.headers.replaceOrAdd(name: "Cache-Control", value: "no-store")
        response.headers.replaceOrAdd(name: "X-Content-Type-Options", value: "nosniff")
        response.headers.replaceOrAdd(name: "X-Frame-Options", value: "DENY")
        response.headers.replaceOrAdd(name: "Referrer-Policy", value: "no-referrer")
        return response
    }
}

/// Typed access to a JSON request body, with errors that name the field.
struct AdminBody {
    let object: [String: Any]

    init(_ request: Request) throws {
        do {
            object = Self.normalized(try request.jsonObject()) as? [String: Any] ?? [:]
        } catch {
            throw AdminError(httpError: error)
        }
    }

    init(object: [String: Any]) {
        self.object = Self.normalized(object) as? [String: Any] ?? [:]
    }

    /// JSON numbers and booleans as Swift `Int`, `Double` and `Bool`. On Linux a parsed `1`
    /// or `0` is an `NSNumber` for which `is Bool` holds, so "is this a boolean?" checks
    /// (here and in the shared native parser) would refuse a badge of 1; Swift values
    /// answer them truthfully. Booleans are told apart by `JSONValue.isBoolean`.
    static func normalized(_ value: Any) -> Any {
        switch value {
        case let object as [String: Any]:
            return object.mapValues(normalized)
        case let array as [Any]:
            return array.map(normalized)
        case let number as NSNumber:
            if JSONValue.isBoolean(number) { return number.boolValue }
            switch String(cString: number.objCType) {
            case "f", "d":
                let double = number.doubleValue
                if double.rounded() == double, abs(double) < 9e15 { return Int(double) }
                return double
            default: return number.intValue
            }
        default:
            return value
        }
    }

    func has(_ key: String) -> Bool { object[key] != nil && !(object[key] is NSNull) }

    /// A string, trimmed of surrounding white space; nil when absent or null.
    func string(_ key: String, maxLength: Int = 10_000) throws -> String? {
        guard let raw = object[key], !(raw is NSNull) else { return nil }
        guard let text = raw as? String else { throw AdminError.invalid(key, "\"\(key)\" must be a string") }
        guard text.count <= maxLength else {
            throw AdminError.invalid(key, "\"\(key)\" must be at most \(maxLength) characters")
        }
        return text
    }

    func requiredString(_ key: String, maxLength: Int = 10_000) throws -> String {
        let text = try string(key, maxLength: maxLength)?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard !text.isEmpty else { throw AdminError.invalid(key, "\"\(key)\" is required") }
        return text
    }

    func integer(_ key: String) throws -> Int? {
        guard let raw = object[key], !(raw is NSNull) else { return nil }
        guard let integer = raw as? Int else { throw AdminError.invalid(key, "\"\(key)\" must be an integer") }
        return integer
    }

    func object(_ key: String) throws -> [String: Any]? {
        guard let raw = object[key], !(raw is NSNull) else { return nil }
        guard let nested = raw as? [String: Any] else {
            throw AdminError.invalid(key, "\"\(key)\" must be an object")
        }
        return nested
    }

    func strings(_ key: String, maxCount: Int = 100) throws -> [String]? {
        guard let raw = object[key], !(raw is NSNull) else { return nil }
        guard let list = raw as? [Any], list.count <= maxCount else {
            throw AdminError.invalid(key, "\"\(key)\" must be an array of at most \(maxCount) strings")
        }
        return try list.enumerated().map { index, item in
            if let text = item as? String { return text }
            if let integer = item as? Int { return String(integer) }
            if let double = item as? Double { return String(double) }
            throw AdminError.invalid(key, "\"\(key)[\(index)]\" must be a string")
        }
    }
}

extension Request {
    /// The positive integer path parameter `name`, or 404 (an id that cannot exist).
    func adminID(_ name: String, _ what: String) throws -> Int64 {
        guard let raw = pathParameters[name], let id = Int64(raw), id > 0 else { throw AdminError.notFound(what) }
        return id
    }
}

/// `value`, or JSON null when there is none (for `JSONSerialization` objects).
func orNull(_ value: Any?) -> Any {
    value ?? NSNull()
}
