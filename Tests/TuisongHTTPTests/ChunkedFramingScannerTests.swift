import Testing

@testable import TuisongHTTP

/// The scanner alone, on the bytes of whole connections: every result is checked with the
/// bytes arriving at once and one by one, since a read can end anywhere.
@Suite("Chunked framing scanner: line ends in chunked bodies as the bytes arrive")
struct ChunkedFramingScannerTests {
    private struct Outcome: Equatable {
        let requests: Int
        let violation: ChunkedFramingScanner.Violation?
        let finished: Bool
    }

    /// Scans `text` whole, one byte at a time, and in reads of 7 bytes; all three must agree.
    private func scan(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Outcome {
        let bytes = Array(text.utf8)
        func run(_ size: Int) -> Outcome {
            var scanner = ChunkedFramingScanner()
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + size)
                bytes[start..<end].withUnsafeBytes { scanner.scan($0) }
                start = end
            }
            return Outcome(requests: scanner.requests, violation: scanner.violation, finished: scanner.isFinished)
        }
        let whole = run(max(1, bytes.count))
        #expect(run(1) == whole, "byte by byte", sourceLocation: sourceLocation)
        #expect(run(7) == whole, "7 bytes a read", sourceLocation: sourceLocation)
        return whole
    }

    private let post = "POST /api/v1/push HTTP/1.1\r\nHost: a\r\n"

    @Test("CRLF everywhere: no violation, and every pipelined request is counted")
    func wellFramed() {
        let text =
            post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1a;name=value\r\n"
            + String(repeating: "x", count: 26) + "\r\n0\r\nX-Trailer: 1\r\n\r\n"
            + post + "Content-Length: 5\r\n\r\n5\n\n\nx"
            + "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
            + post + "transfer-encoding:   CHUNKED\r\n\r\n0\r\n\r\n"
        let outcome = scan(text)
        #expect(outcome == Outcome(requests: 4, violation: nil, finished: false))
    }

    @Test(
        "a bare LF or a lone CR in the chunked framing is the request's violation",
        arguments: [
            ("5\nhello\r\n0\r\n\r\n", "a chunk-size line ends with a bare LF; chunked framing needs CRLF"),
            ("5;ext\nhello\r\n0\r\n\r\n", "a chunk-size line ends with a bare LF; chunked framing needs CRLF"),
            ("5\r\nhello\n0\r\n\r\n", "a chunk's data ends with a bare LF; chunked framing needs CRLF"),
            ("0\n\r\n", "a chunk-size line ends with a bare LF; chunked framing needs CRLF"),
            ("0\r\n\n", "a chunked body's last line ends with a bare LF; chunked framing needs CRLF"),
            ("0\r\nX-T: 1\n\r\n", "a trailer field line ends with a bare LF; chunked framing needs CRLF"),
            ("5\r\rhello\r\n0\r\n\r\n", "a chunk-size line holds a CR not followed by LF"),
            ("5\r\nhello\r\r0\r\n\r\n", "a chunk's data ends with a CR not followed by LF"),
            ("0\r\n\rX", "a chunked body's last line holds a CR not followed by LF"),
            ("\n5\r\nhello\r\n0\r\n\r\n", "a chunk-size line ends with a bare LF; chunked framing needs CRLF"),
        ])
    func bareLineEnds(body: String, reason: String) {
        let outcome = scan(post + "Transfer-Encoding: chunked\r\n\r\n" + body)
        #expect(outcome.violation == .init(request: 1, reason: reason))
        #expect(outcome.finished)
    }

    @Test("the violation names the pipelined request it is in, after a length-framed one")
    func laterRequest() {
        // The first body holds a bare LF, but it is length-framed data, not chunked framing.
        let text =
            post + "Content-Length: 7\r\n\r\n5\nhello"
            + "\r\n\n"  // empty lines between requests, as libmicrohttpd skips them
            + post + "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n"
        #expect(
            scan(text).violation
                == .init(request: 2, reason: "a chunk-size line ends with a bare LF; chunked framing needs CRLF"))
    }

    @Test("bare LFs ending head lines are libmicrohttpd's (RFC 9112 §2.2 allows them), not a violation")
    func bareLFInTheHead() {
        let outcome = scan("POST /x HTTP/1.1\nHost: a\nTransfer-Encoding: chunked\n\n3\r\nabc\r\n0\r\n\r\n")
        #expect(outcome == Outcome(requests: 1, violation: nil, finished: false))
    }

    @Test(
        "framings the front door refuses stop the scan without a violation",
        arguments: [
            "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            "Content-Length: 5\r\nContent-Length: 5\r\n",
            "Transfer-Encoding: gzip\r\n",
            "Transfer-Encoding: chunked \r\n",
            "Transfer-Encoding:\r\n chunked\r\n",
            "Content-Length: 5x\r\n",
            "Content-Length: 99999999999999999999\r\n",
        ])
    func refusedFramings(fields: String) {
        let outcome = scan(post + fields + "\r\n5\nhello\r\n0\r\n\r\n")
        #expect(outcome.violation == nil)
        #expect(outcome.finished)
    }

    @Test(
        "Transfer-Encoding in an HTTP/1.0 request is the front door's; whitespace before chunked is read as libmicrohttpd does"
    )
    func versionsAndWhitespace() {
        let old = scan("POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n")
        #expect(old.violation == nil && old.finished)
        let padded = scan(
            post + "Transfer-Encoding:" + String(repeating: " ", count: 500) + "chunked\r\n\r\n5\nhello\r\n0\r\n\r\n")
        #expect(padded.violation?.request == 1)
    }

    @Test("a line starting with NUL, which libmicrohttpd takes for an empty line, is a violation where it stands")
    func nulLedLines() {
        let bareLF = post + "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n"
        // Before a request line: the next request's.
        #expect(
            scan("\u{0}\r\n\r\n" + bareLF).violation
                == .init(request: 1, reason: "a line before the request line starts with a NUL byte"))
        #expect(
            scan("GET / HTTP/1.1\r\nHost: a\r\n\r\n\u{0}x\r\n\r\n" + bareLF).violation
                == .init(request: 2, reason: "a line before the request line starts with a NUL byte"))
        // Ending a head: libmicrohttpd would frame the body from there.
        #expect(
            scan(post + "Transfer-Encoding: chunked\r\n\u{0}\n2\n{}\n0\n\n").violation
                == .init(request: 1, reason: "a header line starts with a NUL byte"))
        // Ending a chunked body's trailers.
        #expect(
            scan(post + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\u{0}\r\n" + bareLF).violation
                == .init(request: 1, reason: "a trailer line of a chunked body starts with a NUL byte"))
    }

    @Test(
        "a Content-Length of any length is read as libmicrohttpd reads it (leading zeros), so later requests stay in step"
    )
    func longContentLength() {
        let text =
            post + "Content-Length: " + String(repeating: "0", count: 70) + "5\r\n\r\nhello"
            + post + "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n"
        #expect(scan(text).violation?.request == 2)
    }

    @Test("each request is complete once its last byte is read: after the head, the length or the chunked body")
    func completedRequests() {
        func completed(_ text: String) -> Int {
            var scanner = ChunkedFramingScanner()
            Array(text.utf8).withUnsafeBytes { scanner.scan($0) }
            return scanner.completedRequests
        }
        #expect(completed("GET / HTTP/1.1\r\nHost: a\r\n") == 0)
        #expect(completed("GET / HTTP/1.1\r\nHost: a\r\n\r\n") == 1)
        #expect(completed(post + "Content-Length: 5\r\n\r\nhell") == 0)
        #expect(completed(post + "Content-Length: 5\r\n\r\nhello") == 1)
        #expect(completed(post + "Transfer-Encoding: chunked\r\n\r\n0\r\n") == 0)
        #expect(completed(post + "Transfer-Encoding: chunked\r\n\r\n0\r\nX: 1\r\n\r\n") == 1)
        // Stopped at a framing it leaves to the front door: the request is never complete.
        #expect(completed(post + "Content-Length: 5x\r\n\r\nhello") == 0)
    }

    @Test("a size past 2^64 is left to libmicrohttpd; a chunk longer than its size too")
    func leftToTheLibrary() {
        let huge = scan(post + "Transfer-Encoding: chunked\r\n\r\n" + String(repeating: "f", count: 17) + "\r\n")
        #expect(huge.violation == nil && huge.finished)
        let long = scan(post + "Transfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n")
        #expect(long.violation == nil && long.finished)
    }
}
