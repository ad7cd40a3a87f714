import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Issue #42, the app's own receipts: with `app_receipts` on, each push carries a per-delivery
/// receipt token (APNs a custom key beside `aps`, FCM and the other Android services a data
/// field), and `POST /api/v1/receipts` with that token, no API key, records `arrived` and
/// `clicked`; a forged token records nothing.
@Suite(.serialized) struct AppReceiptEndToEndTests {
    static let iPhone = String(repeating: "ab", count: 32)

    func register(_ gw: RunningGateway, _ key: String, _ token: String, _ body: [String: Any]) async throws {
        let r = try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(token)", key: key, json: body)
        #expect(r.status == 201, "\(r.text)")
    }

    func postReceipt(_ gw: RunningGateway, _ body: Any) async throws -> TestResponse {
        try await http("POST", "\(gw.baseURL)/api/v1/receipts", json: body)
    }

    @Test func eachPushCarriesItsTokenAndThePhonesPostItBack() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.own")
        var app = try #require(try await gw.runtime.store.app(id: appID))
        app.appReceipts = true
        try await gw.runtime.store.updateApp(app)
        await gw.runtime.adminAPI.appChanged(appID)
        try await register(gw, key, Self.iPhone, ["environment": "production", "tags": ["o"]])
        try await register(gw, key, "fcm-own-1", ["channel": "fcm", "tags": ["o"]])
        try await register(gw, key, "huawei-own-1", ["channel": "huawei", "tags": ["o"]])
        try await register(gw, key, "huawei-own-2", ["channel": "huawei", "tags": ["o"]])
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "o"], "notification": ["alert": "hi", "custom": ["order": 7]]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))

        // APNs: a custom key beside `aps`, the content's own keys kept.
        let apns = try #require(gw.mock.receivedNotifications().first { $0.deviceToken == Self.iPhone })
        let payload = try JSONValue(parsing: apns.payload)
        let apnsReceipt = try #require(payload["tuisong_receipt"]?.stringValue)
        #expect(payload["aps"]?["alert"]?.stringValue == "hi")
        #expect(payload["order"]?.intValue == 7)
        #expect(apnsReceipt.hasPrefix("\(id)."))
        // FCM: a data field.
        let fcm = try #require(gw.mock.receivedAndroidMessages().first { $0.service == .fcm })
        let fcmReceipt = try #require(
            try JSONValue(parsing: fcm.body)["message"]?["data"]?["tuisong_receipt"]?.stringValue)
        // Huawei: in its data (one string of JSON), one request per device: each its own token.
        let huawei = gw.mock.receivedAndroidMessages().filter { $0.service == .huawei }
        #expect(huawei.count == 2)
        #expect(huawei.allSatisfy { $0.tokens.count == 1 })
        let huaweiReceipts = try huawei.map { sent -> String in
            let data = try #require(try JSONValue(parsing: sent.body)["message"]?["data"]?.stringValue)
            return try #require(try JSONValue(parsing: Array(data.utf8))["tuisong_receipt"]?.stringValue)
        }
        #expect(Set(huaweiReceipts + [apnsReceipt, fcmReceipt]).count == 4, "a token per delivery")

        // The phones post them back: no API key.
        let arrived = try await postReceipt(gw, ["receipt": apnsReceipt, "event": "arrived"])
        #expect(arrived.status == 200, "\(arrived.text)")
        #expect(arrived.jsonObject["recorded"] as? Bool == true)
        #expect(
            try await postReceipt(gw, ["receipt": apnsReceipt, "event": "arrived"]).jsonObject["recorded"] as? Bool
                == false)
        #expect(try await postReceipt(gw, ["receipt": apnsReceipt, "event": "clicked"]).status == 200)
        #expect(try await postReceipt(gw, ["receipt": fcmReceipt, "event": "arrived"]).status == 200)

        // Forged, altered or another delivery's: refused, nothing recorded.
        var forged = apnsReceipt
        forged.removeLast()
        forged.append(apnsReceipt.last == "A" ? "B" : "A")
        let refused = try await postReceipt(gw, ["receipt": forged, "event": "arrived"])
        #expect(refused.status == 401)
        #expect(refused.errorCode == "invalid_receipt")
        let parts = fcmReceipt.split(separator: ".")
        let otherDevice = "\(parts[0]).\(Int(parts[1])! + 1000).\(parts[2])"
        #expect(try await postReceipt(gw, ["receipt": otherDevice, "event": "arrived"]).status == 401)
        #expect(try await postReceipt(gw, ["receipt": "999999.1.AAAAAAAAAAAAAAAA", "event": "arrived"]).status == 401)
        #expect(try await postReceipt(gw, ["receipt": apnsReceipt, "event": "opened"]).errorCode == "invalid_event")
        #expect(try await postReceipt(gw, ["event": "arrived"]).status == 400)

        var status: [String: Any] = [:]
        // The Huawei look-alike posts its own receipts too (local mode): 2 + iPhone + FCM.
        try await waitUntil("four phones reported arrival") {
            status = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)?channels=true", key: key).jsonObject
            return (status["counts"] as? [String: Int])?["arrived"] == 4
        }
        let channels = try #require(status["channels"] as? [String: [String: Any]])
        #expect(channels["apns"]?["arrived"] as? Int == 1)
        #expect(channels["apns"]?["clicked"] as? Int == 1)
        #expect(channels["fcm"]?["arrived"] as? Int == 1)
        #expect((status["counts"] as? [String: Int])?["clicked"] == 1)
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(metrics.contains(#"tuisong_receipts_total{channel="apns",outcome="arrived"} 1"#))
        #expect(metrics.contains(#"tuisong_receipts_total{channel="app",outcome="refused"} 3"#))
    }

    @Test func anAppWithoutItsOwnReceiptsCarriesNoTokenAndKeepsItsBatches() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.plain")
        try await register(gw, key, Self.iPhone, ["environment": "production", "tags": ["p"]])
        for n in 1...3 { try await register(gw, key, "huawei-plain-\(n)", ["channel": "huawei", "tags": ["p"]]) }
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "p"], "notification": ["alert": "hi"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))
        let apns = try #require(gw.mock.receivedNotifications().first { $0.deviceToken == Self.iPhone })
        #expect(try JSONValue(parsing: apns.payload)["tuisong_receipt"] == nil)
        let huawei = gw.mock.receivedAndroidMessages().filter { $0.service == .huawei }
        #expect(huawei.count == 1, "one request for the three devices")
        #expect(huawei.first?.tokens.count == 3)
    }

    /// An app with its own receipts on, `count` iPhones pushed to once: each push's receipt token.
    func pushedReceipts(_ gw: RunningGateway, bundleID: String, count: Int) async throws -> [String] {
        let (appID, key) = try await gw.createApp(bundleID: bundleID)
        var app = try #require(try await gw.runtime.store.app(id: appID))
        app.appReceipts = true
        try await gw.runtime.store.updateApp(app)
        await gw.runtime.adminAPI.appChanged(appID)
        let tokens = (1...count).map {
            String(repeating: "c", count: 56) + String(format: "%08d", Int(appID) * 100 + $0)
        }
        for token in tokens { try await register(gw, key, token, ["environment": "production", "tags": ["r"]]) }
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "r"], "notification": ["alert": "hi"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))
        return try tokens.map { token in
            let sent = try #require(gw.mock.receivedNotifications().first { $0.deviceToken == token })
            return try #require(try JSONValue(parsing: sent.payload)["tuisong_receipt"]?.stringValue)
        }
    }

    /// The keyless route is bounded per app (`receipts.app_rate_per_app`): past the app's bucket
    /// (here one receipt, refilled in 100 s) a receipt is answered 429 in the native dialect with
    /// `Retry-After`; forged tokens spend nothing of it, and another app keeps its own.
    @Test func anAppsReceiptsAreBoundedAndForgedOnesSpendNothing() async throws {
        let gw = try await TestGateway.start(environment: [
            "TUISONG_RECEIPTS_APP_RATE_PER_ADDRESS": "0", "TUISONG_RECEIPTS_APP_RATE_PER_APP": "0.01",
        ])
        defer { Task { await gw.stop() } }
        let first = try await pushedReceipts(gw, bundleID: "com.example.bounded", count: 2)
        let other = try await pushedReceipts(gw, bundleID: "com.example.other", count: 1)
        var forged = first[0]
        forged.removeLast()
        forged.append(first[0].last == "A" ? "B" : "A")
        for _ in 1...3 { #expect(try await postReceipt(gw, ["receipt": forged, "event": "arrived"]).status == 401) }
        #expect(try await postReceipt(gw, ["receipt": first[0], "event": "arrived"]).status == 200)
        let refused = try await postReceipt(gw, ["receipt": first[1], "event": "arrived"])
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.errorCode == "rate_limited")
        #expect((1...100).contains(Int(refused.header("Retry-After") ?? "") ?? 0), "\(refused.headers)")
        #expect(try await postReceipt(gw, ["receipt": other[0], "event": "arrived"]).status == 200)
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(metrics.contains(#"tuisong_receipts_total{channel="app",outcome="rate_limited"} 1"#))
        #expect(metrics.contains(#"tuisong_receipts_total{channel="apns",outcome="arrived"} 2"#))
    }

    /// Per client address (`receipts.app_rate_per_address`), before anything is read: past the
    /// address's bucket even a valid receipt is answered 429 with `Retry-After`.
    @Test func oneAddressIsBoundedBeforeItsReceiptIsRead() async throws {
        let gw = try await TestGateway.start(environment: [
            "TUISONG_RECEIPTS_APP_RATE_PER_ADDRESS": "0.01", "TUISONG_RECEIPTS_APP_RATE_PER_APP": "0",
        ])
        defer { Task { await gw.stop() } }
        let receipts = try await pushedReceipts(gw, bundleID: "com.example.address", count: 1)
        // The address's one receipt: a malformed body spends it as any other would.
        #expect(try await postReceipt(gw, ["event": "arrived"]).status == 400)
        let refused = try await postReceipt(gw, ["receipt": receipts[0], "event": "arrived"])
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.errorCode == "rate_limited")
        #expect(refused.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect((1...100).contains(Int(refused.header("Retry-After") ?? "") ?? 0))
    }
}
