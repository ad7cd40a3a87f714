import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongAPNs

/// Gathers the answers of one `send(_:onAnswers:)` call: every request's result by index, how
/// often the handler ran, and any index answered twice.
final class BatchCollector: Sendable {
    private struct State {
        var results: [Result<APNsResponse, APNsTransportError>?]
        var answered = 0
        var duplicates = 0
        var outOfRange = 0
        var calls = 0
        var largestCall = 0
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(results: Array(repeating: nil, count: count)))
    }

    func handle(_ answers: [APNsBatchAnswer]) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.calls += 1
            state.largestCall = max(state.largestCall, answers.count)
            for answer in answers {
                guard state.results.indices.contains(answer.index) else {
                    state.outOfRange += 1
                    continue
                }
                if state.results[answer.index] != nil {
                    state.duplicates += 1
                } else {
                    state.results[answer.index] = answer.result
                    state.answered += 1
                }
            }
            guard state.answered == state.results.count else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Waits until every request has an answer (the suite's time limit bounds it).
    func results() async -> [Result<APNsResponse, APNsTransportError>] {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.answered == state.results.count { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
        return state.withLock { $0.results.map { $0! } }
    }

    var calls: Int { state.withLock { $0.calls } }
    var largestCall: Int { state.withLock { $0.largestCall } }
    var duplicates: Int { state.withLock { $0.duplicates + $0.outOfRange } }
}

extension APNsConnectionPool {
    /// Sends `requests` as one batch and waits for all of their answers.
    func sendBatch(_ requests: [APNsRequest]) async -> (
        results: [Result<APNsResponse, APNsTransportError>], collector: BatchCollector
    ) {
        let collector = BatchCollector(count: requests.count)
        send(requests) { answers in collector.handle(answers) }
        return (await collector.results(), collector)
    }
}

/// `send(_:onAnswers:)` against the mock over TLS + HTTP/2: many requests in one hand-off, each
/// answered exactly once through the same retries, timeouts and shutdown as `send(_:)`.
@Suite(.timeLimit(.minutes(2))) struct PoolBatchTests {
    @Test func everyRequestOfABatchIsAnsweredOnceByIndexInFewCalls() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.faults = .magicTokenPrefixes
            configuration.maxConcurrentStreams = 100
        }
        let pool = try fixture.pool()
        // Every tenth device is gone and every 25th malformed, so answers must not be confused.
        let tokens = (0..<3000).map { index -> String in
            let suffix = String(format: "%04d", index)
            if index % 25 == 0 { return "400bad" + String(repeating: "0", count: 54) + suffix }
            if index % 10 == 0 { return "410" + String(repeating: "0", count: 57) + suffix }
            return poolDeviceToken(index)
        }
        let requests = tokens.map { PoolMockFixture.request(deviceToken: $0) }
        // Single sends share the pool with the batch.
        async let singles = sendConcurrently(pool, count: 20) { index in
            PoolMockFixture.request(deviceToken: poolDeviceToken(10_000 + index))
        }
        let (results, collector) = await pool.sendBatch(requests)
        #expect(await singles.allSatisfy { (try? $0.get().status) == 200 })

        for (index, result) in results.enumerated() {
            guard case .success(let response) = result else {
                Issue.record("request \(index) failed: \(result)")
                continue
            }
            if index % 25 == 0 {
                #expect(response.status == 400, "request \(index)")
                #expect(response.reason == "BadDeviceToken")
            } else if index % 10 == 0 {
                #expect(response.status == 410, "request \(index)")
                #expect(response.reason == "Unregistered")
                #expect(response.timestamp != nil)
            } else {
                #expect(response.status == 200, "request \(index)")
            }
        }
        #expect(collector.duplicates == 0)
        // Answers of one loop iteration come together, not one call per request.
        #expect(collector.calls < 3000 / 4, "\(collector.calls) calls")
        #expect(collector.largestCall > 1)
        let received = fixture.server.receivedNotifications().map(\.deviceToken)
        #expect(Set(received).isSuperset(of: tokens))
        #expect(fixture.server.statistics.refusedStreams == 0)
        #expect(pool.statistics.peakStreamsPerConnection <= 100)
        // Nothing is answered twice after the last answer either: once the pools are shut down
        // (their loop threads ended) no answer can come, so the count is final.
        await fixture.shutdownPools()
        #expect(collector.duplicates == 0)
    }

    @Test func aBatchSurvivesGoAway() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.faults.goawayAfterRequests = 300
            configuration.maxConcurrentStreams = 200
        }
        let pool = try fixture.pool { $0.reconnectBackoffInitial = .milliseconds(20) }
        let (results, collector) = await pool.sendBatch(
            (0..<1000).map { PoolMockFixture.request(deviceToken: poolDeviceToken($0)) })
        let failures = results.compactMap { result -> APNsTransportError? in
            if case .failure(let error) = result { return error } else { return nil }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        #expect(collector.duplicates == 0)
        let delivered = Set(fixture.server.receivedNotifications().map(\.deviceToken))
        #expect(delivered == Set((0..<1000).map(poolDeviceToken)))
        #expect(fixture.server.statistics.goawaysSent >= 2)
        #expect(pool.statistics.retries > 0)

        await fixture.shutdownPools()
    }

    @Test func aBatchSurvivesDroppedConnections() async throws {
        let fixture = try PoolMockFixture { configuration in
            configuration.faults.dropConnectionAfterRequests = 300
            configuration.maxConcurrentStreams = 100
        }
        let pool = try fixture.pool { $0.reconnectBackoffInitial = .milliseconds(20) }
        let (results, collector) = await pool.sendBatch(
            (0..<1000).map { PoolMockFixture.request(deviceToken: poolDeviceToken($0)) })
        let failures = results.compactMap { result -> APNsTransportError? in
            if case .failure(let error) = result { return error } else { return nil }
        }
        #expect(failures.isEmpty, "\(failures.count): \(failures.prefix(3))")
        #expect(results.allSatisfy { (try? $0.get().status) == 200 })
        #expect(collector.duplicates == 0)
        let delivered = Set(fixture.server.receivedNotifications().map(\.deviceToken))
        #expect(delivered == Set((0..<1000).map(poolDeviceToken)))
        #expect(fixture.server.statistics.connectionsDropped >= 2)
        #expect(pool.statistics.connectionsLost >= 2)
        await fixture.shutdownPools()
    }

    @Test func requestsOfABatchTimeOutOneByOne() async throws {
        // Answers held: the timeouts are what end the requests, however slow the machine.
        let fixture = try PoolMockFixture { $0.faults.holdAnswers = true }
        let pool = try fixture.pool {
            $0.connections = 1
            $0.requestTimeout = .milliseconds(400)
        }
        let started = ContinuousClock.now
        let (results, collector) = await pool.sendBatch(
            (0..<5).map { PoolMockFixture.request(deviceToken: poolDeviceToken($0)) })
        // A lower bound only (monotonic deadlines cannot fire early), which load cannot break.
        #expect(ContinuousClock.now - started >= .milliseconds(400))
        #expect(
            results.allSatisfy { result in
                if case .failure(let error) = result { return error.code == .timeout }
                return false
            })
        #expect(collector.duplicates == 0)
        #expect(pool.statistics.timeouts == 5)
        await fixture.shutdownPools()
    }

    @Test func shutdownAnswersWaitingAndLaterBatches() async throws {
        let fixture = try PoolMockFixture { configuration in
            // Held: nothing is answered before the shutdown, however slow the machine.
            configuration.faults.holdAnswers = true
            configuration.maxConcurrentStreams = 10
        }
        let pool = try fixture.pool {
            $0.connections = 1
            $0.requestTimeout = .seconds(30)
        }
        let collector = BatchCollector(count: 50)
        pool.send((0..<50).map { PoolMockFixture.request(deviceToken: poolDeviceToken($0)) }) {
            collector.handle($0)
        }
        // Some on streams, the rest queued behind the first answer's one-stream limit.
        #expect(await eventually { pool.statistics.inFlight > 0 })
        await pool.shutdown()
        let results = await collector.results()
        #expect(
            results.allSatisfy { result in
                if case .failure(let error) = result { return error.code == .shutdown }
                return false
            })
        #expect(collector.duplicates == 0)

        let (late, lateCollector) = await pool.sendBatch(
            (0..<3).map { PoolMockFixture.request(deviceToken: poolDeviceToken($0)) })
        #expect(
            late.allSatisfy { result in
                if case .failure(let error) = result { return error.code == .shutdown }
                return false
            })
        #expect(lateCollector.calls == 1)
    }
}
