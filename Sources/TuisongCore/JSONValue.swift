import Foundation

/// A JSON value with a deterministic serialisation: object keys sorted by their UTF-8 bytes,
/// no insignificant whitespace, only `"`, `\` and control characters escaped (non-ASCII stays
/// UTF-8), integers without a fraction. The same value always gives the same bytes, so a
/// rendered payload can be stored, compared and counted against the size limit.
///
///     let custom: JSONValue = ["order": ["id": 42, "paid": true], "note": "好"]
///     String(decoding: custom.serialized(), as: UTF8.self)
///     // {"note":"好","order":{"id":42,"paid":true}}
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

// MARK: - Access

extension JSONValue {
    /// The member `key` of an object; `nil` for a missing key or a non-object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    /// The element at `index` of an array; `nil` when out of range or not an array.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    public var isNull: Bool { self == .null }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// An integer, or a double with an exact integral value that fits.
    public var intValue: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    /// Any number as a double.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// A number as it reads back from its JSON text: a whole value as `.int` (its text has no
    /// fraction, see `serialized()`), any other as `.double`. A value built with it equals the
    /// same value stored and read again.
    public static func number(_ value: Double) -> JSONValue {
        Int64(exactly: value).map(JSONValue.int) ?? .double(value)
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

// MARK: - Bridging to Foundation's untyped JSON

extension JSONValue {
    /// Converts what `JSONSerialization` returns (`NSNull`, `NSNumber`, `String`, arrays and
    /// dictionaries with string keys); `nil` for anything else.
    public init?(jsonObject: Any) {
        // Swift's own scalars first, by exact type: an answer built in Swift holds these, and
        // boxing each in an NSNumber to learn its type cost more than writing it.
        let dynamicType = type(of: jsonObject)
        if dynamicType == Int.self {
            self = .int(Int64(jsonObject as! Int))
            return
        } else if dynamicType == Bool.self {
            self = .bool(jsonObject as! Bool)
            return
        } else if dynamicType == Double.self {
            self = .double(jsonObject as! Double)
            return
        } else if dynamicType == Int64.self {
            self = .int(jsonObject as! Int64)
            return
        }
        switch jsonObject {
        case is NSNull:
            self = .null
        case let value as String:
            self = .string(value)
        case let value as NSNumber:
            let type = String(cString: value.objCType)
            if JSONValue.isBoolean(value, objCType: type) {
                self = .bool(value.boolValue)
            } else if type == "d" || type == "f" {
                self = .double(value.doubleValue)
            } else if type == "Q", value.uint64Value > UInt64(Int64.max) {
                self = .double(value.doubleValue)
            } else {
                self = .int(value.int64Value)
            }
        case let value as [Any]:
            var elements: [JSONValue] = []
            elements.reserveCapacity(value.count)
            for element in value {
                guard let converted = JSONValue(jsonObject: element) else { return nil }
                elements.append(converted)
            }
            self = .array(elements)
        case let value as [String: Any]:
            var members: [String: JSONValue] = [:]
            for (key, member) in value {
                guard let converted = JSONValue(jsonObject: member) else { return nil }
                members[key] = converted
            }
            self = .object(members)
        default:
            return nil
        }
    }

    /// The value as `JSONSerialization` objects (`NSNull()`, `Bool`, `Int64`, `Double`,
    /// `String`, `[Any]`, `[String: Any]`).
    public var jsonObject: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let value): return value
        case .int(let value): return value
        case .double(let value): return value
        case .string(let value): return value
        case .array(let elements): return elements.map(\.jsonObject)
        case .object(let members): return members.mapValues(\.jsonObject)
        }
    }

    /// Whether a `JSONSerialization` value is JSON `true`/`false`. Not `value is Bool`: on
    /// Linux every NSNumber (1, 0, 42) casts to Bool too.
    public static func isBoolean(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return isBoolean(number, objCType: String(cString: number.objCType))
    }

    /// JSON true/false arrive as a boxed Bool NSNumber, which must not become 1/0.
    private static func isBoolean(_ number: NSNumber, objCType: String) -> Bool {
        #if canImport(Darwin)
            return CFGetTypeID(number) == CFBooleanGetTypeID()
        #else
            // swift-corelibs-foundation boxes Bool as __NSCFBoolean with the "c" (char) type;
            // JSONSerialization produces no other char-typed numbers.
            return objCType == "c"
        #endif
    }
}

// MARK: - Serialisation

extension JSONValue {
    /// The deterministic UTF-8 JSON text (see the type's documentation). A double that is an
    /// exact integer below 2^53 is written without a fraction (`1.0` → `1`); NaN and
    /// infinities, which JSON cannot express, are written as `null`.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    /// `serialized()` as a `String`.
    public var serializedString: String { String(decoding: serialized(), as: UTF8.self) }

    /// `["a","b",…]`, written straight from the strings: a page's account list bound to one
    /// statement parameter (SQLite's `json_each`) without a `JSONValue` per element.
    public static func serializedArray(_ strings: [String]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(strings.count * 16 + 2)
        out.append(UInt8(ascii: "["))
        for (index, string) in strings.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            writeString(string, into: &out)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    func write(into out: inout [UInt8]) {
        switch self {
        case .null:
            out.append(contentsOf: "null".utf8)
        case .bool(let value):
            out.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value):
            out.append(contentsOf: String(value).utf8)
        case .double(let value):
            out.append(contentsOf: JSONValue.format(value).utf8)
        case .string(let value):
            JSONValue.writeString(value, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            let keys = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (index, key) in keys.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                members[key]!.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func format(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
            return String(Int64(value))
        }
        // Swift's description is the shortest text that reads back as the same double, and
        // its forms ("0.1", "1e-07", "1.5e+300") are all valid JSON numbers.
        return value.description
    }

    /// Appends `value` as a JSON string (quoted, escaped as `serialized()` escapes): for
    /// writers that put many records of one shape straight into bytes.
    public static func writeString(_ value: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (tokens, timestamps, keys) need no escaping: copy them whole, from their
        // contiguous UTF-8 where they have it (every native string: a push writes a thousand
        // tokens a request, and the receipts of a push one a device).
        func needsEscaping(_ byte: UInt8) -> Bool {
            byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
        }
        let copied = value.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            var index = 0
            while index < bytes.count {
                if needsEscaping(bytes[index]) { return false }
                index += 1
            }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true || (copied == nil && !value.utf8.contains(where: needsEscaping)) {
            if copied == nil { out.append(contentsOf: value.utf8) }
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x08: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x00..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

// MARK: - Parsing

extension JSONValue {
    /// Why bytes are not JSON, with the byte offset where the parser gave up.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        public let offset: Int
        public let message: String
        public var description: String { "invalid JSON at byte \(offset): \(message)" }
    }

    /// Parses one JSON text (RFC 8259): whitespace around it allowed, nothing after it.
    /// Numbers without fraction or exponent that fit in Int64 become `.int`, others
    /// `.double`; duplicate keys keep the last value; nesting deeper than 512 is refused.
    /// (`JSONReader` reads the same grammar a piece at a time, without the tree.)
    public init(parsing bytes: [UInt8]) throws(ParseError) {
        var reader = JSONReader(bytes)
        self = try reader.readValue()
        try reader.finish()
    }

    /// Parses UTF-8 JSON text.
    public init(parsing text: String) throws(ParseError) {
        try self.init(parsing: Array(text.utf8))
    }
}

// MARK: - Codable

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
