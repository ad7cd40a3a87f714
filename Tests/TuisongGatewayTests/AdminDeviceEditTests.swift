import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import TuisongGateway

/// What the console changes (#41 items 8, 11, 13), through the admin API on both databases,
/// read back through the native API: the native API's rules hold on both sides.
@Suite(.serialized) struct AdminDeviceEditTests {
    private func start(_ backend: PluginStoreBackend) async throws -> (RunningGateway, AdminTestClient) {
        let gw = try await TestGateway.start(
            environment: ["TUISONG_ADMIN_PASSWORD": AdminTestClient.password], database: backend)
        let client = AdminTestClient(baseURL: gw.baseURL)
        try await client.login()
        return (gw, client)
    }

    @Test(arguments: PluginStoreBackend.allCases) func theConsoleChangesAUserAndTagsAndDeletesADevice(
        _ backend: PluginStoreBackend
    ) async throws {
        let (gw, client) = try await start(backend)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp()
        let device = "\(gw.baseURL)/api/v1/devices/phone-1"
        let registered = try await http(
            "PUT", device, key: key, json: ["channel": "fcm", "user": "u-1", "tags": ["beta"]])
        #expect(registered.status == 201)
        let path = "/apps/\(appID)/devices/phone-1"

        let changed = try await client.call("PATCH", path, json: ["user": "u-2"])
        #expect(changed.status == 200 && changed.jsonObject["user"] as? String == "u-2")
        #expect(try await http("GET", device, key: key).jsonObject["user"] as? String == "u-2")
        let detached = try await client.call("PATCH", path, json: ["user": NSNull()])
        #expect(detached.status == 200 && detached.jsonObject["user"] is NSNull)
        #expect(try await http("GET", device, key: key).jsonObject["user"] is NSNull)
        // The channel and environment stay as the app registered them.
        #expect(detached.jsonObject["channel"] as? String == "fcm")
        let empty = try await client.call("PATCH", path, json: ["user": ""])
        #expect(empty.status == 400 && empty.errorCode == "invalid_user")

        let added = try await client.call("PUT", path + "/tags/%E6%B5%8B%E8%AF%95")
        #expect(added.status == 200 && added.jsonObject["tags"] as? [String] == ["beta", "测试"])
        let removed = try await client.call("DELETE", path + "/tags/beta")
        #expect(removed.status == 200 && removed.jsonObject["tags"] as? [String] == ["测试"])
        #expect(try await client.call("DELETE", path + "/tags/beta").errorCode == "tag_not_found")
        #expect(try await client.call("PUT", path + "/tags/a%20b").errorCode == "invalid_tag")
        #expect(try await http("GET", device + "/tags", key: key).jsonObject["tags"] as? [String] == ["测试"])

        #expect(try await client.call("DELETE", path).status == 204)
        #expect(try await http("GET", device, key: key).status == 404)
        #expect(try await client.call("DELETE", path).status == 404)
        #expect(try await client.call("PUT", path + "/tags/x").status == 404)
        #expect(try await client.call("DELETE", path, csrf: false).status == 403)
    }

    @Test(arguments: PluginStoreBackend.allCases) func anEmptyAudienceIsWarnedAndAScheduledPushCancelled(
        _ backend: PluginStoreBackend
    ) async throws {
        let (gw, client) = try await start(backend)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp()
        let empty = try await client.call(
            "POST", "/apps/\(appID)/push", json: ["audience": ["tag": "nobody"], "notification": ["alert": "hi"]])
        #expect(empty.status == 202)
        #expect(empty.jsonObject["warnings"] as? [String] == ["audience_empty"])

        let scheduled = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: [
                "audience": ["all": true], "send_at": Int(Date().timeIntervalSince1970) + 3600,
                "notification": ["alert": "later"],
            ])
        let id = try #require(scheduled.jsonObject["message_id"] as? Int)
        let view = try await client.call("GET", "/messages/\(id)")
        #expect(view.jsonObject["state"] as? String == "scheduled" && view.jsonObject["send_at"] is String)
        let cancelled = try await client.call("DELETE", "/messages/\(id)")
        #expect(cancelled.status == 200 && cancelled.jsonObject["state"] as? String == "cancelled")
        #expect(try await client.call("DELETE", "/messages/\(id)").errorCode == "not_scheduled")
        let native = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)", key: key)
        #expect(native.jsonObject["state"] as? String == "cancelled")
    }
}
