import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

@Suite(.serialized) struct AdminMonitorTests {
    private func activity(
        _ id: Int64, state: MessageState, started: Date?, completed: Date?, delivered: Int
    ) -> MessageActivity {
        var counts = DeliveryCounts()
        counts.delivered = delivered
        return MessageActivity(
            id: id, appID: 1, state: state, createdAt: started ?? Date(timeIntervalSince1970: 0), startedAt: started,
            completedAt: completed, total: delivered, counts: counts)
    }

    @Test func rateSpreadsEachMessageOverItsSendingTime() {
        let now = Date(timeIntervalSince1970: 10_000)
        let items = [
            // 600 deliveries over the 60 s ending 30 s ago: 10/s in those buckets.
            activity(
                1, state: .completed, started: now.addingTimeInterval(-90), completed: now.addingTimeInterval(-30),
                delivered: 600),
            // Done within a millisecond: all of it in one bucket.
            activity(
                2, state: .completed, started: now.addingTimeInterval(-15), completed: now.addingTimeInterval(-15),
                delivered: 50),
            // Still sending: 100 delivered since it started 10 s ago, the live count wins.
            activity(3, state: .sending, started: now.addingTimeInterval(-10), completed: nil, delivered: 1),
            // Long before the window.
            activity(
                4, state: .completed, started: now.addingTimeInterval(-7200), completed: now.addingTimeInterval(-7100),
                delivered: 999),
        ]
        let points = AdminMonitorAPI.rate(items, liveDelivered: [3: 100], now: now, window: 120, bucketSeconds: 10)
        let rates = points.map { $0["per_second"] as! Double }
        #expect(rates.count == 12)
        #expect(rates[0] == 0 && rates[1] == 0 && rates[2] == 0, "before message 1 started")
        #expect(rates[3...8].allSatisfy { $0 == 10 })
        #expect(rates[9] == 0)
        #expect(rates[10] == 5, "50 in one bucket of 10 s")
        #expect(rates[11] == 10, "100 over the last 10 s")
        let total = rates.reduce(0) { $0 + $1 * 10 }
        #expect(total == 600 + 50 + 100)
    }

    @Test func monitorAnswersWithEmptyStore() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let monitor = try await client.call("GET", "/monitor?minutes=5&bucket=30")
        #expect(monitor.status == 200)
        #expect((monitor.jsonObject["rate"] as? [Any])?.count == 10)
        #expect(monitor.list("running").isEmpty)
        #expect((monitor.jsonObject["credentials"] as? [String: Any])?["failing"] as? [Any] != nil)
        #expect(try await client.call("GET", "/monitor?minutes=0").errorField == "minutes")
    }

    @Test func monitorShowsFailingAndExpiringCredentials() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let store = gw.runtime.store
        let app = try await store.createApp(name: "商城", bundleID: "com.example.shop", apiKeyHash: "h")
        let failing = try await store.addCredential(
            NewCredential(
                appID: app.id, channel: .apns, kind: .p8, environment: .production, teamID: "TEAM123456",
                keyID: "KEY1234567",
                subject: nil, topics: [], expiresAt: nil, encryptedSecret: [1, 2, 3]))
        try await store.setCredentialStatus(id: failing.id, status: "failing", reason: "InvalidProviderToken")
        _ = try await store.addCredential(
            NewCredential(
                appID: app.id, channel: .apns, kind: .p12, environment: .sandbox, teamID: nil, keyID: nil,
                subject: "CN=Apple Push",
                topics: ["com.example.shop"], expiresAt: Date().addingTimeInterval(10 * 86400), encryptedSecret: [4]))
        let monitor = try await client.call("GET", "/monitor")
        let alerts = try #require(monitor.jsonObject["credentials"] as? [String: Any])
        let failingList = alerts["failing"] as? [[String: Any]] ?? []
        #expect(failingList.count == 1)
        #expect(failingList.first?["status_reason"] as? String == "InvalidProviderToken")
        #expect(failingList.first?["app_name"] as? String == "商城")
        #expect(failingList.first?["encrypted_secret"] == nil)
        let expiring = alerts["expiring"] as? [[String: Any]] ?? []
        #expect(expiring.count == 1)
        #expect(expiring.first?["days_left"] as? Int == 9)
        #expect(expiring.first?["expiring_soon"] as? Bool == true)
    }

    @Test func monitorShowsFailingAndroidCredentials() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let store = gw.runtime.store
        let app = try await store.createApp(name: "聊天", bundleID: "com.example.chat", apiKeyHash: "h")
        let failing = try await store.addChannelCredential(
            NewChannelCredential(
                appID: app.id, channel: .huawei, vendorAppID: "10086", clientID: "10086", encryptedSecret: [1, 2]))
        try await store.setChannelCredentialStatus(id: failing.id, status: "failing", reason: "80200001 bad client")
        _ = try await store.addChannelCredential(
            NewChannelCredential(
                appID: app.id, channel: .fcm, vendorAppID: "p", clientID: "a@p.iam.gserviceaccount.com",
                encryptedSecret: [3]))
        let monitor = try await client.call("GET", "/monitor")
        let alerts = try #require(monitor.jsonObject["credentials"] as? [String: Any])
        let failingList = alerts["failing"] as? [[String: Any]] ?? []
        #expect(failingList.count == 1, "only the failing one of the two")
        #expect(failingList.first?["channel"] as? String == "huawei")
        #expect(failingList.first?["app_name"] as? String == "聊天")
        #expect(failingList.first?["status_reason"] as? String == "80200001 bad client")
        #expect(failingList.first?["vendor_app_id"] as? String == "10086")
        #expect(failingList.first?["encrypted_secret"] == nil)
        #expect((alerts["expiring"] as? [Any])?.isEmpty == true, "Android credentials do not expire")
    }

    /// Issue #41 item 6: only what is failing now counts — a refused credential replaced by a
    /// working one holds nothing — and each code comes with its service's meaning.
    @Test func monitorCountsOnlyCredentialsFailingNowWithTheirMeaning() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let store = gw.runtime.store
        let app = try await store.createApp(name: "shop", bundleID: "com.example.shop", apiKeyHash: "h")
        // Replaced: a refused key, then a working one for both environments.
        let refusedKey = try await store.addCredential(
            NewCredential(
                appID: app.id, channel: .apns, kind: .p8, environment: .production, teamID: "TEAM123456",
                keyID: "KEY1234567",
                subject: nil, topics: [], expiresAt: nil, encryptedSecret: [1], servesBothEnvironments: true))
        try await store.setCredentialStatus(id: refusedKey.id, status: "failing", reason: "InvalidProviderToken")
        _ = try await store.addCredential(
            NewCredential(
                appID: app.id, channel: .apns, kind: .p8, environment: .production, teamID: "TEAM123456",
                keyID: "KEY7654321",
                subject: nil, topics: [], expiresAt: nil, encryptedSecret: [2], servesBothEnvironments: true))
        // Replaced: a refused Xiaomi secret, then one that works.
        let refusedXiaomi = try await store.addChannelCredential(
            NewChannelCredential(
                appID: app.id, channel: .xiaomi, vendorAppID: "com.example.shop", clientID: "2882303761517",
                encryptedSecret: [3]))
        try await store.setChannelCredentialStatus(id: refusedXiaomi.id, status: "failing", reason: "21301")
        _ = try await store.addChannelCredential(
            NewChannelCredential(
                appID: app.id, channel: .xiaomi, vendorAppID: "com.example.shop", clientID: "2882303761517",
                encryptedSecret: [4]))
        // Failing now: the only Huawei and OPPO credentials.
        let huawei = try await store.addChannelCredential(
            NewChannelCredential(
                appID: app.id, channel: .huawei, vendorAppID: "10086", clientID: "10086", encryptedSecret: [5]))
        try await store.setChannelCredentialStatus(id: huawei.id, status: "failing", reason: "1101")
        let oppo = try await store.addChannelCredential(
            NewChannelCredential(
                appID: app.id, channel: .oppo, vendorAppID: "30001", clientID: "appkey", encryptedSecret: [6]))
        try await store.setChannelCredentialStatus(id: oppo.id, status: "failing", reason: "16")

        let monitor = try await client.call("GET", "/monitor")
        let alerts = try #require(monitor.jsonObject["credentials"] as? [String: Any])
        let failing = alerts["failing"] as? [[String: Any]] ?? []
        #expect(failing.map { $0["channel"] as? String } == ["huawei", "oppo"], "\(failing)")
        let meanings = failing.map { $0["meaning"] as? String ?? "" }
        #expect(meanings[0].contains("client ID or client secret is wrong"), "\(meanings)")
        #expect(meanings[1].contains("MasterSecret is wrong"), "\(meanings)")
        // And in Chinese, for the console in Chinese.
        let inChinese = failing.map { ($0["meaning_text"] as? [String: String])?["zh"] ?? "" }
        #expect(inChinese[0].contains("Client Secret 错误"), "\(inChinese)")
        #expect(inChinese[1].contains("MasterSecret 错误"), "\(inChinese)")

        // The replaced ones are listed as not in use.
        let listed = try await client.call("GET", "/apps/\(app.id)/credentials").list("credentials")
        #expect(listed.map { $0["active"] as? Bool } == [false, true])
        #expect(listed.map { $0["environment"] as? String } == ["both", "both"])
    }

    @Test func eachTransportDeclaresWhatItsCredentialCodesMean() {
        let registry = TransportRegistry.standard
        let expected: [(PushChannel, String)] = [
            (.apns, "InvalidProviderToken"), (.fcm, "invalid_grant"), (.huawei, "1101"), (.huawei, "1101/20003"),
            (.honor, "invalid_client"), (.xiaomi, "21301"), (.oppo, "16"), (.vivo, "10000"), (.harmony, "80200001"),
        ]
        for (channel, code) in expected {
            #expect(registry.declaration(of: channel)?.meaning(of: code) != nil, "\(channel.rawValue) \(code)")
        }
        #expect(registry.declaration(of: .huawei)?.meaning(of: "no-such-code") == nil)
    }

    /// Every meaning a transport declares is worded in Chinese too (not the English again), so
    /// the console in Chinese never shows a service code's meaning in English.
    @Test func everyDeclaredMeaningIsInChineseToo() {
        for declaration in TransportRegistry.standard.declarations {
            for (code, meaning) in declaration.serviceCodes {
                let chinese = meaning.zh.unicodeScalars.contains { (0x4E00...0x9FFF).contains($0.value) }
                #expect(chinese && meaning.zh != meaning.en, "\(declaration.name) \(code): \(meaning.zh)")
                #expect(!meaning.en.isEmpty)
            }
        }
    }

    /// A push to an iPhone and an FCM phone: the message view, and the monitor's running and
    /// recent lists, carry the counts of each channel.
    @Test func messagesCarryTheirCountsPerChannel() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let (appID, key) = try await gw.createApp(bundleID: "com.example.channels")
        for (device, body) in [
            (token(1), ["environment": "production", "tags": ["both"]] as [String: Any]),
            ("fcm-token:console-1", ["channel": "fcm", "tags": ["both"]]),
        ] {
            let registered = try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(device)", key: key, json: body)
            #expect(registered.status == 201, "\(registered.text)")
        }
        let push = try await client.call(
            "POST", "/apps/\(appID)/push",
            json: ["audience": ["tag": "both"], "notification": ["alert": ["title": "t", "body": "b"]]])
        #expect(push.status == 202, "\(push.text)")
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))

        let message = try await client.call("GET", "/messages/\(id)")
        let channels = try #require(message.jsonObject["channels"] as? [String: [String: Int]])
        #expect(channels["apns"]?["delivered"] == 1)
        #expect(channels["fcm"]?["delivered"] == 1)
        #expect(channels["huawei"] == nil, "a channel without deliveries is absent")

        let monitor = try await client.call("GET", "/monitor")
        let recent = try #require(monitor.list("recent").first { $0["id"] as? Int == id })
        #expect(recent["channels"] as? [String: [String: Int]] == channels)
        #expect(monitor.list("running").allSatisfy { $0["channels"] is [String: Any] })
        #expect(monitor.list("failures_by_channel").isEmpty)

        // Failures by reason carry their service: one service's Unregistered is not another's.
        var counts = DeliveryCounts()
        counts.failed = 2
        try await gw.runtime.store.recordProgress(
            MessageProgress(
                messageID: Int64(id), cursor: 2, counts: counts, failures: ["Unregistered": 1, "UNREGISTERED": 1],
                deliveries: [
                    NewDelivery(
                        deviceID: nil, token: "a", environment: .production, state: .failed, reason: "Unregistered",
                        attempts: 1, channel: .apns),
                    NewDelivery(
                        deviceID: nil, token: "f", environment: .production, state: .failed, reason: "UNREGISTERED",
                        attempts: 1, channel: .fcm),
                ]), at: Date())
        let failing = try await client.call("GET", "/monitor").list("failures_by_channel")
        #expect(
            failing.map { "\($0["channel"] ?? "")/\($0["reason"] ?? "")/\($0["count"] ?? "")" }.sorted() == [
                "apns/Unregistered/1", "fcm/UNREGISTERED/1",
            ])
    }

    @Test func pushPreviewRendersTheExactPayloadAndTemplates() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let app = try await gw.runtime.store.createApp(name: "a", bundleID: "com.example.a", apiKeyHash: "h")
        let template = try await gw.runtime.store.createTemplate(
            appID: app.id, name: "t", titlePattern: "订单 {0}", bodyPattern: "{1} 已发货")
        let preview = try await client.call(
            "POST", "/apps/\(app.id)/push/preview",
            json: [
                "audience": ["all": true], "template_id": template.id, "arguments": ["A-1", "手环"],
                "notification": ["badge": 2, "custom": ["order": 7]],
            ])
        #expect(preview.status == 200, "\(String(decoding: preview.body, as: UTF8.self))")
        let payload = try #require(preview.jsonObject["payload"] as? String)
        #expect(payload == #"{"aps":{"alert":{"body":"手环 已发货","title":"订单 A-1"},"badge":2},"order":7}"#)
        #expect(preview.jsonObject["bytes"] as? Int == payload.utf8.count)
        #expect(preview.jsonObject["limit"] as? Int == 4096)
        // Whose payload it is, so the console labels it without naming a service itself.
        #expect(preview.jsonObject["payload_channel"] as? String == "apns")

        // 1 and 0 are numbers, not booleans (Linux's JSONSerialization blurs the two).
        let small = try await client.call(
            "POST", "/apps/\(app.id)/push/preview",
            json: ["audience": ["all": true], "notification": ["badge": 1, "custom": ["flag": true, "n": 0]]])
        #expect(small.jsonObject["payload"] as? String == #"{"aps":{"badge":1},"flag":true,"n":0}"#)

        let big = try await client.call(
            "POST", "/apps/\(app.id)/push/preview",
            json: ["audience": ["all": true], "notification": ["alert": ["body": String(repeating: "字", count: 1400)]]])
        #expect((big.jsonObject["error"] as? [String: Any])?["code"] as? String == "tooLarge")

        let badToken = try await client.call(
            "POST", "/apps/\(app.id)/push/preview", json: ["audience": ["token": "x/y"], "notification": [:]])
        #expect(badToken.errorField == "audience.token")
    }
}
