import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongStore

/// A device that is deleted, or whose account is deleted or unbound, receives nothing more:
/// its held, queued and sending rows are skipped in the same transaction, and neither a
/// credential's release nor a retry brings them back (issue #40, item 8).
@Suite struct DeletedDeviceDeliveryTests {
    static func register(_ store: any GatewayStore, _ appID: Int64, _ n: Int) async throws -> Device {
        try await store.registerDevice(
            appID: appID,
            DeviceRegistration(
                token: DeviceToken(testToken(n, prefix: "de"))!, environment: .production, channel: .apns)
        ).device
    }

    static func bind(_ store: any GatewayStore, _ appID: Int64, _ account: String, _ n: Int) async throws -> Device {
        try await store.bindDevice(
            appID: appID, account: account,
            registration: DeviceRegistration(
                token: DeviceToken(testToken(n, prefix: "de"))!, environment: .production, channel: .apns),
            credentialSelector: nil)
    }

    static func pending(_ device: Device, _ state: DeliveryState, next: Date) -> NewDelivery {
        NewDelivery(
            deviceID: device.id, token: device.token, environment: .production, state: state,
            reason: state == .held ? "no_credential" : "InternalServerError", attempts: 1, nextAttemptAt: next,
            channel: .apns)
    }

    /// A message whose audience is sent, with `rows` pending.
    static func message(_ store: any GatewayStore, _ appID: Int64, _ rows: [NewDelivery], at now: Date) async throws
        -> Int64
    {
        let message = try await store.createMessage(
            PushJob(appID: appID, vendor: "native", audience: .all, content: PushContent(), options: PushOptions()),
            state: .queued)
        #expect(try await store.startMessage(id: message.id, total: rows.count, at: now))
        var counts = DeliveryCounts()
        for row in rows { counts[row.state] += 1 }
        try await store.recordProgress(
            MessageProgress(
                messageID: message.id, cursor: Int64(rows.count), counts: counts, deliveries: rows,
                finalState: .completed), at: now)
        return message.id
    }

    static func skipped(_ store: any GatewayStore, _ messageID: Int64) async throws -> [String: String] {
        let page = try await store.deliveries(messageID: messageID, state: .skipped, cursor: nil, limit: 100)
        return Dictionary(uniqueKeysWithValues: page.items.map { ($0.token, $0.reason ?? "") })
    }

    @Test(arguments: Backend.allCases) func aDeletedDeviceIsNeitherReleasedNorRetried(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let appID = try await makeApp(store).id
            let now = SQLTime.date(SQLTime.milliseconds(Date()))
            let (a, b, c) = (
                try await Self.register(store, appID, 1), try await Self.register(store, appID, 2),
                try await Self.register(store, appID, 3)
            )
            let messageID = try await Self.message(
                store, appID,
                [
                    Self.pending(a, .held, next: now.addingTimeInterval(3600)),
                    Self.pending(b, .held, next: now.addingTimeInterval(3600)),
                    Self.pending(c, .queued, next: now),
                ], at: now)
            // c's retry is in flight when its device is deleted.
            let claimed = try await store.claimDueDeliveries(now: now, limit: 10)
            #expect(claimed.map(\.token) == [c.token])

            #expect(try await store.deleteDevice(appID: appID, token: DeviceToken(a.token)!))
            #expect(try await store.deleteDevice(appID: appID, token: DeviceToken(c.token)!))
            var progress = try #require(try await store.messageProgress(id: messageID))
            #expect(progress.counts.held == 1 && progress.counts.sending == 0 && progress.counts.skipped == 2)
            #expect(progress.skips == [DeliveryCancellation.deviceDeleted: 2])
            #expect(
                try await Self.skipped(store, messageID) == [
                    a.token: "device_deleted", c.token: "device_deleted",
                ])

            // The service asks for c's retry again: the row stays cancelled.
            try await store.applyDeliveryUpdates(
                claimed.map {
                    DeliveryUpdate(
                        deliveryID: $0.id, messageID: messageID, from: .sending, to: .queued,
                        reason: "InternalServerError", serviceMessageID: nil, attempts: 2, nextAttemptAt: now)
                }, at: now)
            // The credential comes: b alone is released, then sent.
            #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .production, now: now) == 1)
            let retried = try await store.claimDueDeliveries(now: now, limit: 10)
            #expect(retried.map(\.token) == [b.token])
            try await store.applyDeliveryUpdates(
                retried.map {
                    DeliveryUpdate(
                        deliveryID: $0.id, messageID: messageID, from: .sending, to: .delivered, reason: nil,
                        serviceMessageID: nil, attempts: 2, nextAttemptAt: nil)
                }, at: now)
            progress = try #require(try await store.messageProgress(id: messageID))
            #expect(progress.counts.delivered == 1 && progress.counts.skipped == 2 && progress.counts.queued == 0)
            #expect(progress.completedAt == now, "nothing left to wait for")
        }
    }

    /// The last pending row of a message cancelled completes the message.
    @Test(arguments: Backend.allCases) func cancellingTheLastHeldRowCompletesTheMessage(_ backend: Backend) async throws
    {
        try await withStore(backend) { store in
            let appID = try await makeApp(store).id
            let now = SQLTime.date(SQLTime.milliseconds(Date()))
            let device = try await Self.register(store, appID, 7)
            let messageID = try await Self.message(
                store, appID, [Self.pending(device, .held, next: now.addingTimeInterval(60))], at: now)
            #expect(try await store.messageProgress(id: messageID)?.completedAt == nil)
            #expect(try await store.deleteDevice(appID: appID, token: DeviceToken(device.token)!))
            let progress = try #require(try await store.messageProgress(id: messageID))
            #expect(progress.completedAt != nil && progress.counts.held == 0 && progress.counts.skipped == 1)
            #expect(try await store.pendingDeliveries(messageID: messageID).isEmpty)
        }
    }

    @Test(arguments: Backend.allCases) func aDeletedOrUnboundAccountsDevicesGetNothingMore(_ backend: Backend)
        async throws
    {
        try await withStore(backend) { store in
            let appID = try await makeApp(store).id
            let now = SQLTime.date(SQLTime.milliseconds(Date()))
            let alice = try await Self.bind(store, appID, "alice", 1)
            let bob = try await Self.bind(store, appID, "bob", 2)
            let carol = try await Self.bind(store, appID, "carol", 3)
            let messageID = try await Self.message(
                store, appID, [alice, bob, carol].map { Self.pending($0, .held, next: now.addingTimeInterval(3600)) },
                at: now)

            #expect(try await store.deleteAccount(appID: appID, account: "bob"))
            #expect(try await store.unbindDevice(appID: appID, token: DeviceToken(carol.token)!))
            #expect(
                try await Self.skipped(store, messageID) == [
                    bob.token: DeliveryCancellation.accountDeleted,
                    carol.token: DeliveryCancellation.deviceUnbound,
                ])
            let progress = try #require(try await store.messageProgress(id: messageID))
            #expect(progress.skips == ["account_deleted": 1, "device_unbound": 1])
            #expect(progress.counts.held == 1)
            #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .production, now: now) == 1)
            #expect(try await store.claimDueDeliveries(now: now, limit: 10).map(\.token) == [alice.token])
        }
    }

    /// Another user logs in on the device (its token bound to another account): what was held
    /// for the first user is not released to it. The same account binding again (a token
    /// report on every start) cancels nothing.
    @Test(arguments: Backend.allCases) func aDeviceMovingToAnotherAccountLosesWhatWasHeldForTheFirst(
        _ backend: Backend
    ) async throws {
        try await withStore(backend) { store in
            let appID = try await makeApp(store).id
            let now = SQLTime.date(SQLTime.milliseconds(Date()))
            let shared = try await Self.bind(store, appID, "alice", 1)
            let own = try await Self.bind(store, appID, "carol", 2)
            let messageID = try await Self.message(
                store, appID, [shared, own].map { Self.pending($0, .held, next: now.addingTimeInterval(3600)) }, at: now
            )
            _ = try await Self.bind(store, appID, "carol", 2)
            #expect(try await Self.skipped(store, messageID).isEmpty)
            let moved = try await Self.bind(store, appID, "bob", 1)
            #expect(moved.id == shared.id)
            #expect(try await Self.skipped(store, messageID) == [shared.token: "device_unbound"])
            #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .production, now: now) == 1)
            #expect(try await store.claimDueDeliveries(now: now, limit: 10).map(\.token) == [own.token])
        }
    }

    /// A page read, then its device deleted, then the page's outcomes flushed: the held row the
    /// flush writes for the device is skipped at once (the delete had no row to cancel yet), and
    /// its failed row is kept without its device rather than failing the flush.
    @Test(arguments: Backend.allCases) func aFlushForADeviceDeletedSinceItsPageSkipsItsPendingRows(_ backend: Backend)
        async throws
    {
        try await withStore(backend) { store in
            let appID = try await makeApp(store).id
            let now = SQLTime.date(SQLTime.milliseconds(Date()))
            let gone = try await Self.register(store, appID, 1)
            let failedGone = try await Self.register(store, appID, 2)
            let kept = try await Self.register(store, appID, 3)
            #expect(try await store.deleteDevice(appID: appID, token: DeviceToken(gone.token)!))
            #expect(try await store.deleteDevice(appID: appID, token: DeviceToken(failedGone.token)!))
            var failed = Self.pending(failedGone, .queued, next: now)
            failed.state = .failed
            failed.reason = "BadDeviceToken"
            failed.nextAttemptAt = nil
            let messageID = try await Self.message(
                store, appID,
                [
                    Self.pending(gone, .held, next: now.addingTimeInterval(3600)),
                    Self.pending(kept, .held, next: now.addingTimeInterval(3600)), failed,
                ], at: now)
            let progress = try #require(try await store.messageProgress(id: messageID))
            #expect(progress.counts.held == 1 && progress.counts.skipped == 1 && progress.counts.failed == 1)
            #expect(progress.skips == [DeliveryCancellation.deviceDeleted: 1])
            #expect(try await Self.skipped(store, messageID) == [gone.token: "device_deleted"])
            let failedRows = try await store.deliveries(messageID: messageID, state: .failed, cursor: nil, limit: 10)
            #expect(failedRows.items.map(\.deviceID) == [nil])
            #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .production, now: now) == 1)
            #expect(try await store.claimDueDeliveries(now: now, limit: 10).map(\.token) == [kept.token])
        }
    }
}
