import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongSQLStore

/// A credential of an environment releases the holds of the channels whose credentials serve
/// one, as their transports declare (`ChannelCatalog.environmentChannels`), never another
/// channel's: that channel's holds wait for its own credential.
@Suite struct HeldReleaseChannelTests {
    static let fcmToken = "dGVzdC1pbnN0YW5jZQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx1l8ELEtGjyL4UbCk7xMWIG_Zz"

    @Test(arguments: Backend.allCases)
    func anEnvironmentReleasesOnlyTheChannelsWhoseCredentialsServeOne(_ backend: Backend) async throws {
        // The catalog as the gateway declares it; alone, this suite runs before anything else does.
        StandardChannels.declare()
        let environmentChannels = ChannelCatalog.shared.environmentChannels
        #expect(environmentChannels.contains(.apns) && !environmentChannels.contains(.fcm))
        try await withStore(backend) { store in
            let appID = try await makeApp(store).id
            let phone = try await store.registerDevice(
                appID: appID, DeviceRegistration(token: token(1), environment: .production, channel: .apns)
            ).device
            let android = try await store.registerDevice(
                appID: appID,
                DeviceRegistration(
                    token: DeviceToken(Self.fcmToken, channel: .fcm)!, environment: .production, channel: .fcm)
            ).device
            let messageID = try await store.sharedDatabase.write { db in
                try db.execute(
                    """
                    INSERT INTO messages (app_id, vendor, audience, content, options, state, held, created_at)
                    VALUES (?, 'native', '"all"', '{}', '{}', 'sending', 2, 5)
                    """, [.integer(appID)])
                let id = db.lastInsertedRowID
                for device in [phone, android] {
                    try db.execute(
                        """
                        INSERT INTO deliveries (message_id, device_id, token, environment, channel, state, updated_at)
                        VALUES (?, ?, ?, 'production', ?, 'held', 1)
                        """,
                        [.integer(id), .integer(device.id), .text(device.token), .text(device.channel.rawValue)])
                }
                return id
            }

            #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .sandbox, now: Date()) == 0)
            #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .production, now: Date()) == 1)
            #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .production, now: Date()) == 0)
            let held = try await store.deliveries(messageID: messageID, state: .held, cursor: nil, limit: 10)
            #expect(held.items.map(\.channel) == [.fcm])
            #expect(try await store.releaseHeldDeliveries(appID: appID, channel: .fcm, now: Date()) == 1)
            let queued = try await store.deliveries(messageID: messageID, state: .queued, cursor: nil, limit: 10)
            #expect(queued.items.count == 2)
        }
    }
}
