import Foundation
import Testing
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongAPNs

/// After an outage APNs must be back in use soon, however long the outage lasted: the reconnect
/// backoff once doubled to 30 s, so after a 5 s outage nothing was sent for about 7 s more.
@Suite(.serialized, .timeLimit(.minutes(2))) struct PoolRecoveryTests {
    @Test func requestsWaitingThroughAnOutageGoOutSoonAfterTheEndpointRecovers() async throws {
        let fixture = try PoolMockFixture()
        // The gateway's settings: backoff from 200 ms up to 30 s while nothing waits.
        let pool = try fixture.pool { $0.requestTimeout = .seconds(40) }
        #expect(try await pool.send(fixture.request()).status == 200)

        let port = fixture.stopServer()
        let sends = Task {
            await sendConcurrently(pool, count: 20) { PoolMockFixture.request(deviceToken: poolDeviceToken($0)) }
        }
        // Six failed attempts: at the old rate the next one would have been 3.2–12.8 s away.
        try await waitUntil("six failed connects", within: .seconds(30)) { pool.statistics.connectFailures >= 6 }
        try fixture.startServer(port: port)
        let recovered = ContinuousClock.now
        let results = await sends.value
        let waited = ContinuousClock.now - recovered

        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        #expect(fixture.server.apnsStatistics.requests == 20)
        // The structural promise: no attempt was ever scheduled further out than 1 s while the
        // 20 requests waited (before: 3.2–12.8 s by then).
        let statistics = pool.statistics
        #expect(statistics.longestReconnectDelayWhileQueued <= .seconds(1))
        #expect(statistics.connectFailures >= 3)
        // And so they went out soon; a generous bound, not a speed measurement.
        #expect(waited < .seconds(4), "waited \(waited) after the endpoint came back")
        await fixture.shutdownPools()
    }

    @Test func aRequestArrivingDuringALongIdleBackoffBringsTheAttemptForward() async throws {
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool {
            $0.requestTimeout = .seconds(40)
            $0.reconnectBackoffInitial = .seconds(8)  // an idle pool's next attempt is 4–8 s away
        }
        #expect(try await pool.send(fixture.request()).status == 200)
        let port = fixture.stopServer()
        // Both connections lost, a long attempt scheduled.
        try await waitUntil("both connections lost") { pool.statistics.liveConnections == 0 }
        try fixture.startServer(port: port)
        let start = ContinuousClock.now
        #expect(try await pool.send(fixture.request()).status == 200)
        #expect(pool.statistics.longestReconnectDelayWhileQueued <= .seconds(1))
        #expect(ContinuousClock.now - start < .seconds(3))
        await fixture.shutdownPools()
    }
}
