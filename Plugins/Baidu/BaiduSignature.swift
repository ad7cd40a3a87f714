import TuisongCrypto

/// Baidu's request signature, the same for Channel API 2.0 and REST API 3.0:
///
///     sign = md5_hex( urlencode( HTTP_METHOD + url + k1=v1 + k2=v2 + … + secret_key ) )
///
/// `url` is scheme, host and path as the client addressed them (no query string); the
/// parameters are every one sent except `sign`, sorted by name, values as sent (decoded).
/// The official SDKs disagree on the url-encoding of `~`, `*` and space, so every encoding
/// they produce is accepted (see `Encoding`).
enum BaiduSignature {
    /// The url-encodings of the official SDKs. All keep ASCII letters, digits, `-`, `_`, `.`
    /// and percent-encode everything else as UTF-8 with upper-case hex, except as noted.
    enum Encoding: CaseIterable, Sendable {
        /// Python 3 `urllib.parse.quote_plus`: also keeps `~`; space → `+`.
        case pythonQuotePlus
        /// PHP `urlencode`, Python 2 `quote_plus`, the Java SDK (`URLEncoder` then `*` →
        /// `%2A`), the Node SDK (`encodeURIComponent`, then `!'()*~` encoded, `%20` → `+`):
        /// space → `+`, `~` and `*` encoded.
        case formEncoding
        /// Java's `URLEncoder.encode` alone: also keeps `*`; space → `+`.
        case javaURLEncoder
        /// JavaScript `encodeURIComponent` with `!'()*` encoded (RFC 3986, PHP `rawurlencode`):
        /// keeps `~`; space → `%20`.
        case rfc3986

        fileprivate var keepsTilde: Bool { self == .pythonQuotePlus || self == .rfc3986 }
        fileprivate var keepsStar: Bool { self == .javaURLEncoder }
        fileprivate var spaceAsPlus: Bool { self != .rfc3986 }
    }

    /// The text that is url-encoded and hashed: method, url, sorted `k=v`, secret key.
    static func signedText(
        method: String, url: String, parameters: [(name: String, value: String)], secretKey: String
    ) -> [UInt8] {
        var text = Array(method.utf8) + Array(url.utf8)
        let sorted = parameters.filter { $0.name != "sign" }.sorted {
            // Byte order of UTF-8 is code point order, what Python's, Java's and JavaScript's
            // sorts agree on for the ASCII names Baidu uses.
            $0.name.utf8.lexicographicallyPrecedes($1.name.utf8)
        }
        for pair in sorted {
            text += Array(pair.name.utf8)
            text.append(UInt8(ascii: "="))
            text += Array(pair.value.utf8)
        }
        text += Array(secretKey.utf8)
        return text
    }

    static func encode(_ bytes: [UInt8], _ encoding: Encoding) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 3 / 2)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                out.append(byte)
            case UInt8(ascii: "~") where encoding.keepsTilde, UInt8(ascii: "*") where encoding.keepsStar:
                out.append(byte)
            case UInt8(ascii: " ") where encoding.spaceAsPlus:
                out.append(UInt8(ascii: "+"))
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return out
    }

    /// The signature an SDK using `encoding` sends (lower-case hex).
    static func sign(
        method: String, url: String, parameters: [(name: String, value: String)], secretKey: String,
        encoding: Encoding = .formEncoding
    ) -> String {
        let text = signedText(method: method, url: url, parameters: parameters, secretKey: secretKey)
        return Hex.encode(Digest.md5(encode(text, encoding)))
    }

    /// Whether `sign` is what an official SDK computes for one of `urls` (the URL the
    /// client may have used: scheme and host variants).
    static func verify(
        sign: String, method: String, urls: [String], parameters: [(name: String, value: String)], secretKey: String
    ) -> Bool {
        guard let expected = Hex.decode(sign.lowercased()), expected.count == 16 else { return false }
        var tried = Set<[UInt8]>()
        var matched = false
        for url in urls {
            let text = signedText(method: method, url: url, parameters: parameters, secretKey: secretKey)
            for encoding in Encoding.allCases {
                let encoded = encode(text, encoding)
                // Texts without `~`, `*` or space encode the same every way: hash once.
                guard tried.insert(encoded).inserted else { continue }
                // Every candidate is hashed and compared in full, so the time taken does not
                // tell which candidate (or how much of one) matched.
                matched = constantTimeEquals(Digest.md5(encoded), expected) || matched
            }
        }
        return matched
    }

    private static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
