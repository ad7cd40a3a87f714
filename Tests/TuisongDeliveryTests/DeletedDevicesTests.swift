import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongDelivery
import TuisongPluginTestKit

/// Devices deleted while a push to them is in flight (issue #33, item 1): the flush that
/// records their outcomes must commit (the rows keep token and outcome, without the device),
/// and a restart must leave the message's counts as they were. A held outcome of a device
/// deleted meanwhile is stored skipped `device_deleted`, so no credential added later can
/// release it to the device that is gone (issue #40, item 8).
@Suite(.serialized) struct DeletedDevicesTests {
    @Test(arguments: PluginStoreBackend.allCases) func outcomesOfDevicesDeletedMidPushAreKeptAcrossARestart(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(100, tag: "mixed", prefix: "aa")
        try await f.seed(100, tag: "mixed", prefix: "bb")
        // The "bb" devices are held (a refused credential); every answer comes late enough for
        // the devices to be deleted before the page is flushed.
        let sender = ScriptedTransport(answering: .after(.milliseconds(300))) { token, _ in
            token.hasPrefix("bb") ? .held(.service("InvalidProviderToken")) : .delivered(serviceMessageID: nil)
        }
        let engine = f.engine(sender, pageSize: 500, workers: 500)
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("mixed")))
        try await waitUntil("all 200 pushes handed over", within: .seconds(20)) { sender.totalAttempts >= 200 }
        for n in 1...100 {
            #expect(try await f.store.deleteDevice(appID: f.appID, token: DeviceToken(testToken(n, prefix: "bb"))!))
        }
        let status = try await f.waitUntilCompleted(engine, record.id, timeout: .seconds(20))
        #expect(status.counts.delivered == 100)
        #expect(status.counts.held == 0 && status.counts.skipped == 100)
        await engine.stop()

        let before = try #require(try await f.store.message(id: record.id))
        #expect(before.state == .completed)
        #expect(before.counts.delivered == 100 && before.counts.held == 0 && before.counts.skipped == 100)
        #expect(before.skips == [DeliveryCancellation.deviceDeleted: 100])
        #expect(before.total == 200 && before.completedAt != nil)
        let skipped = try await f.store.deliveries(messageID: record.id, state: .skipped, cursor: nil, limit: 500)
        #expect(skipped.items.count == 100)
        #expect(
            skipped.items.allSatisfy {
                $0.deviceID == nil && $0.token.hasPrefix("bb") && $0.reason == DeliveryCancellation.deviceDeleted
            })

        // A restart finds nothing to do and changes nothing.
        let restarted = f.engine(ScriptedTransport())
        try await restarted.start()
        let again = try #require(try await engine.status(messageID: record.id))
        await restarted.stop()
        let after = try #require(try await f.store.message(id: record.id))
        #expect(after.counts == before.counts)
        #expect(after.total == before.total)
        #expect(after.state == .completed)
        #expect(again.counts == before.counts)
    }
}
