import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

/// Issue #40 item 5 on both databases: an app's backlog as admission counts it, and claims
/// that are fair across apps, so one app's queue of chat lines does not hold another app's
/// push back.
@Suite struct BacklogAndFairClaimTests {
    static func line(_ store: any GatewayStore, _ app: App, _ n: Int, state: MessageState = .queued)
        async throws -> MessageRecord
    {
        try await store.createMessage(
            PushJob(
                appID: app.id, vendor: "native", audience: .tokens([token(n).hex]), content: PushContent(),
                options: PushOptions(), sendAt: state == .scheduled ? Date().addingTimeInterval(3600) : nil),
            state: state)
    }

    @Test(arguments: Backend.allCases)
    func theBacklogCountsAnAppsQueuedAndSendingMessagesUpToTheBound(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let chat = try await makeApp(store, "chat")
            let other = try await makeApp(store, "other")
            var lines: [MessageRecord] = []
            for n in 1...4 { lines.append(try await Self.line(store, chat, n)) }
            _ = try await Self.line(store, chat, 5, state: .scheduled)
            _ = try await Self.line(store, other, 6)
            #expect(try await store.backlog(appID: chat.id, upTo: 100) == 4, "a scheduled push is not backlog yet")
            #expect(try await store.backlog(appID: chat.id, upTo: 2) == 2, "counted no further than asked")
            #expect(try await store.backlog(appID: other.id, upTo: 100) == 1)

            // Claimed (sending) is still backlog; sent through (completed) is not.
            let claimed = try await store.claimWork(now: Date(), limit: 2, running: [])
            #expect(claimed.count == 2)
            #expect(try await store.backlog(appID: chat.id, upTo: 100) == 4)
            try await store.setMessageState(id: lines[0].id, .completed, at: Date())
            try await store.setMessageState(id: lines[1].id, .cancelled, at: Date())
            #expect(try await store.backlog(appID: chat.id, upTo: 100) == 2)
        }
    }

    /// The dispatcher with room for one more run (its runs are full and one ended): an app with
    /// nothing sending gets its push claimed next, though another app queued 40 lines before it.
    @Test(arguments: Backend.allCases)
    func aPushIsClaimedNextBesideAnotherAppsChatBacklog(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let chat = try await makeApp(store, "chat")
            let news = try await makeApp(store, "news")
            var lines: [MessageRecord] = []
            for n in 1...40 { lines.append(try await Self.line(store, chat, n)) }
            let fanOut = try await store.createMessage(
                PushJob(
                    appID: news.id, vendor: "native", audience: .all, content: PushContent(), options: PushOptions()),
                state: .queued)

            let first = try await store.claimWork(now: Date(), limit: 1, sliceLimit: 1, running: [])
            #expect(first.map(\.record.id) == [lines[0].id], "equal turns: the oldest first")
            var running = Set(first.map { MessageSliceKey(messageID: $0.record.id, slice: $0.slice.id) })
            let second = try await store.claimWork(now: Date(), limit: 1, sliceLimit: 1, running: running)
            #expect(second.map(\.record.id) == [fanOut.id], "the app with nothing sending goes before the chat queue")
            running.formUnion(second.map { MessageSliceKey(messageID: $0.record.id, slice: $0.slice.id) })

            // Two apps with lines queued alternate.
            let more = try await Self.line(store, news, 99)
            let batch = try await store.claimWork(now: Date(), limit: 3, sliceLimit: 3, running: running)
            #expect(batch.map(\.record.id).sorted() == [lines[1].id, lines[2].id, more.id].sorted())
        }
    }
}
