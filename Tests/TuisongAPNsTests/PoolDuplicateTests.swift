import Foundation
import Testing
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongAPNs

/// Duplicates under faults, counted where they would land: at the mock, which records every
/// request it processed. A stream above a GOAWAY's last stream id was never processed and is
/// resent; one at or below it is still answered on that connection and must not be resent.
@Suite(.serialized, .timeLimit(.minutes(2))) struct PoolDuplicateTests {
    /// Distinct for every index (`poolDeviceToken` maps 0x1 and 0xc1 to the same token).
    static func token(_ index: Int) -> String { testToken(index, prefix: "") }

    /// Requests the mock processed, and the distinct device tokens among them.
    static func duplicates(_ server: LookAlikeServer) -> (processed: Int, distinct: Int) {
        let tokens = server.receivedNotifications().map(\.deviceToken)
        return (tokens.count, Set(tokens).count)
    }

    @Test func goAwayWithAnswersStillPendingSendsEachNotificationOnce() async throws {
        let fixture = try PoolMockFixture { configuration in
            // Answers come 20 ms late, so every GOAWAY finds streams at or below its last
            // stream id still unanswered.
            configuration.faults.goawayAfterRequests = 150
            configuration.faults.latencyMilliseconds = 20
            configuration.maxConcurrentStreams = 100
        }
        let pool = try fixture.pool { $0.reconnectBackoffInitial = .milliseconds(20) }
        let count = 3000
        let responses = await sendConcurrently(pool, count: count) { index in
            PoolMockFixture.request(deviceToken: Self.token(index))
        }
        #expect(responses.allSatisfy { (try? $0.get().status) == 200 })
        let (processed, distinct) = Self.duplicates(fixture.server)
        #expect(distinct == count)
        #expect(processed == count, "\(processed - distinct) sent twice")
        #expect(fixture.server.statistics.goawaysSent >= 10)
        #expect(pool.statistics.goAwaysReceived >= 10)
        #expect(pool.statistics.connectionsLost == 0)
        await fixture.shutdownPools()
    }

    @Test func aBatchUnderGoAwaysSendsEachNotificationOnce() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.faults.goawayAfterRequests = 150
            configuration.faults.latencyMilliseconds = 20
            configuration.maxConcurrentStreams = 100
        }
        let pool = try fixture.pool { $0.reconnectBackoffInitial = .milliseconds(20) }
        let count = 3000
        let (results, _) = await pool.sendBatch(
            (0..<count).map { PoolMockFixture.request(deviceToken: Self.token($0)) })
        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        let (processed, distinct) = Self.duplicates(fixture.server)
        #expect(distinct == count)
        #expect(processed == count, "\(processed - distinct) sent twice")
        await fixture.shutdownPools()
    }

    @Test func aDroppedConnectionResendsAtMostWhatWasInFlightOnIt() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.faults.dropConnectionAfterRequests = 150
            configuration.faults.latencyMilliseconds = 20
            configuration.maxConcurrentStreams = 100
        }
        let pool = try fixture.pool { $0.reconnectBackoffInitial = .milliseconds(20) }
        let count = 2000
        let responses = await sendConcurrently(pool, count: count) { index in
            PoolMockFixture.request(deviceToken: Self.token(index))
        }
        // A request lost with more connections than `maxRetriesOnConnectionLoss` allows fails
        // (the delivery engine retries it later); every other one is answered.
        let failures = responses.compactMap { result -> APNsTransportError? in
            if case .failure(let error) = result { return error } else { return nil }
        }
        #expect(failures.allSatisfy { $0.code == .connectionLost }, "\(failures.prefix(3))")
        #expect(responses.count - failures.count > count * 9 / 10)
        let (processed, distinct) = Self.duplicates(fixture.server)
        let drops = fixture.server.statistics.connectionsDropped
        #expect(drops > 0)
        // Each drop can only cost the streams open on that connection.
        #expect(processed - distinct <= drops * 100, "\(processed - distinct) duplicates for \(drops) drops")
        await fixture.shutdownPools()
    }
}
