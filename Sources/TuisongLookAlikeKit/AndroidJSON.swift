/// A JSON value as the token-based look-alikes read it. Object members keep their order (a
/// service may name a bad data value by its index, `message.data[2].value`) and numbers keep
/// their text (a service may quote the value it refused as sent).
package indirect enum MockJSON {
    case object([(key: String, value: MockJSON)])
    case array([MockJSON])
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    /// Parses one JSON value filling the whole input; nil for anything malformed.
    package static func parse(_ bytes: [UInt8]) -> MockJSON? {
        bytes.withUnsafeBufferPointer { buffer in
            var parser = Parser(bytes: buffer)
            parser.skipWhitespace()
            guard let value = parser.value(depth: 0) else { return nil }
            parser.skipWhitespace()
            return parser.index == buffer.count ? value : nil
        }
    }

    /// The first member named `key` of an object; nil for a missing member or a non-object.
    package subscript(key: String) -> MockJSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    package var members: [(key: String, value: MockJSON)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    package var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    package var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// An integer given as a JSON number without fraction or exponent, or (as proto3 JSON allows
    /// for integer fields) as a string of digits.
    package var integerValue: Int? {
        switch self {
        case .number(let text), .string(let text): return Int(text)
        default: return nil
        }
    }

    /// Compact JSON text of the value, as error messages quote it.
    package var text: String {
        switch self {
        case .object(let members):
            return "{" + members.map { RequestLogLine.quoted($0.key) + ":" + $0.value.text }.joined(separator: ",")
                + "}"
        case .array(let values): return "[" + values.map(\.text).joined(separator: ",") + "]"
        case .string(let text): return RequestLogLine.quoted(text)
        case .number(let text): return text
        case .bool(let value): return value ? "true" : "false"
        case .null: return "null"
        }
    }

    private struct Parser {
        static let maximumDepth = 64
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard peek() == byte else { return false }
            index += 1
            return true
        }

        mutating func value(depth: Int) -> MockJSON? {
            guard depth < Self.maximumDepth, let byte = peek() else { return nil }
            switch byte {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(MockJSON.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            default: return number()
            }
        }

        mutating func object(depth: Int) -> MockJSON? {
            index += 1
            var members: [(key: String, value: MockJSON)] = []
            skipWhitespace()
            if consume(UInt8(ascii: "}")) { return .object(members) }
            while true {
                skipWhitespace()
                guard peek() == UInt8(ascii: "\""), let key = string() else { return nil }
                skipWhitespace()
                guard consume(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                guard let value = value(depth: depth + 1) else { return nil }
                members.append((key, value))
                skipWhitespace()
                if consume(UInt8(ascii: "}")) { return .object(members) }
                guard consume(UInt8(ascii: ",")) else { return nil }
            }
        }

        mutating func array(depth: Int) -> MockJSON? {
            index += 1
            var values: [MockJSON] = []
            skipWhitespace()
            if consume(UInt8(ascii: "]")) { return .array(values) }
            while true {
                skipWhitespace()
                guard let value = value(depth: depth + 1) else { return nil }
                values.append(value)
                skipWhitespace()
                if consume(UInt8(ascii: "]")) { return .array(values) }
                guard consume(UInt8(ascii: ",")) else { return nil }
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += count
            return true
        }

        mutating func string() -> String? {
            index += 1
            var scalars = String.UnicodeScalarView()
            var pendingHighSurrogate: UInt32?
            var utf8: [UInt8] = []
            func flushUTF8() -> Bool {
                guard !utf8.isEmpty else { return true }
                guard let text = String(validating: utf8, as: UTF8.self) else { return false }
                scalars.append(contentsOf: text.unicodeScalars)
                utf8.removeAll(keepingCapacity: true)
                return true
            }
            while let byte = peek() {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard pendingHighSurrogate == nil, flushUTF8() else { return nil }
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    guard flushUTF8(), let escaped = peek() else { return nil }
                    index += 1
                    if escaped != UInt8(ascii: "u") && pendingHighSurrogate != nil { return nil }
                    switch escaped {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        guard let code = hex4() else { return nil }
                        if let high = pendingHighSurrogate {
                            guard (0xDC00...0xDFFF).contains(code) else { return nil }
                            pendingHighSurrogate = nil
                            let combined = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)
                            guard let scalar = Unicode.Scalar(combined) else { return nil }
                            scalars.append(scalar)
                        } else if (0xD800...0xDBFF).contains(code) {
                            pendingHighSurrogate = code
                        } else {
                            guard let scalar = Unicode.Scalar(code) else { return nil }
                            scalars.append(scalar)
                        }
                    default:
                        return nil
                    }
                case 0x00..<0x20:
                    return nil
                default:
                    guard pendingHighSurrogate == nil else { return nil }
                    utf8.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - index >= 4 else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        mutating func number() -> MockJSON? {
            let start = index
            _ = consume(UInt8(ascii: "-"))
            if !consume(UInt8(ascii: "0")) {
                guard digits() > 0 else { return nil }
            }
            if consume(UInt8(ascii: ".")) {
                guard digits() > 0 else { return nil }
            }
            if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
                if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
                guard digits() > 0 else { return nil }
            }
            return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
        }

        mutating func digits() -> Int {
            let start = index
            while let byte = peek(), byte >= 0x30 && byte <= 0x39 { index += 1 }
            return index - start
        }
    }
}

/// `application/x-www-form-urlencoded` bodies, as OAuth token endpoints take them.
package enum FormBody {
    /// Name → value (the first of repeated names). Nil when a percent escape is malformed or the
    /// decoded text is not UTF-8.
    package static func parse(_ bytes: [UInt8]) -> [String: String]? {
        var fields: [String: String] = [:]
        for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { return nil }
            let value = parts.count > 1 ? decode(parts[1]) : ""
            guard let value else { return nil }
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "+") {
                output.append(0x20)
            } else if byte == UInt8(ascii: "%") {
                guard bytes.endIndex - index >= 3,
                    let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                else { return nil }
                output.append(high << 4 | low)
                index += 2
            } else {
                output.append(byte)
            }
            index += 1
        }
        return String(validating: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
