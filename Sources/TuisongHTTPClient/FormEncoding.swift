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
