import Foundation
import Synchronization
import Testing
import TuisongHTTPClient
import TuisongLookAlikes
import TuisongPluginTestKit

@Suite("HTTPClient over HTTP/2 (the APNs mock on loopback)")
struct HTTP2Tests {
    /// The mock with its stream limit raised from the start (APNs allows one stream before a
    /// valid provider token; these requests carry none), and a client trusting its CA.
    private func withMock<T>(
        maxConnectionsPerHost: Int = 4, maxConcurrentStreams: Int = 1000, maxInFlight: Int = 2000,
        _ body: (LookAlikeServer, HTTPClient) async throws -> T
    ) async throws -> T {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.app")
        var configuration = setup.configuration()
        configuration.streamsBeforeFirstValidToken = 1000
        let server = try LookAlikeServer(
            configuration: configuration, certificate: setup.serverCertificate, key: setup.serverKey)
        try server.start()
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("tuisong-ca-\(UUID()).pem").path
        try setup.writeCAFile(to: caFile)
        let client = try HTTPClient(
            configuration: .init(
                caFile: caFile, maxConnectionsPerHost: maxConnectionsPerHost,
                maxConcurrentStreams: maxConcurrentStreams, maxInFlight: maxInFlight),
            label: "test-h2")
        defer {
            client.shutdown()
            server.shutdown()
            try? FileManager.default.removeItem(atPath: caFile)
        }
        return try await body(server, client)
    }

    private func deviceURL(_ server: LookAlikeServer, _ index: Int) -> String {
        let token = String(repeating: "0", count: 56) + String(format: "%08x", index)
        return "https://127.0.0.1:\(server.port)/3/device/\(token)"
    }

    private func request(_ server: LookAlikeServer, _ index: Int) -> HTTPClientRequest {
        HTTPClientRequest(
            url: deviceURL(server, index),
            headers: [("Content-Type", "application/json"), ("apns-topic", "com.example.app")],
            body: Array(#"{"aps":{"alert":"hello \#(index)"}}"#.utf8))
    }

    @Test("one request: HTTP/2 negotiated over TLS, the mock's 403 and its headers read")
    func single() async throws {
        try await withMock { server, client in
            let response = try await client.execute(request(server, 1)).get()
            #expect(response.httpVersion == 2)
            #expect(response.status == 403)
            #expect(String(decoding: response.body, as: UTF8.self).contains("MissingProviderToken"))
            #expect(response.header("apns-id") != nil)
            #expect(server.apnsStatistics.responsesByReason["MissingProviderToken"] == 1)
        }
    }

    /// Sends 500 requests at once and checks every one was answered over HTTP/2; returns the
    /// connections the mock accepted.
    private func fiveHundredAtOnce(_ server: LookAlikeServer, _ client: HTTPClient) async throws -> Int {
        let box = ResultBox()
        for index in 0..<500 {
            client.execute(request(server, index)) { box.append($0) }
        }
        try await waitUntil("500 answers") { box.count == 500 }
        let results = box.all
        #expect(results.allSatisfy { (try? $0.get().status) == 403 })
        #expect(results.allSatisfy { (try? $0.get().httpVersion) == 2 })
        #expect(server.apnsStatistics.requests == 500)
        let statistics = client.statistics
        #expect(statistics.requestsCompleted == 500)
        #expect(statistics.inFlight == 0)
        #expect(statistics.connectionsOpened == server.statistics.connectionsAccepted)
        return server.statistics.connectionsAccepted
    }

    @Test("500 concurrent requests are multiplexed on one connection")
    func multiplexed() async throws {
        try await withMock(maxConnectionsPerHost: 1) { server, client in
            let connections = try await fiveHundredAtOnce(server, client)
            #expect(connections == 1)
        }
    }

    // Until the server's SETTINGS arrive curl 7.88 counts 100 streams per connection, so a burst
    // that comes before them may open further connections, up to maxConnectionsPerHost.
    @Test("500 concurrent requests with the defaults stay within maxConnectionsPerHost (4)")
    func multiplexedWithDefaults() async throws {
        try await withMock { server, client in
            let connections = try await fiveHundredAtOnce(server, client)
            #expect(connections >= 1 && connections <= 4)
        }
    }

    @Test("a stream limit below the load opens more connections, never more than maxConnectionsPerHost")
    func streamLimit() async throws {
        try await withMock(maxConnectionsPerHost: 2, maxConcurrentStreams: 10) { server, client in
            let statuses = await withTaskGroup(of: Int.self) { group in
                for index in 0..<200 {
                    group.addTask { (try? await client.execute(request(server, index)).get().status) ?? -1 }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 403, count: 200))
            #expect(server.statistics.connectionsAccepted <= 2)
            #expect(client.statistics.connectionsOpened <= 2)
        }
    }

    @Test("requests beyond maxInFlight wait in the FIFO and are all answered")
    func queued() async throws {
        try await withMock(maxInFlight: 10) { server, client in
            let box = ResultBox()
            let peakInFlight = Mutex(0)
            for index in 0..<300 {
                client.execute(request(server, index)) { result in
                    // Counters change before a completion runs: this one is already out.
                    let inFlight = client.statistics.inFlight
                    peakInFlight.withLock { $0 = max($0, inFlight) }
                    box.append(result)
                }
            }
            try await waitUntil("300 answers") { box.count == 300 }
            #expect(box.all.allSatisfy { (try? $0.get().status) == 403 })
            #expect(peakInFlight.withLock { $0 } <= 9)
            #expect(client.statistics.requestsStarted == 300)
        }
    }

    @Test("a server certificate from an untrusted CA fails TLS")
    func untrusted() async throws {
        try await withMock { server, _ in
            let client = try HTTPClient(label: "test-untrusted")
            defer { client.shutdown() }
            let result = await client.execute(request(server, 1))
            #expect(result.failureCode == "TLS")
        }
    }
}
