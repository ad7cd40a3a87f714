/// `application/x-www-form-urlencoded`, as browsers send forms (WHATWG URL, RFC 1866): UTF-8,
/// a space becomes "+", `A-Z a-z 0-9 - . _ *` stay as they are, every other byte is `%XX`
/// (upper-case hex); fields joined with "&", name and value with "=".
///
///     FormEncoding.encode([("grant_type", "client_credentials"), ("scope", "a b")])
///     // "grant_type=client_credentials&scope=a+b"
public enum FormEncoding {
    public static func encode(_ fields: [(String, String)]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 })
        for (index, (name, value)) in fields.enumerated() {
            if index > 0 { output.append(UInt8(ascii: "&")) }
            append(name, to: &output)
            output.append(UInt8(ascii: "="))
            append(value, to: &output)
        }
        return output
    }

    /// The fields of a form-encoded body, in order; nil when a `%` escape is broken or a value
    /// is not UTF-8. (A service's callback posts a form: its receipts.)
    ///
    ///     FormEncoding.decode(Array("data=%7B%7D&x=a+b".utf8))  // [("data", "{}"), ("x", "a b")]
    public static func decode(_ body: [UInt8]) -> [(String, String)]? {
        var fields: [(String, String)] = []
        for part in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let pair = part.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = unescape(pair[0]), let value = pair.count > 1 ? unescape(pair[1]) : "" else { return nil }
            fields.append((name, value))
        }
        return fields
    }

    private static func unescape(_ bytes: ArraySlice<UInt8>) -> String? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "+"):
                output.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard bytes.distance(from: index, to: bytes.endIndex) >= 3, let high = hexValue(bytes[index + 1]),
                    let low = hexValue(bytes[index + 2])
                else { return nil }
                output.append(high << 4 | low)
                index += 2
            default:
                output.append(byte)
            }
            index += 1
        }
        return String(validating: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func append(_ string: String, to output: inout [UInt8]) {
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "*"):
                output.append(byte)
            case UInt8(ascii: " "):
                output.append(UInt8(ascii: "+"))
            default:
                output.append(UInt8(ascii: "%"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            }
        }
    }
}
