import Foundation
import Testing
import TuisongCrypto
import TuisongLookAlikes
import TuisongPluginTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// A deliberately naive HTTP/2 client: it writes hand-built frames without waiting for the
/// server's SETTINGS, so it can do what well-behaved clients (nghttp, curl, h2load) never do —
/// open more streams than allowed, ping at will.
final class RawHTTP2Client {
    struct Frame {
        var type: UInt8
        var flags: UInt8
        var streamID: UInt32
        var payload: [UInt8]
    }

    static let data: UInt8 = 0, headers: UInt8 = 1, rstStream: UInt8 = 3, settings: UInt8 = 4
    static let ping: UInt8 = 6, goaway: UInt8 = 7
    static let endStream: UInt8 = 0x1, endHeaders: UInt8 = 0x4, ack: UInt8 = 0x1

    private let socket: Int32
    private let tls: TLSConnection
    private var pending: [UInt8] = []

    init(port: Int, caPEM: String) throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.socket = socket
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw HarnessError("connect failed: \(errno)") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let context = try TLSContext.client(
            alpn: ["h2"], trustSystemCAs: false, caCertificates: [try Certificate(pem: caPEM)])
        tls = try TLSConnection(context: context, fileDescriptor: socket, serverName: "127.0.0.1")
        guard case .done = tls.handshake() else { throw HarnessError("TLS handshake failed") }
        guard tls.negotiatedALPN == "h2" else { throw HarnessError("no h2") }
    }

    deinit { close(socket) }

    /// Bytes straight onto the socket, under TLS (the server only drops them once it lingers).
    func sendRaw(_ bytes: [UInt8]) -> Int { bytes.withUnsafeBytes { Glibc.write(socket, $0.baseAddress, $0.count) } }

    /// Half-closes: the server sees the end of the stream.
    func shutdownWriting() { Glibc.shutdown(socket, Int32(SHUT_WR)) }

    static func frame(_ type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, _ payload: [UInt8] = []) -> [UInt8] {
        let length = payload.count
        return [
            UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags,
            UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF),
        ] + payload
    }

    /// HPACK "literal header field without indexing — new name", no Huffman coding.
    static func hpack(_ fields: [(String, String)]) -> [UInt8] {
        func integer(_ value: Int) -> [UInt8] {
            if value < 127 { return [UInt8(value)] }
            var bytes: [UInt8] = [127]
            var rest = value - 127
            while rest >= 128 {
                bytes.append(UInt8(rest % 128 + 128))
                rest /= 128
            }
            return bytes + [UInt8(rest)]
        }
        var block: [UInt8] = []
        for (name, value) in fields {
            block +=
                [0x00] + integer(name.utf8.count) + Array(name.utf8) + integer(value.utf8.count) + Array(value.utf8)
        }
        return block
    }

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + frame(settings)

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let result = bytes[offset...].withUnsafeBytes { tls.write($0) }
            guard case .done(let count) = result else { throw HarnessError("TLS write failed: \(result)") }
            offset += count
        }
    }

    /// The next frame, or nil once the connection closed or nothing came for 5 s.
    func nextFrame() -> Frame? {
        while true {
            if pending.count >= 9 {
                let length = Int(pending[0]) << 16 | Int(pending[1]) << 8 | Int(pending[2])
                if pending.count >= 9 + length {
                    let streamID =
                        UInt32(pending[5] & 0x7F) << 24 | UInt32(pending[6]) << 16 | UInt32(pending[7]) << 8
                        | UInt32(pending[8])
                    let frame = Frame(
                        type: pending[3], flags: pending[4], streamID: streamID,
                        payload: Array(pending[9..<(9 + length)]))
                    pending.removeFirst(9 + length)
                    return frame
                }
            }
            var buffer = [UInt8](repeating: 0, count: 16384)
            let result = buffer.withUnsafeMutableBytes { tls.read(into: $0) }
            guard case .done(let count) = result, count > 0 else { return nil }
            pending += buffer[..<count]
        }
    }

    /// Frames until `stop` says enough (inclusive) or the connection goes quiet.
    func frames(until stop: (Frame) -> Bool) -> [Frame] {
        var frames: [Frame] = []
        while let frame = nextFrame() {
            frames.append(frame)
            if stop(frame) { break }
        }
        return frames
    }
}

@Suite("APNs mock against a rule-breaking client")
struct MockRawClientTests {
    func requestHeaders(_ harness: MockHarness, token: String) -> [(String, String)] {
        [
            (":method", "POST"), (":scheme", "https"), (":authority", "127.0.0.1"),
            (":path", "/3/device/\(MockHarness.deviceToken)"), ("authorization", "bearer \(token)"),
            ("apns-topic", MockHarness.bundleID),
        ]
    }

    @Test("streams opened past the initial limit of one are refused with REFUSED_STREAM")
    func refusedBeforeFirstValidToken() throws {
        let harness = try MockHarness()
        let client = try RawHTTP2Client(port: harness.server.port, caPEM: harness.setup.caCertificatePEM)
        let headers = requestHeaders(harness, token: try harness.jwt())
        // All HEADERS first, as nghttp2-based clients order them: stream 1 is still open (its
        // token not yet seen) when 3, 5 and 7 arrive.
        var burst = RawHTTP2Client.preface
        for stream: UInt32 in [1, 3, 5, 7] {
            burst += RawHTTP2Client.frame(
                RawHTTP2Client.headers, flags: RawHTTP2Client.endHeaders, stream: stream, RawHTTP2Client.hpack(headers))
        }
        for stream: UInt32 in [1, 3, 5, 7] {
            burst += RawHTTP2Client.frame(
                RawHTTP2Client.data, flags: RawHTTP2Client.endStream, stream: stream, Array(MockHarness.payload.utf8))
        }
        try client.send(burst)

        var answered: Set<UInt32> = []
        var refused: Set<UInt32> = []
        _ = client.frames { frame in
            if frame.type == RawHTTP2Client.rstStream, frame.payload == [0, 0, 0, 7] { refused.insert(frame.streamID) }
            if frame.type == RawHTTP2Client.headers { answered.insert(frame.streamID) }
            return answered.count + refused.count == 4
        }
        #expect(answered == [1])
        #expect(refused == [3, 5, 7])
        let statistics = harness.server.statistics
        let apns = harness.server.apnsStatistics
        #expect(statistics.refusedStreams == 3)
        #expect(apns.requests == 1)
    }

    @Test("PING is answered with a PING ACK carrying the same data")
    func ping() throws {
        let harness = try MockHarness()
        let client = try RawHTTP2Client(port: harness.server.port, caPEM: harness.setup.caCertificatePEM)
        let opaque: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        try client.send(RawHTTP2Client.preface + RawHTTP2Client.frame(RawHTTP2Client.ping, opaque))
        let frames = client.frames { $0.type == RawHTTP2Client.ping }
        let pong = try #require(frames.last)
        #expect(pong.type == RawHTTP2Client.ping)
        #expect(pong.flags & RawHTTP2Client.ack != 0)
        #expect(pong.payload == opaque)
    }

    @Test("shutdown sends GOAWAY to open connections and closes them")
    func shutdownSendsGoaway() throws {
        let harness = try MockHarness()
        let client = try RawHTTP2Client(port: harness.server.port, caPEM: harness.setup.caCertificatePEM)
        try client.send(RawHTTP2Client.preface)
        _ = client.frames { $0.type == RawHTTP2Client.settings }
        #expect(harness.server.statistics.connectionsOpen == 1)
        harness.server.shutdown()
        let frames = client.frames { _ in false }
        #expect(frames.contains { $0.type == RawHTTP2Client.goaway })
        #expect(harness.server.statistics.connectionsOpen == 0)
        #expect(harness.server.port == 0)
        harness.server.shutdown()  // idempotent
    }

    @Test("after a GOAWAY it shuts its side and reads until the client closes, so nothing it sent is reset away")
    func goawayLingersUntilTheClientCloses() async throws {
        // Lingering longer than the test can take: the connection closes because the client
        // did, not because a 2 s window passed while a loaded machine ran the test slowly.
        let harness = try MockHarness {
            $0.faults.goawayAfterRequests = 1
            $0.lingerMilliseconds = 600_000
        }
        let client = try RawHTTP2Client(port: harness.server.port, caPEM: harness.setup.caCertificatePEM)
        let headers = requestHeaders(harness, token: try harness.jwt())
        try client.send(
            RawHTTP2Client.preface
                + RawHTTP2Client.frame(
                    RawHTTP2Client.headers, flags: RawHTTP2Client.endHeaders, stream: 1, RawHTTP2Client.hpack(headers))
                + RawHTTP2Client.frame(
                    RawHTTP2Client.data, flags: RawHTTP2Client.endStream, stream: 1, Array(MockHarness.payload.utf8)))
        // Everything up to the end of the server's stream: the answer, the GOAWAY, close_notify.
        let frames = client.frames { _ in false }
        #expect(frames.contains { $0.type == RawHTTP2Client.headers && $0.streamID == 1 })
        #expect(frames.contains { $0.type == RawHTTP2Client.goaway })
        // The server's side is shut, but the connection is still open and takes what a client
        // sent before it saw the GOAWAY, without a reset.
        #expect(harness.server.statistics.connectionsOpen == 1)
        // The server reads what comes and drops it: nothing is left unread for the kernel to
        // answer with a reset, and the connection takes more.
        let drainedBefore = harness.server.statistics.bytesDrainedWhileLingering
        #expect(client.sendRaw(Array(repeating: 0x17, count: 4096)) == 4096)
        #expect(await eventually { harness.server.statistics.bytesDrainedWhileLingering >= drainedBefore + 4096 })
        #expect(client.sendRaw(Array(repeating: 0x17, count: 4096)) == 4096, "no reset came back")
        #expect(await eventually { harness.server.statistics.bytesDrainedWhileLingering >= drainedBefore + 8192 })
        #expect(harness.server.statistics.connectionsOpen == 1)
        // The client closes; so does the server.
        client.shutdownWriting()
        #expect(await eventually { harness.server.statistics.connectionsOpen == 0 })
        #expect(harness.server.apnsStatistics.requests == 1)
    }

    @Test("a lingering connection whose client never closes is closed after lingerMilliseconds")
    func aLingeringConnectionIsClosedAfterItsLinger() async throws {
        let harness = try MockHarness {
            $0.faults.goawayAfterRequests = 1
            $0.lingerMilliseconds = 50
        }
        let client = try RawHTTP2Client(port: harness.server.port, caPEM: harness.setup.caCertificatePEM)
        let headers = requestHeaders(harness, token: try harness.jwt())
        try client.send(
            RawHTTP2Client.preface
                + RawHTTP2Client.frame(
                    RawHTTP2Client.headers, flags: RawHTTP2Client.endHeaders, stream: 1, RawHTTP2Client.hpack(headers))
                + RawHTTP2Client.frame(
                    RawHTTP2Client.data, flags: RawHTTP2Client.endStream, stream: 1, Array(MockHarness.payload.utf8)))
        let frames = client.frames { _ in false }
        #expect(frames.contains { $0.type == RawHTTP2Client.goaway })
        // The client keeps its side open; the server closes on its own.
        #expect(await eventually { harness.server.statistics.connectionsOpen == 0 })
    }
}
