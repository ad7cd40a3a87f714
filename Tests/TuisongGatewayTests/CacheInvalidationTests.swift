import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Two bugs found in review (issue #9, item 8), each through the running gateway and the APNs
/// mock over TLS + HTTP/2.
@Suite(.serialized) struct CacheInvalidationTests {
    func pushAll(_ gw: RunningGateway, _ key: String) async throws -> Int {
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "x"]])
        #expect(push.status == 202)
        let id = try #require(push.jsonObject["message_id"] as? Int)
        #expect(try await gw.completed(messageID: Int64(id)).counts.delivered == 1)
        return id
    }

    @Test func aBundleIDChangedInTheConsoleIsTheTopicOfTheNextPush() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let created = try await client.call("POST", "/apps", json: ["name": "n", "bundle_id": "com.example.old"])
        let key = try #require(created.jsonObject["api_key"] as? String)
        let id = try #require((created.jsonObject["app"] as? [String: Any])?["id"] as? Int)
        let device = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: key, json: ["environment": "production"])
        #expect(device.status == 201)
        let mock = try #require(gw.runtime.localMock)

        _ = try await pushAll(gw, key)
        #expect(mock.receivedNotifications().map(\.topic) == ["com.example.old"])

        let changed = try await client.call("PUT", "/apps/\(id)", json: ["bundle_id": "com.example.new"])
        #expect(changed.status == 200)
        mock.resetRecorded()
        _ = try await pushAll(gw, key)
        #expect(mock.receivedNotifications().map(\.topic) == ["com.example.new"], "not the cached old bundle id")
    }

    @Test func deletingACredentialClosesItsPool() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp()
        let credential = try await gw.runtime.addCredential(
            .p8(pem: try PrivateKey.generateP256().pkcs8PEM(), keyID: "POOLKEY001", teamID: "POOLTEAM01"),
            appID: appID, environment: .production)
        _ = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: key, json: ["environment": "production"])
        let mock = try #require(gw.runtime.localMock)

        _ = try await pushAll(gw, key)
        #expect(mock.receivedNotifications().map(\.keyID) == ["POOLKEY001"])
        #expect(apnsPools(gw) == 1)
        #expect(mock.statistics.connectionsOpen >= 1)

        // What the console's delete does.
        #expect(try await gw.runtime.credentialBackend.remove(credential))
        #expect(apnsPools(gw) == 0, "the deleted credential's pool is closed")
        #expect(await eventually { mock.statistics.connectionsOpen == 0 }, "its APNs connections are gone")
    }
}

/// How many pools the running gateway's APNs transport (made by the registry) has open.
private func apnsPools(_ gw: RunningGateway) -> Int? {
    (gw.runtime.transports.members[.apns]?.transport as? APNsPushTransport)?.openPoolCount
}
