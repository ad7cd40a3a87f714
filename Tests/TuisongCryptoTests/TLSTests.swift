import Foundation
import Testing

@testable import TuisongCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// A connected TCP pair on 127.0.0.1 (real loopback sockets, port chosen by the kernel),
/// both ends non-blocking so one thread can drive both sides of a handshake.
final class LoopbackPair {
    let client: Int32
    let server: Int32

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                guard bind(listener, raw, length) == 0, listen(listener, 4) == 0,
                    getsockname(listener, raw, &length) == 0
                else {
                    throw POSIXError(.EADDRINUSE)
                }
            }
        }
        let clientFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(clientFD, $0, length) == 0 }
        }
        let serverFD = connected ? accept(listener, nil, nil) : -1
        guard serverFD >= 0 else {
            close(clientFD)
            throw POSIXError(.ECONNREFUSED)
        }
        for fd in [clientFD, serverFD] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        client = clientFD
        server = serverFD
    }

    deinit {
        close(client)
        close(server)
    }
}

enum HandshakeOutcome {
    case bothDone
    case clientFailed(CryptoError)
    case serverFailed(CryptoError)
}

/// Alternates handshake steps until both sides finish or one fails; bounded in time.
func pumpHandshake(client: TLSConnection, server: TLSConnection) -> HandshakeOutcome {
    var clientDone = false
    var serverDone = false
    let deadline = Date().addingTimeInterval(10)
    while !(clientDone && serverDone), Date() < deadline {
        if !clientDone {
            switch client.handshake() {
            case .done: clientDone = true
            case .failed(let error): return .clientFailed(error)
            case .closed: return .clientFailed(CryptoError(.openssl, "closed"))
            case .wantRead, .wantWrite: break
            }
        }
        if !serverDone {
            switch server.handshake() {
            case .done: serverDone = true
            case .failed(let error): return .serverFailed(error)
            case .closed: return .serverFailed(CryptoError(.openssl, "closed"))
            case .wantRead, .wantWrite: break
            }
        }
        usleep(200)
    }
    return clientDone && serverDone ? .bothDone : .clientFailed(CryptoError(.openssl, "handshake timed out"))
}

/// Reads until `count` bytes arrived (non-blocking socket, bounded wait).
func readExactly(_ connection: TLSConnection, count: Int) -> [UInt8] {
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    let deadline = Date().addingTimeInterval(5)
    while received.count < count, Date() < deadline {
        let result = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
        if case .done(let n) = result { received += buffer.prefix(n) } else { usleep(200) }
    }
    return received
}

@Suite struct TLSTests {
    @Test func h2HandshakeWithHostVerificationAndData() throws {
        let pki = try TestPKI(altNames: ["localhost", "127.0.0.1"])
        let serverContext = try TLSContext.server(certificate: pki.leaf, key: pki.leafKey, alpn: ["h2", "http/1.1"])
        let clientContext = try TLSContext.client(
            alpn: ["http/1.1", "h2"], trustSystemCAs: false, caCertificates: [pki.ca])
        for name in ["localhost", "127.0.0.1"] {
            let pair = try LoopbackPair()
            let client = try TLSConnection(context: clientContext, fileDescriptor: pair.client, serverName: name)
            let server = try TLSConnection(context: serverContext, fileDescriptor: pair.server)
            guard case .bothDone = pumpHandshake(client: client, server: server) else {
                Issue.record("handshake failed for \(name)")
                continue
            }
            // The server's preference wins although the client listed http/1.1 first.
            #expect(client.negotiatedALPN == "h2")
            #expect(server.negotiatedALPN == "h2")
            #expect(client.peerCertificate == pki.leaf)
            #expect(client.verificationFailure == nil)
            #expect(server.peerCertificate == nil)
            #expect(["TLSv1.2", "TLSv1.3"].contains(client.protocolVersion))

            let request = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
            guard case .done(let written) = request.withUnsafeBytes({ client.write($0) }) else {
                Issue.record("write failed")
                continue
            }
            #expect(written == request.count)
            #expect(readExactly(server, count: request.count) == request)
            client.shutdown()
            var byte = [UInt8](repeating: 0, count: 1)
            var sawClose = false
            let deadline = Date().addingTimeInterval(5)
            while !sawClose, Date() < deadline {
                if case .closed = byte.withUnsafeMutableBytes({ server.read(into: $0) }) {
                    sawClose = true
                } else {
                    usleep(200)
                }
            }
            #expect(sawClose)
        }
    }

    @Test func rejectsWrongHostAndUntrustedServer() throws {
        let pki = try TestPKI(altNames: ["localhost"])
        let serverContext = try TLSContext.server(certificate: pki.leaf, key: pki.leafKey, alpn: ["h2"])

        let trusting = try TLSContext.client(alpn: ["h2"], trustSystemCAs: false, caCertificates: [pki.ca])
        let pair = try LoopbackPair()
        let client = try TLSConnection(context: trusting, fileDescriptor: pair.client, serverName: "api.push.apple.com")
        let server = try TLSConnection(context: serverContext, fileDescriptor: pair.server)
        guard case .clientFailed(let error) = pumpHandshake(client: client, server: server) else {
            Issue.record("a certificate for localhost was accepted for api.push.apple.com")
            return
        }
        #expect(error.code == .verificationFailed)
        #expect(error.message.contains("hostname mismatch"))

        let systemOnly = try TLSContext.client(alpn: ["h2"])
        let pair2 = try LoopbackPair()
        let client2 = try TLSConnection(context: systemOnly, fileDescriptor: pair2.client, serverName: "localhost")
        let server2 = try TLSConnection(context: serverContext, fileDescriptor: pair2.server)
        guard case .clientFailed(let error2) = pumpHandshake(client: client2, server: server2) else {
            Issue.record("an untrusted CA was accepted")
            return
        }
        #expect(error2.code == .verificationFailed)
    }

    @Test func clientCertificateAuthentication() throws {
        let serverPKI = try TestPKI(altNames: ["127.0.0.1"])
        let pushPKI = try TestPKI(
            leafCommonName: "Apple Push Services: com.example.app", leafUID: "com.example.app", altNames: [],
            extraExtensions: [(Certificate.applePushDevelopmentOID, [0x05, 0x00])])
        let clientContext = try TLSContext.client(
            alpn: ["h2"], trustSystemCAs: false, caCertificates: [serverPKI.ca], clientCertificate: pushPKI.leaf,
            clientKey: pushPKI.leafKey, clientChain: [pushPKI.ca])

        // Verified against the push CA: the server sees the push certificate and its topics.
        let verifying = try TLSContext.server(
            certificate: serverPKI.leaf, key: serverPKI.leafKey, alpn: ["h2"], clientCertificateCAs: [pushPKI.ca])
        let pair = try LoopbackPair()
        let client = try TLSConnection(context: clientContext, fileDescriptor: pair.client, serverName: "127.0.0.1")
        let server = try TLSConnection(context: verifying, fileDescriptor: pair.server)
        guard case .bothDone = pumpHandshake(client: client, server: server) else {
            Issue.record("client certificate handshake failed")
            return
        }
        #expect(server.peerCertificate == pushPKI.leaf)
        #expect(server.peerCertificate?.applePushTopics == ["com.example.app"])
        #expect(server.peerCertificate?.applePushEnvironments == ["sandbox"])
        #expect(server.verificationFailure == nil)

        // A client certificate from another CA fails the handshake on a verifying server...
        let stranger = try TestPKI(altNames: [])
        let strangerContext = try TLSContext.client(
            alpn: ["h2"], trustSystemCAs: false, caCertificates: [serverPKI.ca], clientCertificate: stranger.leaf,
            clientKey: stranger.leafKey)
        let pair2 = try LoopbackPair()
        let client2 = try TLSConnection(context: strangerContext, fileDescriptor: pair2.client, serverName: "127.0.0.1")
        let server2 = try TLSConnection(context: verifying, fileDescriptor: pair2.server)
        if case .bothDone = pumpHandshake(client: client2, server: server2) {
            // With TLS 1.3 the client finishes before the server judges its certificate; the
            // server side must still have refused.
            Issue.record("server accepted a certificate from an unknown CA")
        }

        // ...but an empty CA list takes any certificate unverified, for the caller to judge.
        let lenient = try TLSContext.server(
            certificate: serverPKI.leaf, key: serverPKI.leafKey, alpn: ["h2"], clientCertificateCAs: [])
        let pair3 = try LoopbackPair()
        let client3 = try TLSConnection(context: strangerContext, fileDescriptor: pair3.client, serverName: "127.0.0.1")
        let server3 = try TLSConnection(context: lenient, fileDescriptor: pair3.server)
        guard case .bothDone = pumpHandshake(client: client3, server: server3) else {
            Issue.record("lenient server refused a client certificate")
            return
        }
        #expect(server3.peerCertificate == stranger.leaf)
        #expect(server3.verificationFailure != nil)
    }

    @Test func noCommonALPNAndConfigurationErrors() throws {
        let pki = try TestPKI(altNames: ["localhost"])
        let serverContext = try TLSContext.server(certificate: pki.leaf, key: pki.leafKey, alpn: ["h2"])
        let clientContext = try TLSContext.client(alpn: ["http/1.1"], trustSystemCAs: false, caCertificates: [pki.ca])
        let pair = try LoopbackPair()
        let client = try TLSConnection(context: clientContext, fileDescriptor: pair.client, serverName: "localhost")
        let server = try TLSConnection(context: serverContext, fileDescriptor: pair.server)
        guard case .bothDone = pumpHandshake(client: client, server: server) else {
            Issue.record("handshake failed")
            return
        }
        #expect(client.negotiatedALPN == nil)
        #expect(server.negotiatedALPN == nil)

        expectCryptoError(.keyMismatch) {
            _ = try TLSContext.server(certificate: pki.leaf, key: pki.caKey, alpn: ["h2"])
        }
        expectCryptoError(.keyMismatch) {
            _ = try TLSContext.client(alpn: ["h2"], clientCertificate: pki.leaf, clientKey: pki.caKey)
        }
        expectCryptoError(.wrongKind) { _ = try TLSContext.client(alpn: ["h2"], clientCertificate: pki.leaf) }
        expectCryptoError(.corruptInput) { _ = try TLSContext.client(alpn: ["h2"], caFile: "/nonexistent/ca.pem") }
        expectCryptoError(.corruptInput) { _ = try TLSContext.client(alpn: [""]) }

        let dir = try TemporaryDirectory()
        try dir.write("ca.pem", pki.ca.pem())
        _ = try TLSContext.client(alpn: ["h2"], trustSystemCAs: false, caFile: dir.path("ca.pem"))
    }
}
