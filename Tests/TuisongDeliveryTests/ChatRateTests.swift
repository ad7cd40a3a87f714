import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongDelivery

/// Many small messages (chat lines: one recipient each) share the engine with large fan-outs
/// (issue #28): how many are sending at once is bounded by pushes in flight, not by a count of
/// messages, and a fan-out in progress does not keep them waiting for more than a round.
@Suite(.serialized) struct ChatRateTests {
    /// Holds every answer until the test releases what has been sent so far.
    final class GatedTransport: PushTransport {
        private struct Pending {
            var count: Int
            var report: @Sendable ([SendReport]) -> Void
        }
        private let pending = Mutex<[Pending]>([])
        /// Every push handed over, in order.
        let sent = Mutex<[OutgoingPush]>([])
        /// The environment of each `prepare` call, in order.
        let prepared = Mutex<[PushEnvironment?]>([])

        func prepare(app: App, environment: PushEnvironment?) async {
            prepared.withLock { $0.append(environment) }
        }

        func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async {
            sent.withLock { $0 += batch.pushes }
            pending.withLock { $0.append(Pending(count: batch.pushes.count, report: report)) }
        }

        var sentCount: Int { sent.withLock { $0.count } }
        var unanswered: Int { pending.withLock { $0.reduce(0) { $0 + $1.count } } }

        /// Answers everything sent so far, delivered.
        func answerAll() {
            let answers = pending.withLock { pending in
                defer { pending.removeAll() }
                return pending
            }
            for answer in answers {
                answer.report(
                    (0..<answer.count).map { SendReport(index: $0, outcome: .delivered(serviceMessageID: nil)) })
            }
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func hundredsOfOneDeviceMessagesAreInFlightTogether(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        let messages = 300
        try await f.seed(messages, tag: "chat", prefix: "ee")
        let transport = GatedTransport()
        let engine = f.engine(transport, workers: 512)
        try await engine.start()
        var ids: [Int64] = []
        for n in 1...messages {
            ids.append(try await engine.submit(f.job(.tokens([testToken(n, prefix: "ee")]))).id)
        }
        // None is answered yet: every message must be sending at once (a cap on messages, as
        // the engine had at 4, would stop at the cap).
        try await waitUntil("all \(messages) pushes in flight at once", within: .seconds(20)) {
            transport.sentCount >= messages
        }
        #expect(transport.unanswered == messages)
        transport.answerAll()
        for id in ids {
            let status = try await f.waitUntilCompleted(engine, id)
            #expect(status.counts.delivered == 1)
            #expect(status.record.total == 1)
        }
        await engine.stop()
        #expect(transport.sentCount == messages, "each once")
        let stored = try #require(try await f.store.message(id: ids[ids.count / 2]))
        #expect(stored.state == .completed && stored.counts.delivered == 1 && stored.total == 1)
    }

    /// Asking the transport to open an app's connections is a task and a wake-up of its
    /// threads: a stream of messages asks once per app and environment (every
    /// `PreparationTimes.interval`), not once per message.
    @Test func aStreamOfMessagesOpensTheAppsConnectionsOnce() async throws {
        let f = try await EngineFixture.make(.sqlite)
        defer { f.cleanUp() }
        try await f.seed(21, tag: "chat", prefix: "ef")
        let transport = GatedTransport()
        let engine = f.engine(transport, workers: 64)
        try await engine.start()
        var ids: [Int64] = []
        for n in 1...20 {
            ids.append(try await engine.submit(f.job(.tokens([testToken(n, prefix: "ef")]))).id)
        }
        try await waitUntil("20 pushes sent") { transport.sentCount >= 20 }
        transport.answerAll()
        for id in ids { _ = try await f.waitUntilCompleted(engine, id) }
        var sandbox = f.job(.tokens([testToken(21, prefix: "ef")]))
        sandbox.options.environment = .sandbox
        _ = try await engine.submit(sandbox)
        try await waitUntil("the sandbox connections asked for") {
            transport.prepared.withLock { $0.contains(.sandbox) }
        }
        let asked = transport.prepared.withLock { $0 }
        #expect(asked.count { $0 == nil } == 1, "\(asked)")
        #expect(asked.count { $0 == .sandbox } == 1, "\(asked)")
        transport.answerAll()
        await engine.stop()
    }

    @Test func preparationsAreDueOncePerIntervalPerAppAndEnvironment() {
        let times = PreparationTimes()
        let start = ContinuousClock.now
        #expect(times.due(appID: 1, environment: nil, now: start))
        #expect(!times.due(appID: 1, environment: nil, now: start + .seconds(9)))
        #expect(times.due(appID: 1, environment: .sandbox, now: start + .seconds(9)))
        #expect(times.due(appID: 2, environment: nil, now: start + .seconds(9)))
        #expect(times.due(appID: 1, environment: nil, now: start + PreparationTimes.interval))
    }

    @Test(arguments: PluginStoreBackend.allCases) func aChatMessageWaitsAtMostARoundBehindAFanOut(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(1000, tag: "everyone", prefix: "ff")
        try await f.seed(1, tag: "chat", prefix: "ee")
        let transport = GatedTransport()
        let workers = 50
        let engine = f.engine(transport, pageSize: 100, workers: workers)
        try await engine.start()
        let fanOut = try await engine.submit(f.job(.tag("everyone")))
        try await waitUntil("the fan-out holds every push in flight", within: .seconds(20)) {
            transport.sentCount >= workers
        }
        let chat = try await engine.submit(f.job(.tokens([testToken(1, prefix: "ee")])))
        // The chat message's run waits for a permit behind the fan-out's next chunk.
        try await waitUntil("the chat message waits for a push in flight", within: .seconds(20)) {
            engine.permits.waiterCount >= 2
        }
        // Two rounds of answers: the fan-out's waiter came first and takes the first round; the
        // chat message is served in the second, long before the fan-out's thousand are sent.
        for _ in 0..<2 {
            let before = transport.sentCount
            transport.answerAll()
            try await waitUntil("the next round is sent", within: .seconds(20)) { transport.sentCount > before }
        }
        let chatToken = testToken(1, prefix: "ee")
        let position = transport.sent.withLock { $0.firstIndex { $0.token == chatToken } }
        #expect(position != nil && position! < 3 * workers, "the chat push went out at \(String(describing: position))")
        // Let everything finish.
        while true {
            transport.answerAll()
            if let status = try await engine.status(messageID: fanOut.id), status.record.state == .completed,
                status.counts.sending == 0
            {
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let chatStatus = try await f.waitUntilCompleted(engine, chat.id)
        await engine.stop()
        #expect(chatStatus.counts.delivered == 1)
        #expect(transport.sentCount == 1001)
    }
}
