import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongStore

@testable import TuisongDelivery

/// Devices of several channels in one push: each transport sees only its own channel's
/// devices, retries go back the same way, and a channel without a transport fails visibly.
@Suite(.serialized) struct ChannelRouterTests {
    /// `count` devices on `channel`, tagged `tag`: APNs tokens from `testToken`, Android ones
    /// opaque (`fcm-…:APA91b…`, as FCM's look).
    private func seed(_ f: EngineFixture, _ channel: PushChannel, _ range: ClosedRange<Int>, tag: String) async throws
        -> [String]
    {
        var tokens: [String] = []
        var batch: [DeviceRegistration] = []
        for n in range {
            let raw = channel == .apns ? testToken(n, prefix: "ab") : "\(channel)-\(n):APA91b_x-\(n)"
            let token = try #require(DeviceToken(raw, channel: channel))
            tokens.append(token.value)
            batch.append(
                DeviceRegistration(token: token, environment: .production, tags: [TagName(tag)!], channel: channel))
        }
        _ = try await f.store.registerDevices(appID: f.appID, batch)
        return tokens
    }

    @Test(arguments: PluginStoreBackend.allCases) func aMixedTagPushReachesEachChannelThroughItsOwnTransport(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        let apnsTokens = try await seed(f, .apns, 1...130, tag: "mixed")
        let fcmTokens = try await seed(f, .fcm, 131...250, tag: "mixed")
        let huaweiTokens = try await seed(f, .huawei, 251...260, tag: "mixed")
        let apns = ScriptedTransport()
        let fcm = ScriptedTransport(answering: .laterInTwoParts)
        let huawei = ScriptedTransport { _, attempt in
            attempt < 2 ? .retry(.transport("Unavailable"), after: nil) : .delivered(serviceMessageID: nil)
        }
        let engine = f.engine(ChannelRouter([.apns: apns, .fcm: fcm, .huawei: huawei]), pageSize: 64)
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("mixed")))
        let status = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()

        #expect(status.counts.delivered == 260)
        #expect(Set(apns.attempts.withLock { $0.keys }) == Set(apnsTokens))
        #expect(Set(fcm.attempts.withLock { $0.keys }) == Set(fcmTokens))
        #expect(Set(huawei.attempts.withLock { $0.keys }) == Set(huaweiTokens))
        #expect(huawei.totalAttempts == 20, "each Huawei device retried once, through Huawei again")
        let channels = fcm.batches.withLock { $0.flatMap { $0.pushes.map(\.channel) } }
        #expect(Set(channels) == [.fcm])
        // Pages of 64 are sent in audience order, so one batch carries APNs and FCM devices (129
        // to 192): each delivered push counts under its own device's service.
        let counts = try await f.store.channelCounts(messageID: record.id)
        #expect(counts.mapValues(\.delivered) == [.apns: 130, .fcm: 120, .huawei: 10])
    }

    @Test(arguments: PluginStoreBackend.allCases) func aChannelWithoutTransportFailsItsDevicesAndNoOthers(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        _ = try await seed(f, .apns, 1...5, tag: "mixed")
        _ = try await seed(f, .honor, 6...8, tag: "mixed")
        let apns = ScriptedTransport()
        let engine = f.engine(ChannelRouter([.apns: apns]))
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("mixed")))
        let status = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        #expect(status.counts.delivered == 5)
        #expect(status.counts.failed == 3)
        #expect(status.failures == ["channel_not_configured": 3])
        let failed = try await f.store.deliveries(messageID: record.id, state: .failed, cursor: nil, limit: 10)
        #expect(failed.items.map(\.channel) == [.honor, .honor, .honor])
    }

    @Test func aBatchOfSeveralChannelsIsSplitAndReportedUnderItsOwnIndices() async throws {
        let apns = ScriptedTransport { _, _ in .delivered(serviceMessageID: "apns") }
        let fcm = ScriptedTransport(answering: .laterInTwoParts) { token, _ in
            token.hasSuffix("dead")
                ? .invalidate(.service("UNREGISTERED"), since: nil) : .delivered(serviceMessageID: "fcm")
        }
        let router = ChannelRouter([.apns: apns, .fcm: fcm])
        let app = App(
            id: 1, name: "a", bundleID: "com.example.a", apiKeyHash: "h", createdAt: Date(), updatedAt: Date())
        let channels: [PushChannel] = [.fcm, .apns, .fcm, .huawei, .apns, .fcm]
        let pushes = channels.enumerated().map { index, channel in
            OutgoingPush(
                token: index == 5 ? "t\(index)-dead" : "t\(index)", environment: .production, content: PushContent(),
                headers: PushHeaders(), channel: channel)
        }
        let outcomes = await router.outcomes(of: PushBatch(app: app, pushes: pushes))
        #expect(
            outcomes == [
                .delivered(serviceMessageID: "fcm"), .delivered(serviceMessageID: "apns"),
                .delivered(serviceMessageID: "fcm"),
                .failed(.channelNotConfigured), .delivered(serviceMessageID: "apns"),
                .invalidate(.service("UNREGISTERED"), since: nil),
            ])
        #expect(apns.batches.withLock { $0.map { $0.pushes.map(\.token) } } == [["t1", "t4"]])
    }
}
