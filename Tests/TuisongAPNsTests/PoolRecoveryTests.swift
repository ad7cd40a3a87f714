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
        let results = await sends.value

        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        #expect(fixture.server.apnsStatistics.requests == 20)
        // The structural promise: no attempt was ever scheduled further out than 1 s while the
        // 20 requests waited (before: 3.2–12.8 s by then).
        let statistics = pool.statistics
        #expect(statistics.longestReconnectDelayWhileQueued <= .seconds(1))
        #expect(statistics.connectFailures >= 3)
        // So they went out within a second or so of the endpoint's return; not timed here (a
        // loaded machine stretches any wall-clock bound), the longest delay above is the proof.
        await fixture.shutdownPools()
    }

    @Test func aRequestArrivingDuringALongIdleBackoffBringsTheAttemptForward() async throws {
        let fixture = try PoolMockFixture()
        let pool = try fixture.pool {
            $0.requestTimeout = .seconds(40)
            // An idle pool's next attempt is 5–10 minutes away: a request that waited for it
            // would time out (40 s), so its success is the proof, with no clock read here.
            $0.reconnectBackoffInitial = .seconds(600)
            $0.reconnectBackoffMaximum = .seconds(600)
        }
        #expect(try await pool.send(fixture.request()).status == 200)
        let port = fixture.stopServer()
        // Both connections lost, a long attempt scheduled.
        try await waitUntil("both connections lost") { pool.statistics.liveConnections == 0 }
        try fixture.startServer(port: port)
        #expect(try await pool.send(fixture.request()).status == 200)
        #expect(pool.statistics.longestReconnectDelayWhileQueued <= .seconds(1))
        await fixture.shutdownPools()
    }
}
