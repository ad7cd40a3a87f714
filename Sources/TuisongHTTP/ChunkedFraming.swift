internal import CTuisongShims

/// RFC 9112 §7.1's chunked framing, checked on a connection's bytes as they arrive.
///
/// libmicrohttpd 0.9.75 decodes a chunked body itself and accepts a bare LF where the RFC wants
/// CRLF: after a chunk-size line, after a chunk's data, in the trailer section and on its final
/// line (`5` LF `hello` CRLF `0` CRLF CRLF is read as `hello`). A proxy in front that does not end
/// those lines at a bare LF frames the same bytes differently: request smuggling. Only the raw
/// bytes show the line ends, so this scanner follows every request on the connection as
/// libmicrohttpd does (heads, `Content-Length` bodies, chunked bodies) and records the first
/// line end in a chunked body that is not CRLF.
///
/// It needs to agree with libmicrohttpd only on requests the front door lets through: one
/// `Transfer-Encoding: chunked` (any case, whitespace before it) and no `Content-Length`, or one
/// `Content-Length` of digits, or neither. Any other framing is refused and its connection
/// closed by `FrontDoor`, so the scanner stops there (`finished`) rather than guess.
struct ChunkedFramingScanner {
    /// The first bad line end: which request on the connection (1-based, counting request lines
    /// as libmicrohttpd does) and why, in one sentence for the client.
    struct Violation: Equatable {
        let request: Int
        let reason: String
    }

    private enum State {
        /// Between requests: libmicrohttpd skips empty lines here.
        case betweenRequests
        /// A CR between requests; an LF after it ends an empty line.
        case betweenRequestsCR
        /// In the request line or a field line.
        case head
        /// A `Content-Length` body.
        case body(remaining: UInt64)
        /// The first character of a chunk-size line.
        case sizeStart
        /// The chunk size's hex digits.
        case size(UInt64)
        /// After the size: a chunk extension, up to the line end.
        case sizeExtension(UInt64)
        /// A CR ended the size line; LF must follow.
        case sizeLF(UInt64)
        case data(remaining: UInt64)
        /// A chunk's data is in; CRLF must follow.
        case dataCR
        case dataLF
        /// The start of a trailer field line, or of the final empty line.
        case trailerLineStart
        case trailerLine
        case trailerLineLF
        case finalLF
        /// A violation was found, or a framing the front door refuses: nothing more is read.
        case finished
    }

    /// The line being read in the head: only what is needed to find the framing fields.
    private struct HeadLine {
        enum Field {
            case transferEncoding
            case contentLength
            case other
        }

        var isFirst = true
        var length = 0
        /// Field name bytes up to the colon (at most 32: longer names are not framing fields).
        var name: [UInt8] = []
        /// Known at the colon.
        var field: Field?
        /// A `Transfer-Encoding` value after the whitespace that follows the colon, at most 64
        /// bytes (longer is not `chunked`).
        var value: [UInt8] = []
        var valueTooLong = false
        /// A `Content-Length` value read as it comes, however long (libmicrohttpd takes leading
        /// zeros): nil once it is not digits only or passes 2^64.
        var length64: UInt64? = 0
        var valueStarted = false
        var startsWithWhitespace = false
        /// libmicrohttpd replaces each line end with a NUL and takes a line whose first byte is
        /// NUL for an empty one: the end of the head.
        var startsWithNUL = false
        /// A CR not yet known to end the line (libmicrohttpd ends a line at LF or CRLF; a CR
        /// before anything else stays in the line).
        var pendingCR = false
        /// The request line's last eight bytes, for its version.
        var tail: UInt64 = 0
    }

    private struct HeadFields {
        var transferEncodings = 0
        var chunked = false
        var contentLengths = 0
        var contentLength: UInt64?
        /// A continuation line (obs-fold) after a framing field, which the front door refuses.
        var foldedFraming = false
        var lastLineWasFraming = false
        var isHTTP10 = false
    }

    private var state = State.betweenRequests
    private var line = HeadLine()
    private var fields = HeadFields()
    /// Request lines begun on the connection.
    private(set) var requests = 0
    /// Requests whose last byte (of the head, or of the body it frames) has been read.
    private(set) var completedRequests = 0
    private(set) var violation: Violation?

    init() {
        line.name.reserveCapacity(32)
        line.value.reserveCapacity(64)
    }

    /// Whether it stopped reading: a violation, or a framing it leaves to the front door.
    var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    mutating func scan(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        let count = bytes.count
        while index < count {
            switch state {
            case .finished:
                return
            case .body(let remaining):
                let taken = min(remaining, UInt64(count - index))
                index += Int(taken)
                if remaining == taken { completeRequest() } else { state = .body(remaining: remaining - taken) }
            case .data(let remaining):
                let taken = min(remaining, UInt64(count - index))
                index += Int(taken)
                state = remaining == taken ? .dataCR : .data(remaining: remaining - taken)
            default:
                step(bytes[index])
                index += 1
            }
        }
    }

    private static let carriageReturn = UInt8(ascii: "\r")
    private static let lineFeed = UInt8(ascii: "\n")

    private mutating func step(_ byte: UInt8) {
        let cr = Self.carriageReturn
        let lf = Self.lineFeed
        switch state {
        case .betweenRequests:
            if byte == lf { return }
            if byte == cr {
                state = .betweenRequestsCR
                return
            }
            if byte == 0 {
                // libmicrohttpd skips the line as if it were empty; a proxy may not.
                refuse("a line before the request line starts with a NUL byte", request: requests + 1)
                return
            }
            beginRequest()
            headByte(byte)
        case .betweenRequestsCR:
            if byte == lf {
                state = .betweenRequests
                return
            }
            beginRequest()
            headByte(cr)
            headByte(byte)
        case .head:
            headByte(byte)
        case .sizeStart:
            guard let digit = Self.hexValue(byte) else {
                // Not a size at all: libmicrohttpd refuses the body itself.
                if byte == lf { refuse("a chunk-size line ends with a bare LF; chunked framing needs CRLF") }
                state = .finished
                return
            }
            state = .size(UInt64(digit))
        case .size(let size):
            if let digit = Self.hexValue(byte) {
                // libmicrohttpd answers a size past 2^64 itself.
                guard size >> 60 == 0 else {
                    state = .finished
                    return
                }
                state = .size(size << 4 | UInt64(digit))
            } else {
                sizeLineByte(byte, size: size)
            }
        case .sizeExtension(let size):
            sizeLineByte(byte, size: size)
        case .sizeLF(let size):
            guard byte == lf else {
                refuse("a chunk-size line holds a CR not followed by LF")
                return
            }
            state = size == 0 ? .trailerLineStart : .data(remaining: size)
        case .dataCR:
            if byte == cr {
                state = .dataLF
            } else if byte == lf {
                refuse("a chunk's data ends with a bare LF; chunked framing needs CRLF")
            } else {
                // Data longer than its size: libmicrohttpd refuses the body itself.
                state = .finished
            }
        case .dataLF:
            if byte == lf {
                state = .sizeStart
            } else {
                refuse("a chunk's data ends with a CR not followed by LF")
            }
        case .trailerLineStart:
            if byte == cr {
                state = .finalLF
            } else if byte == lf {
                refuse("a chunked body's last line ends with a bare LF; chunked framing needs CRLF")
            } else if byte == 0 {
                // libmicrohttpd would end the body at this line, as if it were empty.
                refuse("a trailer line of a chunked body starts with a NUL byte")
            } else {
                state = .trailerLine
            }
        case .trailerLine:
            if byte == cr {
                state = .trailerLineLF
            } else if byte == lf {
                refuse("a trailer field line ends with a bare LF; chunked framing needs CRLF")
            }
        case .trailerLineLF:
            if byte == lf {
                state = .trailerLineStart
            } else {
                refuse("a trailer field line holds a CR not followed by LF")
            }
        case .finalLF:
            if byte == lf {
                completeRequest()
            } else {
                refuse("a chunked body's last line holds a CR not followed by LF")
            }
        case .body, .data, .finished:
            break
        }
    }

    private mutating func sizeLineByte(_ byte: UInt8, size: UInt64) {
        if byte == Self.carriageReturn {
            state = .sizeLF(size)
        } else if byte == Self.lineFeed {
            refuse("a chunk-size line ends with a bare LF; chunked framing needs CRLF")
        } else {
            state = .sizeExtension(size)
        }
    }

    /// Records the violation of `request` (the current one unless said) and stops reading.
    private mutating func refuse(_ reason: String, request: Int? = nil) {
        violation = Violation(request: request ?? requests, reason: reason)
        state = .finished
    }

    private mutating func completeRequest() {
        completedRequests = requests
        state = .betweenRequests
    }

    private mutating func beginRequest() {
        requests += 1
        state = .head
        fields = HeadFields()
        resetLine(isFirst: true)
    }

    private mutating func resetLine(isFirst: Bool) {
        line.isFirst = isFirst
        line.length = 0
        line.name.removeAll(keepingCapacity: true)
        line.field = nil
        line.value.removeAll(keepingCapacity: true)
        line.valueTooLong = false
        line.length64 = 0
        line.valueStarted = false
        line.startsWithWhitespace = false
        line.startsWithNUL = false
        line.pendingCR = false
        line.tail = 0
    }

    private mutating func headByte(_ byte: UInt8) {
        if line.pendingCR {
            line.pendingCR = false
            if byte == Self.lineFeed {
                endHeadLine()
                return
            }
            lineContent(Self.carriageReturn)
        }
        if byte == Self.carriageReturn {
            line.pendingCR = true
        } else if byte == Self.lineFeed {
            endHeadLine()
        } else {
            lineContent(byte)
        }
    }

    private mutating func lineContent(_ byte: UInt8) {
        if line.length == 0 {
            line.startsWithWhitespace = byte == 0x20 || byte == 0x09
            line.startsWithNUL = byte == 0
        }
        line.length += 1
        if line.isFirst {
            line.tail = line.tail << 8 | UInt64(byte)
            return
        }
        guard let field = line.field else {
            if byte == UInt8(ascii: ":") {
                line.field =
                    Self.namesEqual(line.name, "transfer-encoding")
                    ? .transferEncoding : Self.namesEqual(line.name, "content-length") ? .contentLength : .other
            } else if line.name.count < 32 {
                line.name.append(byte)
            }
            return
        }
        if !line.valueStarted && (byte == 0x20 || byte == 0x09) { return }  // libmicrohttpd skips it
        line.valueStarted = true
        switch field {
        case .transferEncoding:
            if line.value.count < 64 {
                line.value.append(byte)
            } else {
                line.valueTooLong = true
            }
        case .contentLength:
            guard let value = line.length64, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                line.length64 = nil
                return
            }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            line.length64 = overflow1 || overflow2 ? nil : sum
        case .other:
            break
        }
    }

    /// "HTTP/1.0" as the last eight bytes of a line.
    private static let http10: UInt64 = Array("HTTP/1.0".utf8).reduce(0) { $0 << 8 | UInt64($1) }

    private mutating func endHeadLine() {
        if line.isFirst {
            fields.isHTTP10 = line.length >= 8 && line.tail == Self.http10
            resetLine(isFirst: false)
            return
        }
        if line.length == 0 {
            endHead()
            return
        }
        if line.startsWithNUL {
            // libmicrohttpd would end the head here; a proxy would read on.
            refuse("a header line starts with a NUL byte")
            return
        }
        if line.startsWithWhitespace {
            if fields.lastLineWasFraming { fields.foldedFraming = true }
        } else if line.field == .transferEncoding {
            fields.transferEncodings += 1
            fields.chunked = !line.valueTooLong && Self.namesEqual(line.value, "chunked")
            fields.lastLineWasFraming = true
        } else if line.field == .contentLength {
            fields.contentLengths += 1
            fields.contentLength = line.valueStarted ? line.length64 : nil
            fields.lastLineWasFraming = true
        } else {
            fields.lastLineWasFraming = false
        }
        resetLine(isFirst: false)
    }

    private mutating func endHead() {
        let fields = self.fields
        if fields.foldedFraming || fields.transferEncodings > 1 || fields.contentLengths > 1 {
            state = .finished
        } else if fields.transferEncodings == 1 {
            state = fields.chunked && fields.contentLengths == 0 && !fields.isHTTP10 ? .sizeStart : .finished
        } else if fields.contentLengths == 1 {
            guard let length = fields.contentLength else {
                state = .finished
                return
            }
            if length == 0 { completeRequest() } else { state = .body(remaining: length) }
        } else {
            completeRequest()
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// ASCII case-insensitive comparison with a lowercase name.
    private static func namesEqual(_ bytes: [UInt8], _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
        for (byte, wanted) in zip(bytes, expected) {
            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            if folded != wanted { return false }
        }
        return true
    }
}

/// One connection's scanner and the count of requests libmicrohttpd has begun on it. Touched
/// only by the libmicrohttpd worker thread that owns the connection: the receive observer runs
/// inside its reads, the callbacks on the same thread.
final class ConnectionFraming: @unchecked Sendable {
    var scanner = ChunkedFramingScanner()
    /// Request lines libmicrohttpd has reported (its URI-log callback), so a request knows its
    /// place on the connection and a violation in a later pipelined request is not its own.
    var requestsBegun = 0

    /// The violation in request `ordinal`, if any.
    func violation(inRequest ordinal: Int) -> ChunkedFramingScanner.Violation? {
        guard let violation = scanner.violation, violation.request == ordinal else { return nil }
        return violation
    }

    /// Whether the scanner read request `ordinal` to its end, as libmicrohttpd did once it has
    /// the whole request: every byte libmicrohttpd parsed went through the scanner first. False
    /// means the two read the connection differently (a framing the scanner stopped at, or a
    /// leniency of libmicrohttpd's it does not mirror), and the request must not be trusted.
    func hasFollowed(request ordinal: Int) -> Bool {
        scanner.completedRequests >= ordinal
    }

    /// Hands each read to the connection's scanner (`tuisong_mhd_observe_receives`).
    static let observer: tuisong_mhd_receive_observer = { context, bytes, count in
        guard let context, let bytes else { return }
        let framing = Unmanaged<ConnectionFraming>.fromOpaque(context).takeUnretainedValue()
        framing.scanner.scan(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}
