import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

/// Issue #42: a receipt status without Tuisong's tag finds its delivery by the service's
/// request id and the token: the request, kept with the flush of its outcomes (one row per
/// request), names the app's message. Another app's request id finds nothing.
@Suite(.serialized) struct ReceiptFallbackTests {
    static let publicURL = "https://push.example.com"

    @Test(arguments: PluginStoreBackend.allCases)
    func aStatusWithoutTheTagFindsItsDeliveryByTheRequestAndToken(_ database: PluginStoreBackend) async throws {
        let gw = try await TestGateway.start(
            environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL], database: database)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.fallback")
        let (otherAppID, _) = try await gw.createApp(bundleID: "com.example.other")
        for token in ["huawei-fb-1", "huawei-fb-2"] {
            let r = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(token)", key: key, json: ["channel": "huawei", "tags": ["f"]])
            #expect(r.status == 201, "\(r.text)")
        }
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "f"], "notification": ["alert": "hi"]])
        let id = Int64(try #require(push.jsonObject["message_id"] as? Int))
        _ = try await gw.completed(messageID: id)
        // The request id Huawei answered the send with (the look-alike's `requestId`).
        let requestID = try #require(
            gw.mock.receivedAndroidMessages().first { $0.service == .huawei && $0.tokens.contains("huawei-fb-1") }?
                .messageID)

        // As a push sent before receipts were on (or another sender's) comes back: no biTag.
        let body = try JSONSerialization.data(
            withJSONObject: [
                "statuses": [
                    [
                        "biTag": "", "appid": "10086", "token": "huawei-fb-1", "status": 0,
                        "timestamp": 1_750_000_000_000, "requestId": requestID,
                    ],
                    ["appid": "10086", "token": "huawei-fb-2", "status": 6, "requestId": requestID],
                ]
            ])
        func post(_ app: Int64) async throws -> TestResponse {
            let credentials = try await gw.runtime.adminAPI.receiptCredentials.credentials(appID: app, channel: .huawei)
            let signature = CallbackSignature.headerValue(
                userName: credentials.userName, key: credentials.key, now: Date())
            return try await http(
                "POST", "\(gw.baseURL)/receipts/huawei/\(app)", body: body, contentType: "application/json",
                headers: ["X-HUAWEI-CALLBACK-ID": signature])
        }
        // Another app's POST naming this app's request: answered, and it finds nothing.
        #expect(try await post(otherAppID).status == 200)
        await gw.runtime.receiptsDigested()
        #expect(try await gw.runtime.store.receiptCounts(messageID: id).isEmpty)
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(metrics.contains(#"tuisong_receipts_total{channel="huawei",outcome="unknown"} 2"#))

        #expect(try await post(appID).status == 200)
        await gw.runtime.receiptsDigested()
        let counts = try await gw.runtime.store.receiptCounts(messageID: id)
        #expect(counts[.huawei] == ReceiptCounts(arrived: 1, reasons: ["notifications_disabled": 1]))
        #expect(
            try await gw.runtime.store.serviceRequestMessage(
                appID: appID, channel: .huawei, requestID: requestID) == id)
        #expect(
            try await gw.runtime.store.serviceRequestMessage(
                appID: otherAppID, channel: .huawei, requestID: requestID) == nil)
    }
}
