import Foundation
import Testing
import TuisongCore

@testable import TuisongStore

/// v9: a device's channel, carried into audience pages and delivery rows; Android credentials
/// in their own table.
@Suite struct ChannelStoreTests {
    static let fcmToken = "dGVzdC1pbnN0YW5jZQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx1l8ELEtGjyL4UbCk7xMWIG_Zz"

    @Test(arguments: Backend.allCases)
    func aDeviceKeepsItsChannelAndMovesWhenReRegistered(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let android = try #require(DeviceToken(Self.fcmToken, channel: .fcm))
            let (device, created) = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: android, environment: .production, channel: .fcm))
            #expect(created)
            #expect(device.channel == .fcm)
            #expect(device.token == Self.fcmToken)
            let apns = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(1), environment: .sandbox))
            #expect(apns.device.channel == .apns, "a registration without a channel is APNs")
            let fetched = try await store.device(appID: app.id, token: android)
            #expect(fetched?.channel == .fcm)
            // The same token registered on another channel is the same device, moved.
            let moved = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: android, environment: .production, channel: .huawei))
            #expect(!moved.created)
            #expect(moved.device.id == device.id)
            #expect(moved.device.channel == .huawei)
        }
    }

    // SQLite only until the PostgreSQL store has audience pages (issue #21, group A).
    @Test func audiencePagesAndDeliveryRowsCarryTheChannel() async throws {
        let f = try StoreFixture()
        defer { f.tearDown() }
        let app = try await makeApp(f.store)
        let android = try #require(DeviceToken(Self.fcmToken, channel: .fcm))
        _ = try await f.store.registerDevices(
            appID: app.id,
            [
                DeviceRegistration(token: token(1), environment: .production, tags: [tag("t")]),
                DeviceRegistration(token: android, environment: .production, tags: [tag("t")], channel: .fcm),
            ])
        for audience in [Audience.tag("t"), .all, .tokens([token(1).value, Self.fcmToken])] {
            let page = try await f.store.audiencePage(
                appID: app.id, audience: audience, environment: nil, after: 0, limit: 10, withRecipientDetails: true)
            #expect(page.map(\.channel) == [.apns, .fcm], "\(audience)")
        }
        let ids = try await f.store.audiencePage(
            appID: app.id, audience: .all, environment: nil, after: 0, limit: 10, withRecipientDetails: false
        ).compactMap(\.deviceID)
        let byID = try await f.store.audiencePage(
            appID: app.id, audience: .devices(ids), environment: .production, after: 0, limit: 10,
            withRecipientDetails: false)
        #expect(byID.map(\.channel) == [.apns, .fcm])
        let unregistered = try await f.store.audiencePage(
            appID: app.id, audience: .tokens([token(9).value, "never-registered:APA91b"]), environment: nil, after: 0,
            limit: 10, withRecipientDetails: false)
        #expect(
            unregistered.map(\.skipReason) == [nil, "UnknownDevice"],
            "an unregistered APNs token is tried on APNs; an unregistered Android token has no known channel")
    }

    @Test(arguments: Backend.allCases)
    func channelCredentialsAreTheirOwnAndPickedBySelector(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let fallback = try await store.addChannelCredential(
                NewChannelCredential(
                    appID: app.id, channel: .fcm, vendorAppID: "demo-project", clientID: "svc@demo.iam",
                    encryptedSecret: [1, 2, 3]))
            let chosen = try await store.addChannelCredential(
                NewChannelCredential(
                    appID: app.id, channel: .fcm, selector: "1234", vendorAppID: "other-project",
                    clientID: "svc@other.iam", encryptedSecret: [4]))
            _ = try await store.addChannelCredential(
                NewChannelCredential(
                    appID: app.id, channel: .huawei, vendorAppID: "104000000", clientID: "104000000",
                    encryptedSecret: [5]))
            #expect(
                try await store.activeChannelCredential(appID: app.id, channel: .fcm, selector: nil)?.id == fallback.id)
            #expect(
                try await store.activeChannelCredential(appID: app.id, channel: .fcm, selector: "1234")?.id == chosen.id
            )
            #expect(try await store.activeChannelCredential(appID: app.id, channel: .honor, selector: nil) == nil)
            #expect(try await store.credentials(appID: app.id).isEmpty, "APNs credentials are not mixed in")
            #expect(try await store.channelCredentials(appID: app.id).map(\.channel) == [.fcm, .fcm, .huawei])

            try await store.setChannelCredentialStatus(id: chosen.id, status: "failing", reason: "invalid_grant")
            let failing = try #require(try await store.channelCredential(id: chosen.id))
            #expect(failing.isFailing)
            #expect(failing.statusReason == "invalid_grant")
            #expect(failing.encryptedSecret == [4])
            #expect(try await store.deleteChannelCredential(id: chosen.id))
            #expect(try await store.channelCredential(id: chosen.id) == nil)
            await #expect(throws: StoreError.self) {
                _ = try await store.addChannelCredential(
                    NewChannelCredential(
                        appID: app.id, channel: .apns, vendorAppID: "x", clientID: "y", encryptedSecret: []))
            }
        }
    }

    @Test func theOldDatabaseMigratesItsDevicesOntoAPNs() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        try FileManager.default.createDirectory(
            atPath: (database.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: VendorColumnsMigrationTests.fixture.path, toPath: database.path)
        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        let page = try await store.searchDevices(appID: 1, query: .all, cursor: nil, limit: 10)
        #expect(page.items.count == 2)
        #expect(page.items.allSatisfy { $0.channel == .apns })
    }
}
