import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongCrypto
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongAPNs

/// A running APNs mock (fresh CA, keys and port) and pools pointed at it.
final class PoolMockFixture {
    static let bundleID = "com.example.pool"

    let setup: LookAlikeLocalSetup
    private(set) var server: LookAlikeServer
    let directory: ClientTemporaryDirectory
    let caFile: String
    private var pools: [APNsConnectionPool] = []

    init(configure: (inout LookAlikeConfiguration) -> Void = { _ in }) throws {
        setup = try LookAlikeLocalSetup.generate(bundleID: Self.bundleID)
        var configuration = setup.configuration()
        configure(&configuration)
        server = try LookAlikeServer(
            configuration: configuration, certificate: setup.serverCertificate, key: setup.serverKey
        )
        try server.start()
        directory = try ClientTemporaryDirectory()
        caFile = try directory.write("ca.pem", setup.caCertificatePEM)
    }

    deinit { server.shutdown() }

    var endpoint: APNsEndpoint { APNsEndpoint(host: "127.0.0.1", port: server.port) }

    func tokenCredential() throws -> APNsCredentialMaterial {
        try .token(p8PEM: setup.tokenKeyPEM, keyID: setup.keyID, teamID: setup.teamID)
    }

    func certificateCredential() throws -> APNsCredentialMaterial {
        try .certificate(pem: setup.clientCertificatePEM + "\n" + setup.clientKeyPEM)
    }

    func pool(
        credential: APNsCredentialMaterial? = nil, clock: any TuisongCore.Clock = SystemClock(),
        configure: (inout APNsConnectionPool.Configuration) -> Void = { _ in }
    ) throws -> APNsConnectionPool {
        var configuration = APNsConnectionPool.Configuration(endpoint: endpoint)
        configuration.caFile = caFile
        configuration.requestTimeout = .seconds(20)
        configure(&configuration)
        let pool = try APNsConnectionPool(
            configuration: configuration, credential: try credential ?? tokenCredential(),
            clock: clock, logger: clientTestLogger)
        pools.append(pool)
        return pool
    }

    /// Stops the server, waits until `down` holds (the client noticed), and starts a new one on
    /// the same port with the same keys.
    func restartServer(once down: () -> Bool) async throws {
        let port = server.port
        server.shutdown()
        try await waitUntil("the client noticed the server stop", down)
        server = try LookAlikeServer(
            configuration: setup.configuration(port: port), certificate: setup.serverCertificate,
            key: setup.serverKey)
        try server.start()
    }

    /// Stops the server (an outage); `startServer(port:)` brings it back.
    func stopServer() -> Int {
        let port = server.port
        server.shutdown()
        return port
    }

    func startServer(port: Int) throws {
        server = try LookAlikeServer(
            configuration: setup.configuration(port: port), certificate: setup.serverCertificate,
            key: setup.serverKey)
        try server.start()
    }

    func shutdownPools() async {
        for pool in pools { await pool.shutdown() }
    }

    func request(deviceToken: String = String(repeating: "ab", count: 32)) -> APNsRequest {
        Self.request(deviceToken: deviceToken)
    }

    static func request(deviceToken: String = String(repeating: "ab", count: 32)) -> APNsRequest {
        clientTestRequest(deviceToken: deviceToken, topic: bundleID)
    }
}

/// `count` sends at once; every result, in order.
func sendConcurrently(
    _ pool: APNsConnectionPool, count: Int, request: @escaping @Sendable (Int) -> APNsRequest
) async -> [Result<APNsResponse, APNsTransportError>] {
    await withTaskGroup(of: (Int, Result<APNsResponse, APNsTransportError>).self) { group in
        for index in 0..<count {
            group.addTask {
                do throws(APNsTransportError) {
                    return (index, .success(try await pool.send(request(index))))
                } catch {
                    return (index, .failure(error))
                }
            }
        }
        var results = [Result<APNsResponse, APNsTransportError>?](repeating: nil, count: count)
        for await (index, result) in group { results[index] = result }
        return results.map { $0! }
    }
}

/// Distinct 64-hex device tokens, so the mock's records can be matched to requests.
func poolDeviceToken(_ index: Int) -> String {
    let hex = String(index, radix: 16)
    return String(repeating: "c", count: 64 - hex.count) + hex
}

@Suite(.timeLimit(.minutes(2))) struct PoolMockTests {
    @Test func tokenAuthenticatedPushIsAccepted() async throws {
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool()
        var request = fixture.request()
        request.apnsID = "0f3c1b4e-8a6d-4c1e-9f3a-2b7d5e6a8c90"
        request.priority = 5
        request.expiration = 0
        request.collapseID = "scores"
        let response = try await pool.send(request)
        #expect(response.status == 200)
        #expect(response.apnsID == "0f3c1b4e-8a6d-4c1e-9f3a-2b7d5e6a8c90")
        #expect(response.reason == nil)

        let received = try #require(fixture.server.receivedNotifications().first)
        #expect(received.deviceToken == request.deviceToken)
        #expect(received.topic == PoolMockFixture.bundleID)
        #expect(received.pushType == "alert")
        #expect(received.priority == "5")
        #expect(received.expiration == "0")
        #expect(received.collapseID == "scores")
        #expect(received.payload == request.payload)
        #expect(received.teamID == fixture.setup.teamID)
        #expect(received.keyID == fixture.setup.keyID)
        #expect(fixture.server.apnsStatistics.providerTokensAccepted >= 1)
        // The second connection opens beside the first send; on a loaded machine it may still be
        // on its way when the answer arrives.
        #expect(await eventually { pool.statistics.connectionsOpened >= 2 })
        #expect(pool.statistics.connectionsOpened == 2)
        await fixture.shutdownPools()
    }

    @Test func connectOpensTheConnectionsBeforeAnyRequest() async throws {
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool()
        #expect(pool.statistics.connectionsOpened == 0, "a pool opens nothing until asked")
        pool.connect()
        #expect(await eventually { pool.statistics.connectionsOpened >= 2 })
        #expect(pool.statistics.connectionsOpened == 2)
        #expect(fixture.server.apnsStatistics.requests == 0)
        // Asking again opens nothing more; the open connections carry the first push.
        pool.connect()
        let response = try await pool.send(fixture.request())
        #expect(response.status == 200)
        #expect(pool.statistics.connectionsOpened == 2)
        await fixture.shutdownPools()
    }

    @Test func tokenPoolsOfOneTrustSetShareOneTLSContext() throws {
        let fixture = try PoolMockFixture()
        let first = try fixture.tokenCredential().makeTLSContext(caFile: fixture.caFile, extraCACertificates: [])
        let second = try fixture.tokenCredential().makeTLSContext(caFile: fixture.caFile, extraCACertificates: [])
        #expect(first === second)
        let certificate = try fixture.certificateCredential().makeTLSContext(
            caFile: fixture.caFile, extraCACertificates: [])
        #expect(certificate !== first, "a client certificate needs a context of its own")
        let otherTrust = try fixture.tokenCredential().makeTLSContext(caFile: nil, extraCACertificates: [])
        #expect(otherTrust !== first)
    }

    @Test func certificateAuthenticatedPushIsAccepted() async throws {
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool(credential: try fixture.certificateCredential())
        let responses = await sendConcurrently(pool, count: 50) { _ in PoolMockFixture.request() }
        #expect(responses.allSatisfy { (try? $0.get().status) == 200 })
        #expect(fixture.server.apnsStatistics.certificateAuthenticatedRequests == 50)
        #expect(fixture.server.receivedNotifications().allSatisfy { $0.teamID == nil })
        await fixture.shutdownPools()
    }

    @Test func errorResponsesCarryReasonAndTimestamp() async throws {
        let fixture = try PoolMockFixture { $0.faults = .magicTokenPrefixes }
        let pool = try fixture.pool()
        let gone = try await pool.send(
            fixture.request(deviceToken: "410" + String(repeating: "0", count: 61)))
        #expect(gone.status == 410)
        #expect(gone.reason == "Unregistered")
        let timestamp = try #require(gone.timestamp)
        #expect(abs(timestamp.timeIntervalSinceNow) < 60)
        let bad = try await pool.send(
            fixture.request(deviceToken: "400bad" + String(repeating: "0", count: 58)))
        #expect(bad.status == 400)
        #expect(bad.reason == "BadDeviceToken")
        #expect(bad.timestamp == nil)
        await fixture.shutdownPools()
    }

    @Test func streamsNeverExceedTheAdvertisedLimitFromOneToN() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.streamsBeforeFirstValidToken = 1
            configuration.maxConcurrentStreams = 16
            configuration.faults.latencyMilliseconds = 2
        }
        let pool = try fixture.pool()
        let responses = await sendConcurrently(pool, count: 600) { index in
            PoolMockFixture.request(deviceToken: poolDeviceToken(index))
        }
        #expect(responses.allSatisfy { (try? $0.get().status) == 200 })
        let server = fixture.server.statistics
        let apns = fixture.server.apnsStatistics
        // Exceeding the limit would have been refused (RST_STREAM REFUSED_STREAM) by the mock.
        #expect(server.refusedStreams == 0)
        #expect(apns.requests == 600)
        #expect(server.streamLimitRaises == 2)
        let statistics = pool.statistics
        #expect(statistics.maxConcurrentStreamsSeen == 16)
        #expect(statistics.peakStreamsPerConnection == 16)
        #expect(statistics.retries == 0)
        await fixture.shutdownPools()
    }

    @Test func oneStreamUntilTheFirstAcceptedTokenEvenIfTheServerAllowsMore() async throws {
        // The server advertises 100 from the start; token auth still waits for one answer, held
        // until the test has seen the others wait (not a latency the test must beat).
        let fixture = try PoolMockFixture { configuration in
            configuration.streamsBeforeFirstValidToken = 100
            configuration.maxConcurrentStreams = 100
            configuration.faults.holdAnswers = true
        }
        let pool = try fixture.pool { $0.connections = 1 }
        async let first = sendConcurrently(pool, count: 1) { _ in PoolMockFixture.request() }
        #expect(await eventually { pool.statistics.inFlight == 1 })
        async let rest = sendConcurrently(pool, count: 19) { index in
            PoolMockFixture.request(deviceToken: poolDeviceToken(index))
        }
        // While the first answer is pending, the other 19 wait although 100 would be allowed.
        #expect(
            await eventually {
                let statistics = pool.statistics
                return statistics.queued == 19 && statistics.inFlight == 1
            })
        fixture.server.setFaults(.init())
        let responses = await first + rest
        #expect(responses.allSatisfy { (try? $0.get().status) == 200 })
        // Once answered, the waiting requests went out together.
        #expect(pool.statistics.peakStreamsPerConnection == 19)
        await fixture.shutdownPools()
    }

    @Test func aRejectedTokenKeepsTheConnectionAtOneStream() async throws {
        let fixture = try PoolMockFixture()
        let stranger = try PrivateKey.generateP256()
        let pool = try fixture.pool(
            credential: .token(key: stranger, keyID: "UNKNOWN001", teamID: "UNKNOWN001")
        ) { $0.connections = 1 }
        let responses = await sendConcurrently(pool, count: 30) { index in
            PoolMockFixture.request(deviceToken: poolDeviceToken(index))
        }
        #expect(responses.allSatisfy { (try? $0.get().status) == 403 })
        #expect(responses.allSatisfy { (try? $0.get().reason) == "InvalidProviderToken" })
        #expect(pool.statistics.peakStreamsPerConnection == 1)
        #expect(fixture.server.statistics.refusedStreams == 0)
        #expect(fixture.server.statistics.streamLimitRaises == 0)
        await fixture.shutdownPools()
    }

    @Test func largePayloadsFlowThroughTheFlowControlWindows() async throws {
        // 4,500 × ~4 KB is beyond the mock's 16 MB connection window: the bodies only get
        // through as the server's WINDOW_UPDATEs arrive.
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool { $0.connections = 1 }
        let filler = String(repeating: "x", count: 3900)
        let payload = Array(#"{"aps":{"alert":"\#(filler)"}}"#.utf8)
        let responses = await sendConcurrently(pool, count: 4500) { index in
            var request = PoolMockFixture.request(deviceToken: poolDeviceToken(index))
            request.payload = payload
            return request
        }
        #expect(responses.allSatisfy { (try? $0.get().status) == 200 })
        #expect(fixture.server.receivedNotifications().allSatisfy { $0.payload == payload })
        #expect(fixture.server.apnsStatistics.requests == 4500)
        await fixture.shutdownPools()
    }

    @Test func goAwayMidBurstLosesNothing() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.faults.goawayAfterRequests = 300
            configuration.maxConcurrentStreams = 200
        }
        let pool = try fixture.pool()
        let responses = await sendConcurrently(pool, count: 1000) { index in
            PoolMockFixture.request(deviceToken: poolDeviceToken(index))
        }
        let failures = responses.compactMap { result -> APNsTransportError? in
            if case .failure(let error) = result { return error } else { return nil }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(responses.allSatisfy { (try? $0.get().status) == 200 })
        let server = fixture.server.statistics
        let apns = fixture.server.apnsStatistics
        #expect(apns.requests >= 1000)
        // Two connections answer 300 each, then two replacements take the other 400.
        #expect(server.goawaysSent >= 2)
        // Every device got its notification.
        let delivered = Set(fixture.server.receivedNotifications().map(\.deviceToken))
        #expect(delivered == Set((0..<1000).map(poolDeviceToken)))
        let statistics = pool.statistics
        #expect(statistics.goAwaysReceived >= 2)
        #expect(statistics.retries > 0)
        #expect(statistics.connectionsOpened >= 4)
        #expect(statistics.connectionsLost == 0)
        await fixture.shutdownPools()
    }

    @Test func droppedConnectionsMidBurstAreRetriedOnNewConnections() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.faults.dropConnectionAfterRequests = 300
            configuration.maxConcurrentStreams = 100
        }
        let pool = try fixture.pool { $0.reconnectBackoffInitial = .milliseconds(20) }
        let responses = await sendConcurrently(pool, count: 1000) { index in
            PoolMockFixture.request(deviceToken: poolDeviceToken(index))
        }
        let failures = responses.compactMap { result -> APNsTransportError? in
            if case .failure(let error) = result { return error } else { return nil }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        let delivered = Set(fixture.server.receivedNotifications().map(\.deviceToken))
        #expect(delivered == Set((0..<1000).map(poolDeviceToken)))
        #expect(fixture.server.statistics.connectionsDropped >= 2)
        let statistics = pool.statistics
        #expect(statistics.connectionsLost >= 2)
        #expect(statistics.retries > 0)
        await fixture.shutdownPools()
    }

    @Test func requestsLostTooOftenFailWithConnectionLost() async throws {
        // Every connection drops after its first request: with 5 requests on one connection,
        // the last ones keep being lost until the retry budget runs out.
        let fixture = try PoolMockFixture { configuration in
            configuration.faults.dropConnectionAfterRequests = 1
            configuration.streamsBeforeFirstValidToken = 10
            configuration.maxConcurrentStreams = 10
        }
        let pool = try fixture.pool(credential: try fixture.certificateCredential()) {
            $0.connections = 1
            $0.maxRetriesOnConnectionLoss = 1
            $0.reconnectBackoffInitial = .milliseconds(10)
        }
        let responses = await sendConcurrently(pool, count: 5) { index in
            PoolMockFixture.request(deviceToken: poolDeviceToken(index))
        }
        let lost = responses.filter { result in
            if case .failure(let error) = result { return error.code == .connectionLost }
            return false
        }
        #expect(!lost.isEmpty)
        #expect(
            responses.allSatisfy { result in
                switch result {
                case .success(let response): response.status == 200
                case .failure(let error): error.code == .connectionLost
                }
            })
        await fixture.shutdownPools()
    }

    @Test func slowResponsesTimeOutAndTheConnectionStaysUsable() async throws {
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool {
            $0.connections = 1
            $0.requestTimeout = .milliseconds(400)
        }
        // Connected first, so a slow handshake on a loaded machine cannot use up the timeout:
        // the stream itself must be what times out.
        #expect(try await pool.send(fixture.request()).status == 200)
        // Held until released: the timeout is what ends the request, however slow the machine.
        fixture.server.setFaults(.init(holdAnswers: true))
        let started = ContinuousClock.now
        do {
            let response = try await pool.send(fixture.request())
            Issue.record("expected a timeout, got \(response)")
        } catch {
            #expect(error.code == .timeout)
            #expect(error.message.contains("stream reset"))
        }
        // Not earlier than the timeout: a lower bound, which a loaded machine cannot break (the
        // pool's deadline is monotonic time and cannot fire early).
        #expect(ContinuousClock.now - started >= .milliseconds(400))
        #expect(pool.statistics.timeouts == 1)
        // The reset freed the stream; the same connection answers once the latency is gone.
        fixture.server.setFaults(.init())
        let response = try await pool.send(fixture.request())
        #expect(response.status == 200)
        #expect(pool.statistics.connectionsOpened == 1)
        #expect(await eventually { pool.statistics.inFlight == 0 })
        await fixture.shutdownPools()
    }

    @Test func cancellingAnInFlightSendResetsItsStream() async throws {
        // Held until released: the send is still in flight when it is cancelled, however slow
        // the machine.
        let fixture = try PoolMockFixture { $0.faults.holdAnswers = true }
        let pool = try fixture.pool { $0.connections = 1 }
        let request = fixture.request()
        let task = Task { try await pool.send(request) }
        #expect(await eventually { pool.statistics.inFlight == 1 })
        task.cancel()
        let result = await task.result
        guard case .failure(let error) = result else {
            Issue.record("expected a cancellation, got \(result)")
            return
        }
        #expect((error as? APNsTransportError)?.code == .cancelled)
        // The reset closes the stream on both sides; the connection carries on.
        #expect(await eventually { pool.statistics.inFlight == 0 })
        fixture.server.setFaults(.init())
        #expect(try await pool.send(fixture.request()).status == 200)
        #expect(pool.statistics.connectionsOpened == 1)
        await fixture.shutdownPools()
    }

    @Test func reconnectsAfterTheServerRestarts() async throws {
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool { $0.reconnectBackoffInitial = .milliseconds(50) }
        #expect(try await pool.send(fixture.request()).status == 200)
        // Both connections ready first: one still in its TLS handshake when the server stops
        // would fail to connect instead of noticing the restart (a loaded machine did that).
        #expect(await eventually { pool.statistics.liveConnections == 2 })
        try await fixture.restartServer { pool.statistics.liveConnections == 0 }
        // Sent while the pool may still be backing off: it waits for a new connection.
        let response = try await pool.send(fixture.request())
        #expect(response.status == 200)
        let statistics = pool.statistics
        // Both connections noticed the restart: each by the GOAWAY the mock sends on shutdown,
        // or, when the close raced it, as a lost connection.
        #expect(statistics.connectionsLost + statistics.goAwaysReceived >= 2)
        #expect(statistics.reconnects >= 2)
        #expect(statistics.connectionsOpened >= 3)
        await fixture.shutdownPools()
    }

    @Test func expiredProviderTokenIsRefreshedAndTheRequestRetriedOnce() async throws {
        let fixture = try PoolMockFixture()
        // The first token is signed two hours in the past; the mock accepts an hour.
        let pool = try fixture.pool(clock: ClientCorrectedClock(skew: -7200)) {
            $0.connections = 1
        }
        let response = try await pool.send(fixture.request())
        #expect(response.status == 200)
        let apns = fixture.server.apnsStatistics
        #expect(apns.responsesByReason["ExpiredProviderToken"] == 1)
        #expect(apns.responsesByStatus[200] == 1)
        #expect(pool.statistics.retries == 1)
        await fixture.shutdownPools()
    }

    @Test func expiredProviderTokenIsRetriedOnlyOnce() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.faults.tokenPrefixes = [
                "dead": .init(status: 403, reason: "ExpiredProviderToken")
            ]
        }
        let pool = try fixture.pool()
        let deviceToken = "dead" + String(repeating: "0", count: 60)
        let response = try await pool.send(fixture.request(deviceToken: deviceToken))
        #expect(response.status == 403)
        #expect(response.reason == "ExpiredProviderToken")
        let attempts = fixture.server.receivedNotifications().filter {
            $0.deviceToken == deviceToken
        }
        #expect(attempts.count == 2)
        await fixture.shutdownPools()
    }

    @Test func aConnectionNeverCarriesTwoTeams() async throws {
        let fixture = try PoolMockFixture()
        let otherKey = try PrivateKey.generateP256()
        fixture.server.trustTokenKey(
            .init(
                keyID: "OTHERKEY01", teamID: "OTHERTEAM1",
                publicKeyPEM: try otherKey.publicKey.pem()))
        let first = try fixture.pool()
        let second = try fixture.pool(
            credential: .token(key: otherKey, keyID: "OTHERKEY01", teamID: "OTHERTEAM1"))
        async let a = sendConcurrently(first, count: 200) { _ in PoolMockFixture.request() }
        async let b = sendConcurrently(second, count: 200) { _ in PoolMockFixture.request() }
        let all = await a + b
        #expect(all.allSatisfy { (try? $0.get().status) == 200 })
        var teamsByConnection: [Int: Set<String>] = [:]
        for record in fixture.server.receivedNotifications() {
            teamsByConnection[record.connectionID, default: []].insert(record.teamID ?? "-")
        }
        #expect(teamsByConnection.count >= 2)
        #expect(teamsByConnection.values.allSatisfy { $0.count == 1 })
        #expect(
            Set(teamsByConnection.values.flatMap { $0 }) == [fixture.setup.teamID, "OTHERTEAM1"])
        await fixture.shutdownPools()
    }

    @Test func idleConnectionsArePingedAndKept() async throws {
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool {
            $0.connections = 1
            $0.pingInterval = .milliseconds(100)
            $0.pingTimeout = .seconds(2)
        }
        #expect(try await pool.send(fixture.request()).status == 200)
        // Waits on the count, not on time: three 100 ms pings take however long a loaded
        // machine needs (the pool's timers run on its own event loop, in real time).
        try await waitUntil("3 pings acknowledged") { pool.statistics.pingsAcknowledged >= 3 }
        #expect(try await pool.send(fixture.request()).status == 200)
        #expect(pool.statistics.connectionsOpened == 1)
        #expect(fixture.server.statistics.connectionsAccepted == 1)
        await fixture.shutdownPools()
    }

    @Test func testerReportsTheNegotiatedConnection() async throws {
        let fixture = try PoolMockFixture()
        let token = await APNsConnectionTester.test(
            endpoint: fixture.endpoint, credential: try fixture.tokenCredential(),
            caFile: fixture.caFile, timeout: .seconds(5))
        #expect(token.ok, "\(token.detail)")
        #expect(token.detail.contains("ALPN h2"))
        #expect(token.detail.contains("max concurrent streams 1"))
        #expect(token.detail.contains("only checks it on the first push"))

        let certificate = await APNsConnectionTester.test(
            endpoint: fixture.endpoint, credential: try fixture.certificateCredential(),
            caFile: fixture.caFile, timeout: .seconds(5))
        #expect(certificate.ok, "\(certificate.detail)")
        #expect(certificate.detail.contains("client certificate"))

        let untrusted = await APNsConnectionTester.test(
            endpoint: fixture.endpoint, credential: try fixture.tokenCredential(), caFile: nil,
            timeout: .seconds(5))
        #expect(!untrusted.ok)
        #expect(untrusted.detail.contains("tlsFailed"))
    }
}
