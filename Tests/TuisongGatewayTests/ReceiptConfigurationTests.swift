import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

/// Issue #42: the receipt settings of an app's credential (Honor's receipt switch, Huawei's and
/// HarmonyOS's receipt ids) and Honor's receipts, posted to a running gateway as the service
/// posts them (Huawei's V1 shape, docs/reference/receipts.md, Honor).
@Suite(.serialized) struct ReceiptConfigurationTests {
    static let publicURL = "https://push.example.com"

    func register(_ gw: RunningGateway, _ key: String, _ token: String, channel: String, tag: String) async throws {
        let r = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token)", key: key, json: ["channel": channel, "tags": [tag]])
        #expect(r.status == 201, "\(r.text)")
    }

    func push(_ gw: RunningGateway, _ key: String, tag: String) async throws -> Int64 {
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": tag], "notification": ["alert": "hi"]])
        let id = Int64(try #require(push.jsonObject["message_id"] as? Int))
        _ = try await gw.completed(messageID: id)
        return id
    }

    /// The Honor send the look-alike accepted for `token`.
    func honorSent(_ gw: RunningGateway, token: String) throws -> JSONValue {
        let sent = try #require(
            gw.mock.receivedAndroidMessages().first { $0.service == .honor && $0.tokens.contains(token) })
        return try JSONValue(parsing: sent.body)
    }

    /// The credential form's values of an Honor or Huawei OAuth client, with `extra` fields.
    func addCredential(
        _ gw: RunningGateway, appID: Int64, channel: PushChannel, _ extra: [String: String]
    ) async throws {
        var values = ["vendor_app_id": "10086", "client_id": "10086", "client_secret": "s3cret"]
        values.merge(extra) { _, new in new }
        _ = try await gw.runtime.credentialBackend.addChannel(
            .form(channel: channel, CredentialFormInput(values: values)), appID: appID, selector: nil)
    }

    /// Honor: a push asks for receipts (`android.biTag`) only when the app's Honor credential
    /// turns them on; the POST is signed as Huawei's (under either header name), refused 401
    /// unsigned, forged or at another app's URL, 400 malformed, 413 too large; a repeat counts
    /// once; status 2 counts `uninstalled` without invalidating the device (Honor's codes are
    /// not confirmed).
    @Test(arguments: PluginStoreBackend.allCases)
    func honorReceiptsAreAskedForWhenOnAndVerified(_ database: PluginStoreBackend) async throws {
        let gw = try await TestGateway.start(
            environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL], database: database)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.honor")
        let (offAppID, offKey) = try await gw.createApp(bundleID: "com.example.honor.off")
        try await addCredential(gw, appID: offAppID, channel: .honor, ["receipts": "off"])
        for token in ["honor-r-1", "honor-r-2", "honor-r-3"] {
            try await register(gw, key, token, channel: "honor", tag: "r")
        }
        try await register(gw, offKey, "honor-off-1", channel: "honor", tag: "r")

        let id = try await push(gw, key, tag: "r")
        let biTag = try #require(try honorSent(gw, token: "honor-r-1")["android"]?["biTag"]?.stringValue)
        #expect(biTag.hasPrefix("\(id)."))
        // An app whose Honor credential does not turn receipts on sends Honor no receipt field.
        _ = try await push(gw, offKey, tag: "r")
        #expect(try honorSent(gw, token: "honor-off-1")["android"]?["biTag"] == nil)

        let statuses: [[String: Any]] = [
            ["biTag": biTag, "appid": "104", "token": "honor-r-1", "status": 0, "timestamp": 1_750_000_000_000],
            ["biTag": biTag, "appid": "104", "token": "honor-r-2", "status": 6, "timestamp": 1_750_000_000_000],
            ["biTag": biTag, "appid": "104", "token": "honor-r-3", "status": 2, "timestamp": 4_000_000_000_000],
        ]
        let body = try JSONSerialization.data(withJSONObject: ["statuses": statuses])
        let credentials = try await gw.runtime.adminAPI.receiptCredentials.credentials(appID: appID, channel: .honor)
        let url = "\(gw.baseURL)/receipts/honor/\(appID)"
        func post(_ url: String, _ body: Data, header: String = "X-HONOR-CALLBACK-ID", key: String? = nil)
            async throws -> TestResponse
        {
            let value = CallbackSignature.headerValue(
                userName: credentials.userName, key: key ?? credentials.key, now: Date())
            return try await http(
                "POST", url, body: body, contentType: "application/json", headers: [header: value])
        }
        let unsigned = try await http("POST", url, body: body, contentType: "application/json")
        #expect(unsigned.status == 401)
        #expect(unsigned.jsonObject["errno"] as? String == "401")
        #expect(try await post(url, body, key: "not-the-key").status == 401)
        #expect(try await post("\(gw.baseURL)/receipts/honor/\(offAppID)", body).status == 401)
        let malformed = try await post(url, Data("[1,2]".utf8))
        #expect(malformed.status == 400)
        #expect(malformed.jsonObject["errno"] as? String == "400")
        #expect(try await post(url, Data(repeating: UInt8(ascii: " "), count: (1 << 20) + 1)).status == 413)
        await gw.runtime.receiptsDigested()
        #expect(try await gw.runtime.store.receiptCounts(messageID: id).isEmpty)

        let accepted = try await post(url, body)
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(accepted.jsonObject["errno"] as? String == "0")
        // Signed under Huawei's header name (Honor's own is not documented): verified too; a
        // repeat counts nothing again.
        #expect(try await post(url, body, header: "X-HUAWEI-CALLBACK-ID").status == 200)
        await gw.runtime.receiptsDigested()

        let counts = try await gw.runtime.store.receiptCounts(messageID: id)
        #expect(counts[.honor] == ReceiptCounts(arrived: 1, reasons: ["notifications_disabled": 1, "uninstalled": 1]))
        let kept = try #require(DeviceToken("honor-r-3", channel: .honor))
        #expect(try await gw.runtime.store.device(appID: appID, token: kept)?.invalidReason == nil)
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(metrics.contains(#"tuisong_receipts_total{channel="honor",outcome="repeated"} 3"#))
    }

    /// Local mode: the Honor look-alike posts its signed receipts to the gateway's own listener,
    /// so an Honor phone shows `arrived`.
    @Test func honorsLookAlikePostsReceiptsInLocalMode() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.honor.local")
        try await register(gw, key, "honor-local-1", channel: "honor", tag: "l")
        try await register(gw, key, "honor-local-2", channel: "honor", tag: "l")
        let id = try await push(gw, key, tag: "l")
        try await waitUntil("two Honor phones reported arrival") {
            try await gw.runtime.store.receiptCounts(messageID: id)[.honor]?.arrived == 2
        }
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(!metrics.contains(#"outcome="refused""#))
    }

    /// Huawei's `android.receipt_id` and HarmonyOS's `pushOptions.receiptId`: sent when the
    /// app's credential names the receipt configuration, beside the tag; absent otherwise.
    @Test func aCredentialsReceiptIDNamesTheReceiptConfiguration() async throws {
        let gw = try await TestGateway.start(environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL])
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.receiptid")
        try await addCredential(gw, appID: appID, channel: .huawei, ["receipt_id": "RCP78C959D4"])
        try await register(gw, key, "huawei-rid-1", channel: "huawei", tag: "r")
        let (_, plainKey) = try await gw.createApp(bundleID: "com.example.plain")
        try await register(gw, plainKey, "huawei-plain-1", channel: "huawei", tag: "r")
        try await register(gw, plainKey, "MAMzLg-plain-1", channel: "harmony", tag: "r")

        _ = try await push(gw, key, tag: "r")
        _ = try await push(gw, plainKey, tag: "r")
        func sent(_ service: AndroidPushService, _ token: String) throws -> JSONValue {
            let message = try #require(
                gw.mock.receivedAndroidMessages().first { $0.service == service && $0.tokens.contains(token) })
            return try JSONValue(parsing: message.body)
        }
        let android = try #require(try sent(.huawei, "huawei-rid-1")["message"]?["android"])
        #expect(android["receipt_id"]?.stringValue == "RCP78C959D4")
        #expect(android["bi_tag"]?.stringValue != nil)
        #expect(try sent(.huawei, "huawei-plain-1")["message"]?["android"]?["receipt_id"] == nil)
        #expect(try sent(.harmony, "MAMzLg-plain-1")["pushOptions"]?["receiptId"] == nil)
    }
}
