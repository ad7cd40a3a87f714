/// Reads one JSON text a piece at a time (RFC 8259, the grammar and limits of
/// `JSONValue(parsing:)`, which is built on it): a body of many records is read straight into
/// the caller's own values, with no `JSONValue` tree and no dictionary per record, and what the
/// caller does not need is skipped — checked as strictly as if it were kept, but not stored.
///
///     var reader = JSONReader(body)
///     try reader.beginObject()
///     while let key = try reader.nextKey() {
///         guard key == "statuses" else { try reader.skipValue(); continue }
///         try reader.beginArray()
///         while try reader.nextElement() { … }
///     }
///     try reader.finish()
///
/// A method that finds something else than it was asked to read throws, as `JSONValue(parsing:)`
/// would have for bytes that are not JSON; the caller decides what a valid text of the wrong
/// shape means (`peek` says what comes next).
public struct JSONReader {
    /// What the next value is, from its first byte.
    public enum Kind: Sendable, Hashable {
        case object, array, string, number, bool, null
    }

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    /// Set when an object or array was just entered: its first member or element needs no comma.
    private var opened = false
    private static let maximumDepth = 512

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        skipWhitespace()
    }

    /// The kind of the value that comes next; nil at the end of the text or before a byte no
    /// value starts with.
    public var peek: Kind? {
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: return nil
        }
    }

    /// Enters the object that comes next; then `nextKey()` until it returns nil.
    public mutating func beginObject() throws(JSONValue.ParseError) {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { throw fail("expected an object") }
        try enter()
        index += 1
        opened = true
    }

    /// The next member's key, the reader then before its value (which the caller must read or
    /// skip); nil after the object's last member, the object then left.
    public mutating func nextKey() throws(JSONValue.ParseError) -> String? {
        let first = opened
        opened = false
        skipWhitespace()
        if first {
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                leave()
                return nil
            }
        } else {
            guard index < bytes.count else { throw fail("unterminated object") }
            if bytes[index] == UInt8(ascii: "}") {
                leave()
                return nil
            }
            guard bytes[index] == UInt8(ascii: ",") else { throw fail("expected ',' or '}'") }
            index += 1
            skipWhitespace()
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
        let key = try readString()
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
        index += 1
        skipWhitespace()
        return key
    }

    /// Enters the array that comes next; then `nextElement()` until it returns false.
    public mutating func beginArray() throws(JSONValue.ParseError) {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "[") else { throw fail("expected an array") }
        try enter()
        index += 1
        opened = true
    }

    /// Whether another element follows (the caller must then read or skip it); false after the
    /// array's last element, the array then left.
    public mutating func nextElement() throws(JSONValue.ParseError) -> Bool {
        let first = opened
        opened = false
        skipWhitespace()
        if first {
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                leave()
                return false
            }
        } else {
            guard index < bytes.count else { throw fail("unterminated array") }
            if bytes[index] == UInt8(ascii: "]") {
                leave()
                return false
            }
            guard bytes[index] == UInt8(ascii: ",") else { throw fail("expected ',' or ']'") }
            index += 1
            skipWhitespace()
        }
        return true
    }

    /// The next value, whole (for a member's scalar this costs no more than the scalar).
    public mutating func readValue() throws(JSONValue.ParseError) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try beginObject()
            var members: [String: JSONValue] = [:]
            while let key = try nextKey() { members[key] = try readValue() }
            return .object(members)
        case UInt8(ascii: "["):
            try beginArray()
            var elements: [JSONValue] = []
            while try nextElement() { elements.append(try readValue()) }
            return .array(elements)
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw fail("unexpected character")
        }
    }

    /// Passes over the next value, checked as `readValue()` checks it, keeping nothing.
    public mutating func skipValue() throws(JSONValue.ParseError) {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try beginObject()
            while try nextKey() != nil { try skipValue() }
        case UInt8(ascii: "["):
            try beginArray()
            while try nextElement() { try skipValue() }
        case UInt8(ascii: "\""): try skipString()
        default: _ = try readValue()
        }
    }

    /// Checks that nothing but whitespace follows the value read.
    public mutating func finish() throws(JSONValue.ParseError) {
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
    }

    // MARK: - Pieces

    private func fail(_ message: String) -> JSONValue.ParseError {
        JSONValue.ParseError(offset: index, message: message)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func enter() throws(JSONValue.ParseError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw fail("nested deeper than \(Self.maximumDepth)") }
    }

    private mutating func leave() {
        index += 1
        depth -= 1
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONValue.ParseError) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw fail("expected \(literal)") }
        let expected = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != expected[offset] { throw fail("expected \(literal)") }
        index += count
    }

    /// A string without escapes (the common case) is made from its bytes in one step; one with
    /// escapes is decoded byte by byte.
    private mutating func readString() throws(JSONValue.ParseError) -> String {
        index += 1  // opening quote
        let start = index
        // Every byte of the string OR'd: below 0x80, it is ASCII and needs no validating.
        var bits: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let end = index
                index += 1
                if bits < 0x80 {
                    // Specialized for a buffer, unlike `String(validating:)` over an array slice,
                    // which the runtime instantiated per string: 5.7 % of the gateway's CPU
                    // while it read receipt POSTs (every key and token is ASCII).
                    return bytes.withUnsafeBufferPointer {
                        String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self)
                    }
                }
                // Validate UTF-8 rather than silently replacing bad bytes.
                guard let string = String(validating: bytes[start..<end], as: UTF8.self) else {
                    throw fail("string is not valid UTF-8")
                }
                return string
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            bits |= byte
            index += 1
        }
        var out = Array(bytes[start..<index])
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: out, as: UTF8.self) else {
                    throw fail("string is not valid UTF-8")
                }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try readHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else {
                            throw fail("unpaired surrogate")
                        }
                        index += 2
                        let low = try readHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw fail("unpaired surrogate")
                    } else if scalar == 0 {
                        // Kept, a NUL would be cut off by whatever reads the string as C text
                        // (`"alice\u0000evil"` stored as `alice`): refused instead.
                        throw fail("a string holds \\u0000 (NUL), which is not allowed")
                    }
                    out += Array(String(Character(Unicode.Scalar(scalar)!)).utf8)
                default:
                    throw fail("invalid escape")
                }
            case 0x00..<0x20:
                throw fail("control character in string")
            default:
                out.append(byte)
                index += 1
            }
        }
    }

    /// `readString()` without making the string: bytes outside ASCII are checked as UTF-8 in
    /// place (the failure reported where `readString()` reports it, after the closing quote);
    /// a string with escapes is read whole.
    private mutating func skipString() throws(JSONValue.ParseError) {
        let opening = index
        index += 1
        var valid = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                guard valid else { throw fail("string is not valid UTF-8") }
                return
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            if byte < 0x80 {
                index += 1
            } else if let length = utf8SequenceLength(at: index) {
                index += length
            } else {
                valid = false
                index += 1
            }
        }
        index = opening
        _ = try readString()
    }

    /// The length of the well-formed UTF-8 sequence starting at `start` (Unicode's table 3-7:
    /// no overlong forms, no surrogates, nothing past U+10FFFF); nil when it is not one.
    private func utf8SequenceLength(at start: Int) -> Int? {
        let lead = bytes[start]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            high = 0x9F
        case 0xF0:
            length = 4
            low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            high = 0x8F
        default: return nil
        }
        guard bytes.count - start >= length, (low...high).contains(bytes[start + 1]) else { return nil }
        for offset in 2..<length where !(0x80...0xBF).contains(bytes[start + offset]) { return nil }
        return length
    }

    private mutating func readHex4() throws(JSONValue.ParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// An integer that fits in Int64 is accumulated from its digits; any other number is read
    /// as a double from its text.
    private mutating func readNumber() throws(JSONValue.ParseError) -> JSONValue {
        let start = index
        var isInteger = true
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected a digit") }
        // Accumulated negatively, so Int64.min fits; nil once it does not fit.
        var integer: Int64? = 0
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                if let value = integer {
                    let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
                    let (next, overflow2) = times10.subtractingReportingOverflow(Int64(bytes[index] - 48))
                    integer = overflow1 || overflow2 ? nil : next
                }
                index += 1
            }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected a digit after '.'") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("expected an exponent digit") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger, let integer {
            if negative { return .int(integer) }
            if integer != .min { return .int(-integer) }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONValue.ParseError(offset: start, message: "number out of range")
        }
        return .double(value)
    }

    private func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
}
