/// Why a piece of a URL or form body could not be decoded.
enum PercentDecodingFailure: Error, Equatable {
    /// A `%` not followed by two hexadecimal digits.
    case badEscape
    /// The decoded bytes are not UTF-8.
    case invalidUTF8

    var message: String {
        switch self {
        case .badEscape: "malformed percent escape"
        case .invalidUTF8: "not valid UTF-8 after percent-decoding"
        }
    }
}

/// Decodes `%XX` escapes (and `+` as a space when `plusAsSpace`, as in query strings and form
/// bodies) and validates the result as UTF-8.
func percentDecode(
    _ bytes: UnsafeBufferPointer<UInt8>, plusAsSpace: Bool
) throws(PercentDecodingFailure) -> String {
    var needsDecoding = false
    for byte in bytes where byte == UInt8(ascii: "%") || (plusAsSpace && byte == UInt8(ascii: "+")) {
        needsDecoding = true
        break
    }
    if !needsDecoding {
        guard let string = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
        return string
    }
    var decoded: [UInt8] = []
    decoded.reserveCapacity(bytes.count)
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if byte == UInt8(ascii: "%") {
            guard index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            else { throw .badEscape }
            decoded.append(high << 4 | low)
            index += 3
        } else {
            decoded.append(plusAsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            index += 1
        }
    }
    guard let string = String(validating: decoded, as: UTF8.self) else { throw .invalidUTF8 }
    return string
}

/// `withUTF8` is `rethrows`, which erases a typed error; this keeps it.
func withUTF8Bytes<Result, Failure: Error>(
    of string: String, _ body: (UnsafeBufferPointer<UInt8>) throws(Failure) -> Result
) throws(Failure) -> Result {
    var string = string
    let outcome = string.withUTF8 { bytes in
        Swift.Result { () throws(Failure) -> Result in try body(bytes) }
    }
    return try outcome.get()
}

@inline(__always)
private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}
