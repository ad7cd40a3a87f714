import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// `messageProgress(id:)`, the status poll's point read, against the full `message(id:)`.
@Suite struct MessageProgressTests {
    @Test(arguments: Backend.allCases) func theProgressReadAgreesWithTheFullRecord(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await Self.progressAgrees(store) }
    }

    static func progressAgrees(_ store: any GatewayStore) async throws {
        let appID = try await store.createApp(name: "p", bundleID: "com.example.p", apiKeyHash: UUID().uuidString).id
        let message = try await store.createMessage(
            PushJob(
                appID: appID, vendor: "native", audience: .tag("news"), content: PushContent(),
                options: PushOptions()), state: .queued)

        var fresh = try #require(try await store.messageProgress(id: message.id))
        #expect(fresh.state == .queued)
        #expect(fresh.total == nil)
        #expect(fresh.startedAt == nil)
        #expect(fresh.cursor == 0)
        #expect(fresh.counts == DeliveryCounts())
        #expect(fresh.failures.isEmpty && fresh.skips.isEmpty)

        // Started without a count, the count recorded later; a finished message keeps its total.
        #expect(try await store.startMessage(id: message.id, total: nil, at: Date()))
        fresh = try #require(try await store.messageProgress(id: message.id))
        #expect(fresh.state == .sending && fresh.total == nil && fresh.startedAt != nil)
        try await store.setExpectedTotal(id: message.id, total: 9)
        #expect(try await store.messageProgress(id: message.id)?.total == 9)

        var counts = DeliveryCounts()
        counts.delivered = 5
        counts.failed = 3
        counts.skipped = 1
        try await store.recordProgress(
            MessageProgress(
                messageID: message.id, cursor: 42, counts: counts,
                failures: ["Unregistered": 2, "Bad \"quoted\" reason ✓": 1], skips: ["foreground": 1],
                finalState: .completed), at: Date())
        try await store.setExpectedTotal(id: message.id, total: 1000)

        let progress = try #require(try await store.messageProgress(id: message.id))
        let full = try #require(try await store.message(id: message.id))
        #expect(progress.state == .completed)
        #expect(progress.cursor == 42)
        #expect(progress.total == 9, "the final total is what got an outcome; a late count does not change it")
        #expect(progress.counts == full.counts)
        #expect(progress.failures == ["Unregistered": 2, "Bad \"quoted\" reason ✓": 1])
        #expect(progress.failures == full.failures)
        #expect(progress.skips == full.skips)
        #expect(progress.startedAt == full.startedAt)
        #expect(progress.completedAt == full.completedAt)
        #expect(message.updated(with: progress).counts == full.counts)

        // A second final flush (the run's last, after the flusher's own) keeps the completion time.
        try await store.recordProgress(
            MessageProgress(messageID: message.id, cursor: 42, finalState: .completed),
            at: Date().addingTimeInterval(5))
        #expect(try await store.messageProgress(id: message.id)?.completedAt == progress.completedAt)

        #expect(try await store.messageProgress(id: message.id + 1) == nil)
    }
}
