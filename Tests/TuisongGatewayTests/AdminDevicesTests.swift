import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit
import TuisongStore

@testable import TuisongGateway

@Suite(.serialized) struct AdminDevicesTests {
    /// 30 devices: even ones tagged "vip", users u-0…u-2 in turn, tokens with distinct prefixes.
    private func seed(_ gw: RunningGateway) async throws -> (Int64, String) {
        let (appID, key) = try await gw.createApp()
        for n in 1...30 {
            let body: [String: Any] = [
                "environment": n % 3 == 0 ? "production" : "sandbox", "user": "u-\(n % 3)",
                "tags": n % 2 == 0 ? ["vip", "北京"] : ["北京"],
            ]
            let result = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(token(n, prefix: n == 7 ? "cafe" : "ab"))", key: key, json: body)
            #expect(result.status == 201)
        }
        return (appID, key)
    }

    @Test func searchByAllTokenUserAndTagWithPages() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let (appID, _) = try await seed(gw)

        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            var path = "/apps/\(appID)/devices?by=all&limit=12"
            if let cursor { path += "&cursor=\(cursor)" }
            let page = try await client.call("GET", path)
            #expect(page.status == 200)
            #expect(page.jsonObject["total"] as? Int == 30)
            seen += page.list("devices").compactMap { $0["token"] as? String }
            cursor = page.jsonObject["next_cursor"] as? String
            pages += 1
        } while cursor != nil && pages < 10
        #expect(pages == 3)
        #expect(Set(seen).count == 30)

        let prefix = try await client.call("GET", "/apps/\(appID)/devices?by=token&q=CAFE")
        #expect(prefix.list("devices").compactMap { $0["token"] as? String } == [token(7, prefix: "cafe")])
        let tokenPages = try await client.call("GET", "/apps/\(appID)/devices?by=token&q=ab&limit=20")
        #expect(tokenPages.list("devices").count == 20)
        let nextTokenCursor = try #require(tokenPages.jsonObject["next_cursor"] as? String)
        let rest = try await client.call(
            "GET", "/apps/\(appID)/devices?by=token&q=ab&limit=20&cursor=\(nextTokenCursor)")
        #expect(rest.list("devices").count == 9)
        #expect(rest.jsonObject["next_cursor"] is NSNull)

        let user = try await client.call("GET", "/apps/\(appID)/devices?by=user&q=u-1")
        #expect(user.list("devices").count == 10)
        #expect(user.list("devices").allSatisfy { $0["user"] as? String == "u-1" })

        let tag = try await client.call("GET", "/apps/\(appID)/devices?by=tag&q=%E5%8C%97%E4%BA%AC&limit=500")
        #expect(tag.list("devices").count == 30)
        let vip = try await client.call("GET", "/apps/\(appID)/devices?by=tag&q=vip")
        #expect(vip.list("devices").count == 15)

        let tags = try await client.call("GET", "/apps/\(appID)/tags")
        let counts = Dictionary(
            uniqueKeysWithValues: tags.list("tags").map { ($0["name"] as! String, $0["devices"] as! Int) })
        #expect(counts == ["vip": 15, "北京": 30])

        #expect(try await client.call("GET", "/apps/\(appID)/devices?by=token&q=x%20y").errorField == "q")
        #expect(
            try await client.call("GET", "/apps/\(appID)/devices?by=all&cursor=bogus").errorCode == "invalid_cursor")
        #expect(try await client.call("GET", "/apps/\(appID)/devices?by=color").errorField == "by")
    }

    @Test func detailShowsVendorIdsTagsAndInvalidation() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let (appID, _) = try await seed(gw)
        let device = try #require(try await gw.runtime.store.device(appID: appID, token: DeviceToken(token(2))!))
        // The gateway runs these tests on SQLite; the delivery path invalidates through its flushes.
        let sqlite = try #require(gw.runtime.store as? SQLiteStore)
        #expect(try await sqlite.invalidateDevice(id: device.id, reason: "Unregistered"))

        let detail = try await client.call("GET", "/apps/\(appID)/devices/\(token(2).uppercased())")
        #expect(detail.status == 200)
        #expect(detail.jsonObject["token"] as? String == token(2))
        #expect(detail.jsonObject["tags"] as? [String] == ["vip", "北京"])
        #expect(detail.jsonObject["environment"] as? String == "sandbox")
        #expect(detail.jsonObject["invalid_reason"] as? String == "Unregistered")
        #expect(detail.jsonObject["invalidated_at"] is String)
        #expect(detail.jsonObject["baidu_channel_id"] == nil, "vendor fields come from the providers' declarations")
        #expect((detail.jsonObject["vendor_values"] as? [String: Any])?.isEmpty == true, "not bound through any vendor")
        #expect(detail.jsonObject["last_delivery"] is NSNull, "no message yet")
        // The mounted providers (the default config's) declare their columns, in the config's
        // order: derived from the registry, so a vendor added later needs no edit here. A
        // device bound through Baidu has values.
        let columns = detail.jsonObject["vendor_columns"] as? [[String: Any]] ?? []
        let declared = gw.runtime.config.providers.flatMap { name in
            (ProviderRegistry.provider(named: name)?.deviceColumns ?? []).map { "\(name).\($0.key)" }
        }
        #expect(declared.contains("baidu.channel_id"))
        #expect(columns.map { "\($0["vendor"] ?? "").\($0["key"] ?? "")" } == declared)
        let baiduChannel = columns.first { $0["vendor"] as? String == "baidu" && $0["key"] as? String == "channel_id" }
        #expect((baiduChannel?["label"] as? [String: String])?["zh"] == "百度 channel_id")
        var app = try #require(try await gw.runtime.store.app(id: appID))
        app.vendorSettings["baidu"] = ["apikey": "AK-devices"]
        try await gw.runtime.store.updateApp(app)
        let bound = try await http(
            "POST", "\(gw.baseURL)/baidu/device/bind",
            json: ["apikey": "AK-devices", "device_token": token(3), "push_mode": "development"])
        #expect(bound.status == 200)
        let channel = try #require((bound.jsonObject["response_params"] as? [String: Any])?["channel_id"] as? String)
        let boundDetail = try await client.call("GET", "/apps/\(appID)/devices/\(token(3))")
        let values = (boundDetail.jsonObject["vendor_values"] as? [String: [String: String]])?["baidu"]
        #expect(values?["channel_id"] == channel)
        #expect(values?["user_id"]?.isEmpty == false)
        let listed = try await client.call("GET", "/apps/\(appID)/devices?by=token&q=\(token(3))")
        let first = listed.list("devices").first
        #expect((first?["vendor_values"] as? [String: [String: String]])?["baidu"]?["channel_id"] == channel)

        #expect(try await client.call("GET", "/apps/\(appID)/devices/\(token(99))").status == 404)
        #expect(try await client.call("GET", "/apps/\(appID)/devices/not-a-token").status == 404)
    }

    @Test func lastDeliveryFollowsTheNewestMessageAddressingTheDevice() async throws {
        let (gw, _) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        let (appID, _) = try await seed(gw)
        let store = gw.runtime.store
        let device = try #require(try await store.device(appID: appID, token: DeviceToken(token(4))!))
        func message(_ audience: Audience, environment: PushEnvironment? = nil) -> MessageRecord {
            MessageRecord(
                id: 1, appID: appID, vendor: "native", vendorMessageID: nil, audience: audience,
                content: PushContent(), options: PushOptions(environment: environment),
                state: .sending, sendAt: nil, labels: [:], createdAt: Date(), startedAt: nil, completedAt: nil,
                total: nil, cursor: 0, counts: DeliveryCounts(), failures: [:])
        }
        let tags: Set<String> = ["vip", "北京"]
        #expect(AdminDevicesAPI.position(of: device, in: message(.all), tags: tags) == device.id)
        #expect(AdminDevicesAPI.position(of: device, in: message(.all, environment: .production), tags: tags) == nil)
        #expect(AdminDevicesAPI.position(of: device, in: message(.tag("vip")), tags: tags) == device.id)
        #expect(AdminDevicesAPI.position(of: device, in: message(.tag("other")), tags: tags) == nil)
        #expect(AdminDevicesAPI.position(of: device, in: message(.devices([device.id])), tags: tags) == device.id)
        #expect(AdminDevicesAPI.position(of: device, in: message(.tokens([token(9), token(4)])), tags: tags) == 2)
        #expect(AdminDevicesAPI.position(of: device, in: message(.tokens([token(9)])), tags: tags) == nil)
    }

    @Test func devicesShowTheirChannel() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let (appID, key) = try await gw.createApp()
        let android = "fcm-token:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"
        for (device, body) in [
            (token(1), ["environment": "sandbox"] as [String: Any]), (android, ["channel": "fcm"]),
            ("huawei-token-1", ["channel": "huawei"]),
        ] {
            #expect(try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(device)", key: key, json: body).status == 201)
        }
        let page = try await client.call("GET", "/apps/\(appID)/devices?by=all")
        let channels = Dictionary(
            uniqueKeysWithValues: page.list("devices").map { ($0["token"] as? String ?? "", $0["channel"] as? String) })
        #expect(channels == [token(1): "apns", android: "fcm", "huawei-token-1": "huawei"])
        let byPrefix = try await client.call("GET", "/apps/\(appID)/devices?by=token&q=fcm-token")
        #expect(byPrefix.list("devices").compactMap { $0["token"] as? String } == [android])
        let detail = try await client.call("GET", "/apps/\(appID)/devices/\(android)")
        #expect(detail.status == 200)
        #expect(detail.jsonObject["channel"] as? String == "fcm")
    }
}
