import Foundation
import Testing
import TuisongPluginTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// The gateway as configured: slow clients on one address cannot starve `/healthz`, and the
/// listen keys reach the HTTP server.
@Suite(.serialized) struct SlowClientGatewayTests {
    /// A connection from `source` that sends half a request line and headers, then nothing.
    func halfRequest(port: Int, source: String) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        _ = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        _ = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let start = Array("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Slow: ".utf8)
        _ = start.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return descriptor
    }

    /// Whether the server has closed `descriptor` (end of stream or reset); does not block.
    func closedByServer(_ descriptor: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    @Test func healthzIsAnsweredWhileOneAddressHoldsEveryConnectionItMay() async throws {
        let gateway = try await TestGateway.start(environment: [
            "TUISONG_LISTEN_MAX_CONNECTIONS": "32",
            "TUISONG_LISTEN_MAX_CONNECTIONS_PER_ADDRESS": "1000",
            "TUISONG_LISTEN_RECEIVE_TIMEOUT_SECONDS": "600",
            "TUISONG_LISTEN_CONNECTION_TIMEOUT_SECONDS": "600",
        ])
        let port = gateway.runtime.port
        // More than max_connections from 127.0.0.2; the server keeps two (32/16) for others.
        let held = (0..<40).map { _ in halfRequest(port: port, source: "127.0.0.2") }
        // The server has taken them all in once it turned away the ten beyond 30.
        #expect(await eventually { held.filter(closedByServer).count == 10 }, "127.0.0.2 was not held to 30")
        // URLSession connects from 127.0.0.1. Generous bound: what counts is an answer at all.
        let health = try await http("GET", "\(gateway.baseURL)/healthz", headers: [:])
        #expect(health.status == 200)
        for descriptor in held { close(descriptor) }
        await gateway.stop()
    }
}
