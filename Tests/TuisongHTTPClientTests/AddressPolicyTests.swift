import Foundation
import Synchronization
import Testing
import TuisongHTTP
import TuisongHTTPClient

/// `connectAddressPolicy` is asked before every connection the client opens, with the address
/// curl resolved: a refused one never gets a socket, and the request fails "AddressRefused".
@Suite struct AddressPolicyTests {
    final class Seen: Sendable {
        let requests = Mutex(0)
        let asked = Mutex<[ConnectAddress]>([])
    }

    @Test func aRefusedAddressIsNeverConnectedTo() async throws {
        let seen = Seen()
        let router = Router()
        router.add(.POST, "/hook") { _ in
            seen.requests.withLock { $0 += 1 }
            return .empty(status: 204)
        }
        try await withHTTPServer(router: router) { server in
            let refusing = try HTTPClient(
                configuration: .init(connectAddressPolicy: { address in
                    seen.asked.withLock { $0.append(address) }
                    let loopbackV6 = address.bytes == [UInt8](repeating: 0, count: 15) + [1]
                    return !(address.isIPv4 && address.bytes[0] == 127) && !loopbackV6
                }), label: "test-policy")
            defer { refusing.shutdown() }
            let url = "http://localhost:\(server.port)/hook"
            let refused = await refusing.execute(HTTPClientRequest(url: url, body: [1]))
            guard case .failure(let error) = refused else {
                Issue.record("a loopback address was connected to: \(refused)")
                return
            }
            #expect(error.code == "AddressRefused", "\(error)")
            #expect(seen.requests.withLock { $0 } == 0)
            #expect(
                seen.asked.withLock { $0 }.contains {
                    $0.isIPv4 && $0.bytes == [127, 0, 0, 1] && $0.port == server.port
                })
            #expect(refusing.statistics.connectionsOpened == 0)

            let allowing = try HTTPClient(
                configuration: .init(connectAddressPolicy: { _ in true }), label: "test-policy2")
            defer { allowing.shutdown() }
            let answered = try await allowing.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(server.port)/hook", body: [1])
            ).get()
            #expect(answered.status == 204 && seen.requests.withLock { $0 } == 1)
        }
    }
}
