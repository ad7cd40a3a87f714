import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongDelivery

/// Issue #40 item 5 through the engine: a tag push of one app does not wait behind another
/// app's queue of chat lines. Every answer is held until the test releases it, so the chat
/// backlog cannot drain by itself; the fan-out's first push must still go out within the first
/// rounds, long before the 200 chat lines queued ahead of it.
@Suite(.serialized) struct FairClaimEngineTests {
    @Test(arguments: PluginStoreBackend.allCases)
    func aFanOutIsNotQueuedBehindAnotherAppsChatBacklog(_ backend: PluginStoreBackend) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        let lines = 200
        try await f.seed(lines, tag: "chat", prefix: "ee")
        let news = try await f.store.createApp(
            name: "news", bundleID: "com.example.news", apiKeyHash: UUID().uuidString)
        let subscribers = (1...20).map { testToken($0, prefix: "ff") }
        _ = try await f.store.registerDevices(
            appID: news.id,
            subscribers.map {
                DeviceRegistration(
                    token: DeviceToken($0)!, environment: .production, tags: [TagName("news")!], channel: .apns)
            })

        let transport = ChatRateTests.GatedTransport()
        let workers = 8
        let engine = f.engine(transport, workers: workers)
        // The chat app's lines are all queued before the other app's push is accepted.
        var chatIDs: [Int64] = []
        for n in 1...lines {
            chatIDs.append(try await engine.submit(f.job(.tokens([testToken(n, prefix: "ee")]))).id)
        }
        let fanOut = try await engine.submit(
            PushJob(
                appID: news.id, vendor: "native", audience: .tag("news"), content: PushContent(body: "news"),
                options: PushOptions()))
        try await engine.start()

        func firstNewsPush() -> Int? {
            transport.sent.withLock { sent in sent.firstIndex { subscribers.contains($0.token) } }
        }
        // Round by round: whatever was sent is answered, and the next round goes out.
        for _ in 0..<4 where firstNewsPush() == nil {
            try await waitUntil("a round is in flight", within: .seconds(20)) { transport.unanswered > 0 }
            let before = transport.sentCount
            transport.answerAll()
            try await waitUntil("the next round is sent", within: .seconds(20)) { transport.sentCount > before }
        }
        let position = try #require(firstNewsPush(), "the fan-out had not started after four rounds")
        #expect(position < 3 * workers, "the fan-out's first push went out after \(position) chat pushes")

        // Let everything finish: each line reaches its one device, the push its twenty.
        try await waitUntil("every push was sent", within: .seconds(60)) {
            transport.answerAll()
            return transport.sentCount == lines + subscribers.count && transport.unanswered == 0
        }
        for id in chatIDs {
            #expect(try await f.waitUntilCompleted(engine, id).counts.delivered == 1)
        }
        #expect(try await f.waitUntilCompleted(engine, fanOut.id).counts.delivered == subscribers.count)
        await engine.stop()
    }
}
