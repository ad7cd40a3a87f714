import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// A message whose audience is sent is completed only once nothing is queued, sending or held:
/// what it still waits for is listed, held rows expire with the message, and the completion
/// time is when the last of them ended.
@Suite struct MessageWaitingTests {
    @Test(arguments: Backend.allCases) func aSentMessageWaitsForItsRetriesAndHolds(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await Self.waits(store) }
    }

    static func at(_ seconds: TimeInterval, from start: Date) -> Date {
        SQLTime.date(SQLTime.milliseconds(start.addingTimeInterval(seconds)))
    }

    static func waits(_ store: any GatewayStore) async throws {
        let appID = try await store.createApp(name: "w", bundleID: "com.example.w", apiKeyHash: UUID().uuidString).id
        let message = try await store.createMessage(
            PushJob(
                appID: appID, vendor: "native", audience: .tag("news"), content: PushContent(),
                options: PushOptions()), state: .queued)
        let start = at(0, from: Date())
        #expect(try await store.startMessage(id: message.id, total: 6, at: start))

        func row(_ token: String, _ state: DeliveryState, _ reason: String, _ channel: PushChannel, next: Date?)
            -> NewDelivery
        {
            NewDelivery(
                deviceID: nil, token: token, environment: .production, state: state, reason: reason, attempts: 1,
                nextAttemptAt: next, channel: channel)
        }
        var counts = DeliveryCounts()
        counts.delivered = 1
        counts.queued = 1
        counts.held = 2
        counts.skipped = 1
        try await store.recordProgress(
            MessageProgress(
                messageID: message.id, cursor: 6, counts: counts, skips: ["UnknownDevice": 1],
                deliveries: [
                    row("xiaomi-1", .queued, "quota", .xiaomi, next: at(3600, from: start)),
                    row("fcm-1", .held, "no_credential", .fcm, next: at(7200, from: start)),
                    row("honor-1", .held, "credential_failing", .honor, next: at(100, from: start)),
                    row("unregistered-android", .skipped, "UnknownDevice", .apns, next: nil),
                ], finalState: .completed, deliveredByChannel: [.huawei: 1]), at: start)

        var progress = try #require(try await store.messageProgress(id: message.id))
        #expect(progress.state == .completed)
        #expect(progress.completedAt == nil, "two rows held and one queued: not completed")
        #expect(
            try await store.pendingDeliveries(messageID: message.id) == [
                PendingDeliveries(state: .held, reason: "credential_failing", count: 1, until: at(100, from: start)),
                PendingDeliveries(state: .held, reason: "no_credential", count: 1, until: at(7200, from: start)),
                PendingDeliveries(state: .queued, reason: "quota", count: 1, until: at(3600, from: start)),
            ])
        let channels = try await store.channelCounts(messageID: message.id)
        #expect(channels[.apns] == nil, "a token no device registered is counted under no service")
        #expect(channels[.fcm]?.held == 1 && channels[.honor]?.held == 1 && channels[.xiaomi]?.queued == 1)
        #expect(channels[.huawei]?.delivered == 1)

        // A credential for one service releases that service's held rows only; an APNs one none.
        #expect(try await store.releaseHeldDeliveries(appID: appID, channel: .huawei, now: start) == 0)
        #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .production, now: start) == 0)
        #expect(try await store.releaseHeldDeliveries(appID: appID, channel: .fcm, now: start) == 1)

        // The honor row's hold ends (its message expired): failed with its reason.
        #expect(try await store.expireHeldDeliveries(now: at(50, from: start), limit: 10) == 0)
        #expect(try await store.expireHeldDeliveries(now: at(200, from: start), limit: 10) == 1)
        progress = try #require(try await store.messageProgress(id: message.id))
        #expect(progress.counts.held == 0 && progress.counts.failed == 1 && progress.counts.queued == 2)
        #expect(progress.failures == ["credential_failing": 1])
        #expect(progress.completedAt == nil, "two rows are still queued")
        #expect(try await store.pendingDeliveries(messageID: message.id).map(\.state) == [.queued, .queued])

        // The last two are sent: the message completes then.
        let end = at(4000, from: start)
        let claimed = try await store.claimDueDeliveries(now: end, limit: 10)
        #expect(Set(claimed.map(\.token)) == ["fcm-1", "xiaomi-1"])
        try await store.applyDeliveryUpdates(
            claimed.map {
                DeliveryUpdate(
                    deliveryID: $0.id, messageID: message.id, from: .sending, to: .delivered, reason: nil,
                    serviceMessageID: nil,
                    attempts: 2, nextAttemptAt: nil)
            }, at: end)
        progress = try #require(try await store.messageProgress(id: message.id))
        #expect(progress.counts.queued == 0 && progress.counts.sending == 0 && progress.counts.delivered == 3)
        #expect(progress.completedAt == end)
        #expect(try await store.pendingDeliveries(messageID: message.id).isEmpty)
    }

    /// A message with nothing left to wait for completes with its final flush, as before.
    @Test(arguments: Backend.allCases) func aMessageWithNothingPendingCompletesAtOnce(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let appID = try await store.createApp(name: "d", bundleID: "com.example.d", apiKeyHash: UUID().uuidString)
                .id
            let message = try await store.createMessage(
                PushJob(
                    appID: appID, vendor: "native", audience: .tag("news"), content: PushContent(),
                    options: PushOptions()), state: .queued)
            let start = Self.at(0, from: Date())
            #expect(try await store.startMessage(id: message.id, total: 1, at: start))
            var counts = DeliveryCounts()
            counts.delivered = 1
            try await store.recordProgress(
                MessageProgress(messageID: message.id, cursor: 1, counts: counts, finalState: .completed), at: start)
            #expect(try await store.messageProgress(id: message.id)?.completedAt == start)
        }
    }

    /// The monitor's failures per push service: APNs's `Unregistered` and FCM's `UNREGISTERED`
    /// are a row each, most first.
    @Test(arguments: Backend.allCases) func failuresAreCountedPerService(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let appID = try await store.createApp(name: "f", bundleID: "com.example.f", apiKeyHash: UUID().uuidString)
                .id
            let message = try await store.createMessage(
                PushJob(
                    appID: appID, vendor: "native", audience: .tag("news"), content: PushContent(),
                    options: PushOptions()), state: .queued)
            #expect(try await store.startMessage(id: message.id, total: 4, at: Date()))
            func failed(_ token: String, _ reason: String, _ channel: PushChannel) -> NewDelivery {
                NewDelivery(
                    deviceID: nil, token: token, environment: .production, state: .failed, reason: reason, attempts: 1,
                    channel: channel)
            }
            var counts = DeliveryCounts()
            counts.failed = 4
            try await store.recordProgress(
                MessageProgress(
                    messageID: message.id, cursor: 4, counts: counts,
                    failures: ["Unregistered": 2, "UNREGISTERED": 1, "80300007": 1],
                    deliveries: [
                        failed("a1", "Unregistered", .apns), failed("a2", "Unregistered", .apns),
                        failed("f1", "UNREGISTERED", .fcm), failed("h1", "80300007", .huawei),
                    ], finalState: .completed), at: Date())
            #expect(
                try await store.failureReasonsByChannel(since: Date(timeIntervalSince1970: 0), scanLimit: 10) == [
                    ChannelReasonCount(channel: .apns, reason: "Unregistered", count: 2),
                    ChannelReasonCount(channel: .fcm, reason: "UNREGISTERED", count: 1),
                    ChannelReasonCount(channel: .huawei, reason: "80300007", count: 1),
                ])
            #expect(
                try await store.failureReasonsByChannel(since: Date().addingTimeInterval(60), scanLimit: 10).isEmpty)
        }
    }
}
