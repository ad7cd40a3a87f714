import Foundation
import Testing
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongAPNs

/// A server that changes its mind mid-connection: it lowers its stream limit under load, or
/// stops answering PINGs while keeping the TCP connection open.
@Suite(.timeLimit(.minutes(2))) struct PoolPeerBehaviourTests {
    @Test func aStreamLimitLoweredMidConnectionIsHonouredOnceAcknowledged() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.streamsBeforeFirstValidToken = 1
            configuration.maxConcurrentStreams = 50
            configuration.faults.latencyMilliseconds = 5
            configuration.faults.lowerStreamLimitAfterRequests = 20
            configuration.faults.loweredStreamLimit = 3
        }
        let pool = try fixture.pool { $0.connections = 1 }
        let responses = await sendConcurrently(pool, count: 300) { index in
            PoolMockFixture.request(deviceToken: poolDeviceToken(index))
        }
        #expect(responses.allSatisfy { (try? $0.get().status) == 200 })
        let server = fixture.server.statistics
        let apns = fixture.server.apnsStatistics
        #expect(apns.requests == 300)
        #expect(server.streamLimitLowerings == 1)
        // Streams opened after the client acknowledged the new limit never exceed it, and
        // nothing was refused (nghttp2 refuses streams beyond an acknowledged limit).
        #expect(server.peakStreamsAfterLowering >= 1)
        #expect(server.peakStreamsAfterLowering <= 3)
        #expect(server.refusedStreams == 0)
        #expect(pool.statistics.peakStreamsPerConnection <= 50)
        await fixture.shutdownPools()
    }

    @Test func anUnansweredPingClosesTheConnectionAndTheNextSendUsesANewOne() async throws {
        let fixture = try PoolMockFixture { $0.faults.ignorePings = true }
        let pool = try fixture.pool { configuration in
            configuration.connections = 1
            configuration.pingInterval = .milliseconds(200)
            configuration.pingTimeout = .milliseconds(300)
        }
        #expect(try await pool.send(fixture.request()).status == 200)
        // Idle: the pool pings, hears nothing, and gives the connection up.
        #expect(await eventually { pool.statistics.connectionsLost >= 1 })
        #expect(fixture.server.statistics.pingsReceived >= 1)
        #expect(pool.statistics.pingsAcknowledged == 0)
        #expect(try await pool.send(fixture.request()).status == 200)
        #expect(fixture.server.statistics.connectionsAccepted >= 2)
        await fixture.shutdownPools()
    }

    @Test func aClientCertificateTheServerRefusesFailsSendsAsCertificateRejected() async throws {
        let fixture = try PoolMockFixture()
        let stranger = try LookAlikeLocalSetup.generate(bundleID: PoolMockFixture.bundleID)
        let pool = try fixture.pool(
            credential: try .certificate(pem: stranger.clientCertificatePEM + "\n" + stranger.clientKeyPEM))
        let error = await #expect(throws: APNsTransportError.self) { try await pool.send(fixture.request()) }
        #expect(error?.code == .certificateRejected)
        // Failed as soon as the handshake did, not by the 20 s request timeout running out (which
        // the pool counts), however long a loaded machine took.
        #expect(pool.statistics.timeouts == 0)
        #expect(error?.message.contains("request timeout") == false)
        #expect(fixture.server.apnsStatistics.requests == 0)
        await fixture.shutdownPools()
    }

    @Test func anIPv6EndpointIsReachedAndItsAddressVerified() async throws {
        // The mock listens on ::1 only; its certificate names ::1 among its addresses.
        let fixture = try PoolMockFixture { $0.host = "::1" }
        guard let endpoint = APNsEndpoint(url: "https://[::1]:\(fixture.server.port)") else {
            Issue.record("the bracketed IPv6 URL did not parse")
            return
        }
        #expect(endpoint.host == "::1")
        var configuration = APNsConnectionPool.Configuration(endpoint: endpoint)
        configuration.caFile = fixture.caFile
        configuration.connections = 1
        let pool = try APNsConnectionPool(
            configuration: configuration, credential: try fixture.tokenCredential(), logger: clientTestLogger)
        let responses = await sendConcurrently(pool, count: 20) { index in
            PoolMockFixture.request(deviceToken: poolDeviceToken(index))
        }
        #expect(responses.allSatisfy { (try? $0.get().status) == 200 })
        #expect(fixture.server.apnsStatistics.requests == 20)
        await pool.shutdown()
    }

    @Test func answeredPingsKeepAnIdleConnection() async throws {
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool { configuration in
            configuration.connections = 1
            configuration.pingInterval = .milliseconds(100)
            configuration.pingTimeout = .milliseconds(500)
        }
        #expect(try await pool.send(fixture.request()).status == 200)
        #expect(await eventually { pool.statistics.pingsAcknowledged >= 3 })
        #expect(pool.statistics.connectionsLost == 0)
        #expect(fixture.server.statistics.connectionsAccepted == 1)
        #expect(try await pool.send(fixture.request()).status == 200)
        await fixture.shutdownPools()
    }
}
