import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongStore

@testable import BaiduProvider

/// `BaiduStore` on SQLite and on PostgreSQL, with Baidu's migrations.
@Suite struct BaiduStoreTests {
    struct Fixture {
        /// The core store, for what the tests arrange and check beyond Baidu's view.
        let store: any GatewayStore
        let baidu: BaiduStore
        let clock: ManualClock
        let app: App

        /// Runs `body` with a new database on `backend` and one app.
        static func on(_ backend: PluginStoreBackend, _ body: (Fixture) async throws -> Void) async throws {
            let clock = ManualClock()
            try await withPluginStore(backend, providers: [BaiduProvider.self], clock: clock) { store in
                let app = try await store.createApp(name: "a", bundleID: "com.example.a", apiKeyHash: UUID().uuidString)
                try await body(
                    Fixture(
                        store: store, baidu: BaiduStore(database: store.sharedDatabase, store: store, clock: clock),
                        clock: clock, app: app))
            }
        }

        func bind(_ n: Int, user: String? = nil, environment: PushEnvironment = .production) async throws -> BaiduDevice
        {
            let token = DeviceToken(token(n))!
            return try await baidu.bindDevice(
                appID: app.id, token: token, environment: environment,
                userID: user ?? BaiduIDs.userID(appID: app.id, token: token),
                channelID: BaiduIDs.channelID(appID: app.id, token: token), channel: .apns
            ).device
        }

        func channel(_ n: Int) -> String { BaiduIDs.channelID(appID: app.id, token: DeviceToken(token(n))!) }
    }

    /// Unbinding deletes the device in Baidu's own transaction: a push held for it is skipped
    /// there too, so a credential added later does not release it (issue #40, item 8).
    @Test(arguments: PluginStoreBackend.allCases)
    func unbindCancelsWhatWasNotSentToTheDevice(_ backend: PluginStoreBackend) async throws {
        try await Fixture.on(backend) { f in
            let gone = try await f.bind(1)
            let kept = try await f.bind(2)
            let message = try await f.store.createMessage(
                PushJob(
                    appID: f.app.id, vendor: "baidu", audience: .all, content: PushContent(), options: PushOptions()),
                state: .queued)
            #expect(try await f.store.startMessage(id: message.id, total: 2, at: f.clock.now))
            var counts = DeliveryCounts()
            counts.held = 2
            try await f.store.recordProgress(
                MessageProgress(
                    messageID: message.id, cursor: 2, counts: counts,
                    deliveries: [gone, kept].map {
                        NewDelivery(
                            deviceID: $0.id, token: $0.token, environment: .production, state: .held,
                            reason: "no_credential", attempts: 1, nextAttemptAt: f.clock.now.addingTimeInterval(3600),
                            channel: .apns)
                    }, finalState: .completed), at: f.clock.now)

            #expect(try await f.baidu.unbindDevice(appID: f.app.id, channelID: gone.channelID))
            let progress = try #require(try await f.store.messageProgress(id: message.id))
            #expect(progress.counts.held == 1 && progress.counts.skipped == 1)
            #expect(progress.skips == [DeliveryCancellation.deviceDeleted: 1])
            #expect(
                try await f.store.releaseHeldDeliveries(appID: f.app.id, environment: .production, now: f.clock.now)
                    == 1)
            #expect(try await f.store.claimDueDeliveries(now: f.clock.now, limit: 10).map(\.token) == [kept.token])
        }
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func bindIsStableAndUnbindRemovesEverything(_ backend: PluginStoreBackend) async throws {
        try await Fixture.on(backend) { f in try await bindIsStableAndUnbindRemovesEverything(f) }
    }

    func bindIsStableAndUnbindRemovesEverything(_ f: Fixture) async throws {
        let token = DeviceToken(token(1))!
        let channel = f.channel(1)
        let first = try await f.baidu.bindDevice(
            appID: f.app.id, token: token, environment: .sandbox, userID: "11", channelID: channel, channel: .apns)
        #expect(first.created)
        #expect(first.device.channelID == channel && first.device.userID == "11")
        #expect(first.device.environment == .sandbox)
        let again = try await f.baidu.bindDevice(
            appID: f.app.id, token: token, environment: .production, userID: "11", channelID: channel, channel: .apns)
        #expect(!again.created)
        #expect(again.device.id == first.device.id && again.device.environment == .production)
        #expect(try await f.baidu.device(appID: f.app.id, channelID: channel)?.id == first.device.id)
        #expect(try await f.baidu.devices(appID: f.app.id, userID: "11").map(\.id) == [first.device.id])

        _ = try await f.baidu.addTag(appID: f.app.id, name: "vip", deviceIDs: [first.device.id])
        try await f.baidu.keepMessages(
            [
                BaiduKeptMessage(
                    appID: f.app.id, msgID: "5", userID: "11", channelID: channel, msgKey: nil, message: "hi",
                    messageType: 0, expiresAt: f.clock.now.addingTimeInterval(60), createdAt: f.clock.now)
            ], now: f.clock.now)

        #expect(try await f.baidu.unbindDevice(appID: f.app.id, channelID: channel))
        #expect(try await f.baidu.device(appID: f.app.id, channelID: channel) == nil)
        #expect(try await f.store.device(appID: f.app.id, token: token) == nil)
        #expect(try await f.baidu.tagDeviceCount(appID: f.app.id, name: "vip") == 0)
        #expect(
            try await f.baidu.keptMessages(
                appID: f.app.id, userID: "11", channelID: nil, now: f.clock.now, start: 0, limit: 10
            ).total == 0)
        #expect(try await !f.baidu.unbindDevice(appID: f.app.id, channelID: channel))
        #expect(
            try await f.baidu.bindDevice(
                appID: f.app.id, token: token, environment: .production, userID: "11", channelID: channel,
                channel: .apns
            ).created)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func aChannelBelongsToOneDevice(_ backend: PluginStoreBackend) async throws {
        try await Fixture.on(backend) { f in try await aChannelBelongsToOneDevice(f) }
    }

    func aChannelBelongsToOneDevice(_ f: Fixture) async throws {
        _ = try await f.bind(1)
        await #expect(throws: StoreError.self) {
            _ = try await f.baidu.bindDevice(
                appID: f.app.id, token: DeviceToken(token(2))!, environment: .production, userID: "1",
                channelID: f.channel(1), channel: .apns)
        }
        // Nothing of the refused bind stays behind.
        #expect(try await f.store.device(appID: f.app.id, token: DeviceToken(token(2))!) == nil)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func apikeysAreUniqueAcrossApps(_ backend: PluginStoreBackend) async throws {
        try await Fixture.on(backend) { f in try await apikeysAreUniqueAcrossApps(f) }
    }

    func apikeysAreUniqueAcrossApps(_ f: Fixture) async throws {
        var first = f.app
        first.vendorSettings["baidu"] = ["apikey": "K1", "secret_key_sealed": "x"]
        try await f.store.updateApp(first)
        #expect(try await f.baidu.app(apiKey: "K1")?.id == first.id)
        #expect(try await f.baidu.app(apiKey: "K2") == nil)
        var second = try await f.store.createApp(name: "b", bundleID: "com.example.b", apiKeyHash: "other")
        second.vendorSettings["baidu"] = ["apikey": "K1", "secret_key_sealed": "y"]
        await #expect(throws: StoreError.self) { try await f.store.updateApp(second) }
        second.vendorSettings["baidu"] = ["apikey": "K2", "secret_key_sealed": "y"]
        try await f.store.updateApp(second)
        #expect(try await f.baidu.app(apiKey: "K2")?.id == second.id)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func tags(_ backend: PluginStoreBackend) async throws {
        try await Fixture.on(backend) { f in try await tags(f) }
    }

    func tags(_ f: Fixture) async throws {
        let one = try await f.bind(1)
        let two = try await f.bind(2)
        let (created, isNew) = try await f.baidu.createTag(appID: f.app.id, name: "news")
        #expect(isNew && created.createdAt == f.clock.now)
        #expect(try await !f.baidu.createTag(appID: f.app.id, name: "news").created)
        let (_, added) = try await f.baidu.addTag(appID: f.app.id, name: "news", deviceIDs: [one.id, two.id, 999])
        #expect(added == [one.id, two.id])
        #expect(try await f.baidu.addTag(appID: f.app.id, name: "news", deviceIDs: [one.id]).added.isEmpty)
        _ = try await f.baidu.addTag(appID: f.app.id, name: "sports", deviceIDs: [two.id])
        #expect(try await f.baidu.tagDeviceCount(appID: f.app.id, name: "news") == 2)
        #expect(try await f.baidu.tags(appID: f.app.id, deviceIDs: [two.id]).map(\.name) == ["news", "sports"])

        let page = try await f.baidu.tags(appID: f.app.id, name: nil, start: 1, limit: 5)
        #expect(page.total == 2 && page.tags.map(\.name) == ["sports"])
        #expect(try await f.baidu.tags(appID: f.app.id, name: "news", start: 0, limit: 5).tags.count == 1)

        #expect(try await f.baidu.removeTag(appID: f.app.id, name: "news", deviceIDs: [one.id, 999]) == [one.id])
        #expect(try await f.baidu.deleteTag(appID: f.app.id, name: "sports"))
        #expect(try await !f.baidu.deleteTag(appID: f.app.id, name: "sports"))
        #expect(try await f.baidu.tags(appID: f.app.id, deviceIDs: [two.id]).map(\.name) == ["news"])

        // Tags created through the plain DeviceStore get a creation time too (the trigger).
        try await f.store.addTag(appID: f.app.id, token: DeviceToken(token(1))!, tag: TagName("plain")!)
        #expect(try await f.baidu.tag(appID: f.app.id, name: "plain")?.createdAt != nil)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func keptMessagesExpireAndDelete(_ backend: PluginStoreBackend) async throws {
        try await Fixture.on(backend) { f in try await keptMessagesExpireAndDelete(f) }
    }

    func keptMessagesExpireAndDelete(_ f: Fixture) async throws {
        func kept(_ id: String, channel: String, expiresIn: TimeInterval) -> BaiduKeptMessage {
            BaiduKeptMessage(
                appID: f.app.id, msgID: id, userID: "7", channelID: channel, msgKey: "k\(id)", message: "m\(id)",
                messageType: 1, expiresAt: f.clock.now.addingTimeInterval(expiresIn), createdAt: f.clock.now)
        }
        try await f.baidu.keepMessages(
            [
                kept("1", channel: "100", expiresIn: 60), kept("2", channel: "200", expiresIn: 600),
                kept("3", channel: "100", expiresIn: 600),
            ], now: f.clock.now)
        var listed = try await f.baidu.keptMessages(
            appID: f.app.id, userID: "7", channelID: nil, now: f.clock.now, start: 0, limit: 10)
        #expect(listed.total == 3 && listed.messages.map(\.msgID) == ["1", "2", "3"])
        #expect(listed.messages[0].msgKey == "k1" && listed.messages[0].message == "m1")
        listed = try await f.baidu.keptMessages(
            appID: f.app.id, userID: "7", channelID: "100", now: f.clock.now, start: 1, limit: 10)
        #expect(listed.total == 2 && listed.messages.map(\.msgID) == ["3"])
        f.clock.advance(by: 120)
        listed = try await f.baidu.keptMessages(
            appID: f.app.id, userID: "7", channelID: nil, now: f.clock.now, start: 0, limit: 10)
        #expect(listed.messages.map(\.msgID) == ["2", "3"])
        #expect(
            try await f.baidu.deleteKeptMessages(
                appID: f.app.id, userID: "7", channelID: nil, msgIDs: ["3", "9", "3"]) == ["3"])
        try await f.baidu.discardKeptMessages(appID: f.app.id, msgID: "2")
        #expect(
            try await f.baidu.keptMessages(
                appID: f.app.id, userID: "7", channelID: nil, now: f.clock.now, start: 0, limit: 10
            ).total == 0)
    }

    func job(_ f: Fixture, msgID: String, labels: [String: String], sendAt: Date? = nil) -> PushJob {
        PushJob(
            appID: f.app.id, vendor: "baidu", vendorMessageID: msgID, audience: .all,
            content: PushContent(body: "x"), options: PushOptions(), sendAt: sendAt, labels: labels)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func timersTopicsAndStatistics(_ backend: PluginStoreBackend) async throws {
        try await Fixture.on(backend) { f in try await timersTopicsAndStatistics(f) }
    }

    func timersTopicsAndStatistics(_ f: Fixture) async throws {
        let timer = try await f.store.createMessage(
            job(f, msgID: "100", labels: ["timer_id": "900"], sendAt: f.clock.now.addingTimeInterval(3600)),
            state: .scheduled)
        func complete(_ record: MessageRecord, delivered: Int) async throws {
            _ = try await f.store.startMessage(id: record.id, total: delivered + 1, at: f.clock.now)
            var counts = DeliveryCounts()
            counts.delivered = delivered
            counts.failed = 1
            try await f.store.recordProgress(
                MessageProgress(messageID: record.id, cursor: 5, counts: counts, finalState: .completed),
                at: f.clock.now)
        }
        let topicA1 = try await f.store.createMessage(
            job(f, msgID: "101", labels: ["topic_id": "a"]), state: .queued)
        try await complete(topicA1, delivered: 3)
        f.clock.advance(by: 86_400)
        let topicA2 = try await f.store.createMessage(
            job(f, msgID: "102", labels: ["topic_id": "a"]), state: .queued)
        _ = try await f.store.createMessage(
            job(f, msgID: "103", labels: ["topic_id": "b"]), state: .queued)
        try await complete(topicA2, delivered: 4)

        #expect(
            try await f.baidu.messages(appID: f.app.id, msgIDs: ["102", "nope", "100"]).map(\.id) == [
                topicA2.id, timer.id,
            ])
        let timers = try await f.baidu.timers(appID: f.app.id, timerID: nil, start: 0, limit: 10)
        #expect(timers.total == 1 && timers.messages.first?.id == timer.id)
        #expect(try await f.baidu.timerMessage(appID: f.app.id, timerID: "900")?.id == timer.id)
        #expect(try await f.baidu.timers(appID: f.app.id, timerID: "901", start: 0, limit: 10).total == 0)
        // Not sent yet: no timer records.
        #expect(
            try await f.baidu.sentMessages(
                appID: f.app.id, label: "timer_id", value: "900", from: nil, to: nil, start: 0, limit: 10
            ).isEmpty)
        let sentA = try await f.baidu.sentMessages(
            appID: f.app.id, label: "topic_id", value: "a", from: nil, to: nil, start: 0, limit: 10)
        #expect(sentA.map(\.id) == [topicA2.id, topicA1.id])
        let sentLater = try await f.baidu.sentMessages(
            appID: f.app.id, label: "topic_id", value: "a", from: f.clock.now.addingTimeInterval(-10), to: nil,
            start: 0, limit: 10)
        #expect(sentLater.map(\.id) == [topicA2.id])

        let topics = try await f.baidu.topics(appID: f.app.id, start: 0, limit: 10)
        #expect(topics.total == 2)
        #expect(topics.topics.map(\.topicID) == ["a", "b"])
        #expect(topics.topics[0].pushed == 9 && topics.topics[0].delivered == 7)
        #expect(topics.topics[0].lastPushAt.timeIntervalSince(topics.topics[0].firstPushAt) == 86_400)

        let deliveries = try await f.baidu.topicDeliveries(
            appID: f.app.id, topicID: "a", since: f.clock.now.addingTimeInterval(-3 * 86_400), utcOffset: 8 * 3600)
        #expect(deliveries.values.sorted() == [3, 4])
        for day in deliveries.keys {
            // Each key is a midnight in UTC+8.
            #expect(Int(day.timeIntervalSince1970 + 8 * 3600) % 86_400 == 0)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func deviceDays(_ backend: PluginStoreBackend) async throws {
        try await Fixture.on(backend) { f in try await deviceDays(f) }
    }

    func deviceDays(_ f: Fixture) async throws {
        // 1_700_000_000 is 2023-11-14 22:13:20 UTC = 2023-11-15 06:13:20 in UTC+8.
        _ = try await f.bind(1)
        _ = try await f.bind(2)
        f.clock.advance(by: 86_400)
        _ = try await f.bind(3)
        _ = try await f.bind(1)  // a re-bind is not a new device
        #expect(try await f.baidu.unbindDevice(appID: f.app.id, channelID: f.channel(2)))
        let days = try await f.baidu.deviceDays(appID: f.app.id, now: f.clock.now, days: 3, utcOffset: 8 * 3600)
        #expect(days.count == 3)
        #expect(days.map(\.bound) == [0, 2, 1])
        #expect(days.map(\.unbound) == [0, 0, 1])
        #expect(days.map(\.cumulative) == [0, 2, 3])
        #expect(days.map(\.total) == [0, 2, 2])
        #expect(days.map(\.active) == [0, 0, 2])
        #expect(Int(days[2].start.timeIntervalSince1970 + 8 * 3600) % 86_400 == 0)
        #expect(days[2].start <= f.clock.now && f.clock.now.timeIntervalSince(days[2].start) < 86_400)
    }
}
