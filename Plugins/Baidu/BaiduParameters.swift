import Foundation
import TuisongCore
import TuisongHTTP

/// The parameters of one REST call: the query string and the form-encoded body together
/// (Baidu's SDKs post everything in the body; query calls may come as GET). Every accessor
/// throws 30602 naming the parameter when it is missing or malformed.
struct BaiduParameters: Sendable {
    /// Every pair as received, for the signature.
    let pairs: [(name: String, value: String)]
    private let values: [String: String]

    init(_ request: Request) throws(BaiduError) {
        var pairs: [(name: String, value: String)] = request.query.map { ($0.name, $0.value) }
        if !request.body.isEmpty {
            do {
                pairs += try request.formParameters().map { ($0.name, $0.value) }
            } catch {
                if error.status == 415 {
                    throw BaiduError(
                        .invalidParameters,
                        "the body must be application/x-www-form-urlencoded (got \(request.contentType ?? "no Content-Type"))"
                    )
                }
                throw BaiduError(.invalidParameters, error.message)
            }
        }
        self.init(pairs: pairs)
        var seen = Set<String>()
        for pair in pairs where !seen.insert(pair.name).inserted {
            throw BaiduError.invalidParameter(pair.name, "is given more than once")
        }
    }

    init(pairs: [(name: String, value: String)]) {
        self.pairs = pairs
        var values: [String: String] = [:]
        for pair in pairs where values[pair.name] == nil { values[pair.name] = pair.value }
        self.values = values
    }

    subscript(name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    func required(_ name: String) throws(BaiduError) -> String {
        guard let value = self[name] else { throw .missingParameter(name) }
        return value
    }

    /// A decimal integer within `range`; `defaultValue` when absent.
    func integer(_ name: String, default defaultValue: Int? = nil, in range: ClosedRange<Int>) throws(BaiduError)
        -> Int
    {
        guard let text = self[name] else {
            guard let defaultValue else { throw .missingParameter(name) }
            return defaultValue
        }
        guard let value = Self.parseInteger(text) else {
            throw .invalidParameter(name, "must be an integer, got \"\(text.prefix(40))\"")
        }
        guard range.contains(value) else {
            throw .invalidParameter(name, "must be within \(range.lowerBound)…\(range.upperBound), got \(value)")
        }
        return value
    }

    func optionalInteger(_ name: String, in range: ClosedRange<Int>) throws(BaiduError) -> Int? {
        guard self[name] != nil else { return nil }
        return try integer(name, in: range)
    }

    /// `start` and `limit` of Baidu's listings.
    func page(defaultLimit: Int, maxLimit: Int) throws(BaiduError) -> (start: Int, limit: Int) {
        (
            try integer("start", default: 0, in: 0...Int(Int32.max)),
            try integer("limit", default: defaultLimit, in: 1...maxLimit)
        )
    }

    /// A tag name (`TagName.rule`).
    func tag(_ name: String = "tag") throws(BaiduError) -> TagName {
        try Self.tagName(try required(name), parameter: name)
    }

    static func tagName(_ raw: String, parameter: String) throws(BaiduError) -> TagName {
        guard let tag = TagName(raw) else {
            if raw.count > 128 {
                throw BaiduError.invalidParameter(parameter, "must be at most 128 characters, got \(raw.count)")
            }
            throw BaiduError.invalidParameter(parameter, "must be \(TagName.rule)")
        }
        return tag
    }

    /// A JSON array of ids (strings or integers) — or, as the SDKs also send for one id, a
    /// bare id. Between 1 and `max` entries.
    func idList(_ name: String, max: Int, bareAllowed: Bool) throws(BaiduError) -> [String] {
        let text = try required(name)
        let value: JSONValue
        do {
            value = try JSONValue(parsing: text)
        } catch {
            guard bareAllowed, Self.isPlainID(text) else {
                throw .invalidParameter(name, "must be a JSON array of ids")
            }
            return [text]
        }
        let elements: [JSONValue]
        switch value {
        case .array(let array): elements = array
        case .string, .int:
            guard bareAllowed else { throw .invalidParameter(name, "must be a JSON array of ids") }
            elements = [value]
        default: throw .invalidParameter(name, "must be a JSON array of ids")
        }
        guard !elements.isEmpty else { throw .invalidParameter(name, "must not be empty") }
        guard elements.count <= max else {
            throw .invalidParameter(name, "must hold at most \(max) ids, got \(elements.count)")
        }
        var ids: [String] = []
        ids.reserveCapacity(elements.count)
        for element in elements {
            switch element {
            case .string(let id) where Self.isPlainID(id): ids.append(id)
            case .int(let id) where id >= 0: ids.append(String(id))
            default: throw .invalidParameter(name, "must hold ids (digits), got \(element.serializedString.prefix(40))")
            }
        }
        return ids
    }

    /// Baidu's ids (channel, user, message, timer) are decimal digits.
    static func isPlainID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { (48...57).contains($0) }
    }

    static func parseInteger(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 19 else { return nil }
        var bytes = Array(text.utf8)[...]
        var negative = false
        if bytes.first == UInt8(ascii: "-") {
            negative = true
            bytes = bytes.dropFirst()
        }
        guard !bytes.isEmpty, bytes.allSatisfy({ (48...57).contains($0) }) else { return nil }
        guard let magnitude = Int(String(decoding: bytes, as: UTF8.self)) else { return nil }
        return negative ? -magnitude : magnitude
    }
}
