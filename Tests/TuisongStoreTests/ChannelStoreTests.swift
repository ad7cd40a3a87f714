import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
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
                appID: app.id, DeviceRegistration(token: token(1), environment: .sandbox, channel: .apns))
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

    @Test(arguments: Backend.allCases)
    func audiencePagesAndDeliveryRowsCarryTheChannel(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let android = try #require(DeviceToken(Self.fcmToken, channel: .fcm))
            _ = try await store.registerDevices(
                appID: app.id,
                [
                    DeviceRegistration(token: token(1), environment: .production, tags: [tag("t")], channel: .apns),
                    DeviceRegistration(token: android, environment: .production, tags: [tag("t")], channel: .fcm),
                ])
            for audience in [Audience.tag("t"), .all, .tokens([token(1).value, Self.fcmToken])] {
                let page = try await store.audiencePage(
                    appID: app.id, audience: audience, environment: nil, after: 0, limit: 10, withRecipientDetails: true
                )
                #expect(page.map(\.channel) == [.apns, .fcm], "\(audience)")
            }
            let ids = try await store.audiencePage(
                appID: app.id, audience: .all, environment: nil, after: 0, limit: 10, withRecipientDetails: false
            ).compactMap(\.deviceID)
            let byID = try await store.audiencePage(
                appID: app.id, audience: .devices(ids), environment: .production, after: 0, limit: 10,
                withRecipientDetails: false)
            #expect(byID.map(\.channel) == [.apns, .fcm])
            let unregistered = try await store.audiencePage(
                appID: app.id, audience: .tokens([token(9).value, "never-registered:APA91b"]), environment: nil,
                after: 0,
                limit: 10, withRecipientDetails: false)
            #expect(
                unregistered.map(\.skipReason) == [nil, "UnknownDevice"],
                "an unregistered APNs token is tried on APNs; an unregistered Android token has no known channel")
        }
    }

    static let huaweiToken = "IQAAAACy0kYzAAAa8bWq1EqNHcBzC0m0pSBcbmKy7p5lHvHcUrMFPt4f2xbhkfXyWq0Q1Kq"

    /// Issue #41, item 1: the environment is every device's. With `environment: sandbox`, every
    /// audience holds the devices of every channel, and those registered `production` (an
    /// Android or HarmonyOS phone as much as an iPhone) are skipped `other_environment`:
    /// counted, never sent, never silently absent.
    @Test(arguments: Backend.allCases)
    func anEnvironmentSkipsOtherEnvironmentsOnEveryChannel(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let fcm = try #require(DeviceToken(Self.fcmToken, channel: .fcm))
            let huawei = try #require(DeviceToken(Self.huaweiToken, channel: .huawei))
            let harmonyTestPhone = try #require(DeviceToken("harmony-test-phone", channel: .harmony))
            _ = try await store.registerDevices(
                appID: app.id,
                [
                    DeviceRegistration(token: token(1), environment: .sandbox, tags: [tag("t")], channel: .apns),
                    DeviceRegistration(token: token(2), environment: .production, tags: [tag("t")], channel: .apns),
                    DeviceRegistration(token: fcm, environment: .production, tags: [tag("t")], channel: .fcm),
                    DeviceRegistration(token: huawei, environment: .production, tags: [tag("t")], channel: .huawei),
                    DeviceRegistration(
                        token: harmonyTestPhone, environment: .sandbox, tags: [tag("t")], channel: .harmony),
                ])
            let other = AudienceEntry.otherEnvironment
            for audience in [Audience.tag("t"), .all] {
                for details in [false, true] {
                    let page = try await store.audiencePage(
                        appID: app.id, audience: audience, environment: .sandbox, after: 0, limit: 10,
                        withRecipientDetails: details)
                    #expect(
                        page.map(\.token) == [
                            token(1).value, token(2).value, Self.fcmToken, Self.huaweiToken, "harmony-test-phone",
                        ])
                    #expect(page.map(\.channel) == [.apns, .apns, .fcm, .huawei, .harmony])
                    #expect(page.map(\.skipReason) == [nil, other, other, other, nil])
                    let production = try await store.audiencePage(
                        appID: app.id, audience: audience, environment: .production, after: 0, limit: 10,
                        withRecipientDetails: details)
                    #expect(production.map(\.skipReason) == [other, nil, nil, nil, other])
                    let each = try await store.audiencePage(
                        appID: app.id, audience: audience, environment: nil, after: 0, limit: 10,
                        withRecipientDetails: details)
                    #expect(each.allSatisfy { $0.skipReason == nil }, "no environment: each device in its own")
                    #expect(each.map(\.environment) == [.sandbox, .production, .production, .production, .sandbox])
                }
                // The run's total walks every entry; the environment's own devices are two.
                #expect(try await store.audienceCount(appID: app.id, audience: audience) == 5)
                #expect(
                    try await store.audienceCount(appID: app.id, audience: audience, environment: .sandbox, upTo: nil)
                        == 2)
            }
            let ids = try await store.audiencePage(
                appID: app.id, audience: .all, environment: nil, after: 0, limit: 10, withRecipientDetails: false
            ).compactMap(\.deviceID)
            let byID = try await store.audiencePage(
                appID: app.id, audience: .devices(ids), environment: .sandbox, after: 0, limit: 10,
                withRecipientDetails: false)
            #expect(byID.map(\.skipReason) == [nil, other, other, other, nil])
            // A registered token is what it registered as; an unregistered APNs token is sent
            // in the push's environment.
            let byToken = try await store.audiencePage(
                appID: app.id,
                audience: .tokens([token(2).value, Self.fcmToken, "harmony-test-phone", token(9).value]),
                environment: .sandbox, after: 0, limit: 10, withRecipientDetails: false)
            #expect(byToken.map(\.environment) == [.production, .production, .sandbox, .sandbox])
            #expect(byToken.map(\.channel) == [.apns, .fcm, .harmony, .apns])
            #expect(byToken.map(\.skipReason) == [other, other, nil, nil])
        }
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

            // A refused credential added after a working one does not replace it; with none
            // working, the newest serves (its pushes held with its reason).
            let refused = try await store.addChannelCredential(
                NewChannelCredential(
                    appID: app.id, channel: .fcm, vendorAppID: "typo-project", clientID: "svc@typo.iam",
                    encryptedSecret: [6]))
            try await store.setChannelCredentialStatus(id: refused.id, status: "failing", reason: "invalid_client")
            #expect(
                try await store.activeChannelCredential(appID: app.id, channel: .fcm, selector: nil)?.id == fallback.id)
            try await store.setChannelCredentialStatus(id: fallback.id, status: "failing", reason: "invalid_client")
            #expect(
                try await store.activeChannelCredential(appID: app.id, channel: .fcm, selector: nil)?.id == refused.id)
            #expect(
                try await store.activeChannelCredential(appID: app.id, channel: .fcm, selector: "1234")?.id
                    == chosen.id,
                "a failing one still serves when it is the only one")
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
