/// The checks a request passes once its headers are in, before any route runs and before
/// libmicrohttpd reads a byte of its body. Each refusal is answered in the route's dialect with
/// `Connection: close`, and nothing after the refused request is read on that connection.
///
/// Why: libmicrohttpd 0.9.75 frames a body by `Transfer-Encoding` whenever that header is
/// present, whatever `Content-Length` says, and by the first of repeated fields. A proxy in
/// front that frames the same bytes differently (by `Content-Length`, by the last field, or by
/// a field libmicrohttpd does not recognise, such as `Transfer-Encoding : chunked`) would
/// forward bytes libmicrohttpd then runs as a second request: request smuggling. RFC 9112 §6.3
/// asks for such a message to be treated as an error and the connection closed, as nginx does
/// (400).
enum FrontDoor {
    /// Why a request with these headers must be refused, or nil when libmicrohttpd and any
    /// conforming intermediary agree on where its body ends.
    ///
    /// - Parameter version: the request line's version, e.g. `HTTP/1.1`.
    static func framingRefusal(headers: HTTPHeaders, version: String) -> HTTPError? {
        for field in headers {
            // RFC 9112 §5.1: whitespace between a field name and its colon MUST be refused with
            // 400; libmicrohttpd keeps it as part of the name, so `Content-Length : 5` would not
            // frame the body here while a lenient proxy honours it. Any name that is not a token
            // is refused the same way.
            guard isToken(field.name[...]) else {
                return .badRequest(
                    "header field name \(excerpt(field.name)) is not a token (whitespace before the colon is not allowed)"
                )
            }
            // RFC 9110 §5.5 / RFC 9112 §2.2: a bare CR is invalid; libmicrohttpd keeps it inside
            // the value, while a lenient proxy may end the line there and read what follows as a
            // field.
            if field.value.utf8.contains(UInt8(ascii: "\r")) {
                return .badRequest("header field \(excerpt(field.name)) holds a bare CR")
            }
            // libmicrohttpd 0.9.75 glues a folded line (obs-fold, RFC 9112 §5.2) onto the field's
            // *name*: `Transfer-Encoding:` + CRLF + ` chunked` arrives as a field named
            // `Transfer-Encodingchunked`, so the body is framed by Content-Length while a proxy
            // that unfolds sees chunked. No real field name extends these two.
            for framing in framingFieldNames where extends(field.name, framing) {
                return .badRequest(
                    "header field name \(excerpt(field.name)) is a folded \(framing) line (obsolete line folding is not allowed)"
                )
            }
        }
        // RFC 9110 §7.2: a request with more than one Host is answered 400; a proxy and this
        // server could otherwise route it by different ones.
        let hosts = headers.values(for: "Host")
        if hosts.count > 1 {
            return .badRequest("Host is sent more than once")
        }
        // One field holding a list (`Host: a, b`) is as ambiguous as two fields.
        if let host = hosts.first, host.utf8.contains(UInt8(ascii: ",")) {
            return .badRequest("Host holds more than one value")
        }
        let lengths = headers.values(for: "Content-Length")
        let codings = headers.values(for: "Transfer-Encoding")
        if lengths.count > 1 {
            return .badRequest("Content-Length is sent more than once")
        }
        guard let coding = codings.first else { return nil }
        if codings.count > 1 {
            return .badRequest("Transfer-Encoding is sent more than once")
        }
        if !lengths.isEmpty {
            return .badRequest("Content-Length and Transfer-Encoding are both sent; send one")
        }
        // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request is faulty framing.
        if version == "HTTP/1.0" {
            return .badRequest("Transfer-Encoding is not allowed in an HTTP/1.0 request")
        }
        // Exactly what libmicrohttpd reads as chunked (it skips whitespace before the value,
        // not after): anything else it would read as a body without an end.
        if asciiCaseInsensitiveEquals(coding, "chunked") { return nil }
        let tokens = coding.split(separator: ",", omittingEmptySubsequences: false).map(trimmingWhitespace)
        if tokens.allSatisfy(isToken) && !tokens.allSatisfy({ asciiCaseInsensitiveEquals(String($0), "chunked") }) {
            // RFC 9112 §6.1: a transfer coding the server does not understand SHOULD get 501.
            return .notImplemented(
                "Transfer-Encoding \(excerpt(coding)) is not supported; send the body with Content-Length or Transfer-Encoding: chunked"
            )
        }
        return .badRequest("Transfer-Encoding \(excerpt(coding)) is malformed; only chunked is accepted")
    }

    /// Where libmicrohttpd keeps a field: the addresses of its name and value, and the value's
    /// length as it reports it.
    struct FieldPlace {
        let name: UInt
        let value: UInt
        let valueLength: Int
    }

    /// Why a request whose field values hold a NUL byte must be refused (400), or nil.
    ///
    /// libmicrohttpd 0.9.75 parses the head in place and reports each value up to its first NUL
    /// (`strlen`): `Transfer-Encoding: chunked\0gzip` reaches us, and frames the body, as
    /// `chunked`, while an intermediary may read the whole value. RFC 9110 §5.5 forbids NUL in a
    /// field value. What follows a value up to the next field's name (or the end of the head)
    /// is its line end, which libmicrohttpd overwrote with zeros: one (LF) or two (CRLF) between
    /// fields, two to four at the end (the blank line). Anything else there is the rest of a
    /// value after a NUL, or a folded continuation line (obs-fold, RFC 9112 §5.2), which a
    /// server may refuse the same way.
    ///
    /// - Parameter head: the request line and header block as libmicrohttpd holds it (from the
    ///   method's first byte, `MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE` bytes).
    static func nulRefusal(head: UnsafeRawBufferPointer, headers: CollectedHeaders) -> HTTPError? {
        guard let base = head.baseAddress, !headers.places.isEmpty else { return nil }
        let start = UInt(bitPattern: base)
        let end = start + UInt(head.count)
        func refusal(_ index: Int) -> HTTPError {
            let fields = Array(headers.headers)
            let name = index < fields.count ? fields[index].name : ""
            return .badRequest("header field \(excerpt(name)) holds a NUL byte or continues on a folded line")
        }
        for (index, place) in headers.places.enumerated() {
            let valueEnd = place.value + UInt(place.valueLength)
            let isLast = index == headers.places.count - 1
            let next = isLast ? end : headers.places[index + 1].name
            guard place.value >= start, valueEnd <= next, next <= end else { return refusal(index) }
            let gap = Int(next - valueEnd)
            guard isLast ? (2...4).contains(gap) : (1...2).contains(gap) else { return refusal(index) }
            let offset = Int(valueEnd - start)
            for byte in head[offset..<(offset + gap)] where byte != 0 { return refusal(index) }
        }
        return nil
    }

    /// Why a request whose request line and headers take `headerBytes` must be refused, or nil
    /// when they fit `limit`. The request line alone over the limit is a 414, else 431.
    static func sizeRefusal(headerBytes: Int, requestLineBytes: Int, limit: Int) -> HTTPError? {
        guard headerBytes > limit else { return nil }
        if requestLineBytes > limit {
            return .uriTooLong("the request line is longer than the limit of \(limit) bytes")
        }
        return .headerTooLarge("the request line and headers are larger than the limit of \(limit) bytes")
    }

    private static let framingFieldNames = ["Transfer-Encoding", "Content-Length"]

    /// Whether `name` is longer than `prefix` and starts with it, ASCII case-insensitively.
    private static func extends(_ name: String, _ prefix: String) -> Bool {
        name.utf8.count > prefix.utf8.count
            && zip(name.utf8, prefix.utf8).allSatisfy { pair in
                let (a, b) = pair
                return a == b
                    || (a | 0x20 == b | 0x20 && (a | 0x20) >= UInt8(ascii: "a") && (a | 0x20) <= UInt8(ascii: "z"))
            }
    }

    /// RFC 9110 §5.6.2 `token`: one or more of `!#$%&'*+-.^_`|~`, digits and letters.
    static func isToken(_ text: Substring) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "A")...UInt8(ascii: "Z"):
                    return true
                default:
                    return Self.tokenSymbols.contains(byte)
                }
            }
    }

    private static let tokenSymbols = Set("!#$%&'*+-.^_`|~".utf8)

    private static func trimmingWhitespace(_ text: Substring) -> Substring {
        let isWhitespace = { (character: Character) in character == " " || character == "\t" }
        guard let first = text.firstIndex(where: { !isWhitespace($0) }) else { return text[text.endIndex...] }
        let last = text.lastIndex(where: { !isWhitespace($0) }) ?? first
        return text[first...last]
    }

    /// A quoted, bounded copy of a client's text for an error message.
    private static func excerpt(_ text: String) -> String {
        let limit = 64
        return text.utf8.count <= limit
            ? "\"\(text)\"" : "\"\(String(decoding: text.utf8.prefix(limit), as: UTF8.self))…\""
    }
}
