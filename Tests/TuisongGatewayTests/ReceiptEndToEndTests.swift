import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Issue #42: delivery receipts posted to a running gateway as each service posts them, the
/// signatures computed here from the service's documented recipe.
@Suite(.serialized) struct ReceiptEndToEndTests {
    static let publicURL = "https://push.example.com"

    /// The callback user name and key the console shows for an app's channel (made on first
    /// need and stored per app: what an operator copies into AppGallery Connect).
    static func callbackCredentials(_ gw: RunningGateway, appID: Int64, channel: PushChannel) async throws -> (
        userName: String, key: String
    ) {
        let credentials = try await gw.runtime.adminAPI.receiptCredentials.credentials(appID: appID, channel: channel)
        return (credentials.userName, credentials.key)
    }

    /// `X-HUAWEI-CALLBACK-ID` as Huawei's receipt API documents it: value =
    /// Base64(HMAC-SHA256(callback key, timestamp + nonce + callback user name)).
    static func huaweiSignature(userName: String, key: String, timestamp: String, nonce: String) -> String {
        let value = Data(HMAC.sha256(key: Array(key.utf8), message: Array((timestamp + nonce + userName).utf8)))
            .base64EncodedString()
        return "timestamp=\(timestamp);nonce=\(nonce);value=\(value)"
    }

    func register(_ gw: RunningGateway, _ key: String, _ token: String, _ body: [String: Any]) async throws {
        let r = try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(token)", key: key, json: body)
        #expect(r.status == 201, "\(r.text)")
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func huaweiReceiptsAreVerifiedCountedOnceAndShownBesideDelivered(_ database: PluginStoreBackend) async throws {
        let gw = try await TestGateway.start(
            environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL], database: database)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.receipts")
        let (otherAppID, _) = try await gw.createApp(bundleID: "com.example.other")
        for token in ["huawei-r-1", "huawei-r-2", "huawei-r-3"] {
            try await register(gw, key, token, ["channel": "huawei", "tags": ["r"]])
        }
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "r"], "notification": ["alert": "hi"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))

        // The send named the message in bi_tag, as Huawei returns it in each status.
        let sent = try #require(gw.mock.receivedAndroidMessages().first { $0.service == .huawei })
        let biTag = try #require(try JSONValue(parsing: sent.body)["message"]?["android"]?["bi_tag"]?.stringValue)
        #expect(biTag.hasPrefix("\(id)."))

        let statuses: [[String: Any]] = [
            [
                "biTag": biTag, "appid": "10086", "token": "huawei-r-1", "status": 0, "timestamp": 1_750_000_000_000,
                "requestId": "r1",
            ],
            [
                "biTag": biTag, "appid": "10086", "token": "huawei-r-2", "status": 6, "timestamp": 1_750_000_000_000,
                "requestId": "r1",
            ],
            [
                "biTag": biTag, "appid": "10086", "token": "huawei-r-3", "status": 2, "timestamp": 4_000_000_000_000,
                "requestId": "r1",
            ],
        ]
        let body = try JSONSerialization.data(withJSONObject: ["statuses": statuses])
        let (userName, callbackKey) = try await Self.callbackCredentials(gw, appID: appID, channel: .huawei)
        let url = "\(gw.baseURL)/receipts/huawei/\(appID)"
        func post(_ url: String, signature: String?) async throws -> TestResponse {
            try await http(
                "POST", url, body: body, contentType: "application/json",
                headers: signature.map { ["X-HUAWEI-CALLBACK-ID": $0] } ?? [:])
        }
        let signature = Self.huaweiSignature(
            userName: userName, key: callbackKey, timestamp: "1750000000123", nonce: UUID().uuidString.lowercased())

        // Unsigned, signed with another key, or sent to another app's URL: refused, nothing kept.
        let unsigned = try await post(url, signature: nil)
        #expect(unsigned.status == 401)
        #expect(unsigned.jsonObject["errno"] as? String == "401")
        let forged = try await post(
            url,
            signature: Self.huaweiSignature(
                userName: userName, key: "not-the-key", timestamp: "1750000000123", nonce: "n"))
        #expect(forged.status == 401)
        let otherApp = try await post("\(gw.baseURL)/receipts/huawei/\(otherAppID)", signature: signature)
        #expect(otherApp.status == 401)
        // Answered once kept; recorded by the digest.
        await gw.runtime.receiptsDigested()
        #expect(try await gw.runtime.store.receiptCounts(messageID: Int64(id)).isEmpty)

        let accepted = try await post(url, signature: signature)
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(accepted.jsonObject["errno"] as? String == "0")
        // Huawei retries what it is not sure of: a repeat counts nothing again.
        #expect(try await post(url, signature: signature).status == 200)
        // Answered once kept; recorded by the digest.
        await gw.runtime.receiptsDigested()

        let status = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)?channels=true", key: key).jsonObject
        let counts = try #require(status["counts"] as? [String: Int])
        #expect(counts["delivered"] == 3)
        #expect(counts["arrived"] == 1)
        #expect(counts["clicked"] == 0)
        #expect(status["not_shown"] as? [String: Int] == ["notifications_disabled": 1, "uninstalled": 1])
        let huawei = try #require((status["channels"] as? [String: Any])?["huawei"] as? [String: Any])
        #expect(huawei["arrived"] as? Int == 1)
        #expect(huawei["delivered"] as? Int == 3)

        // Status 2 (uninstalled) invalidates the device as an APNs 410 does.
        let gone = try #require(DeviceToken("huawei-r-3", channel: .huawei))
        let device = try #require(try await gw.runtime.store.device(appID: appID, token: gone))
        #expect(device.invalidReason == "receipt:uninstalled")

        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(metrics.contains(#"tuisong_receipts_total{channel="huawei",outcome="arrived"} 1"#))
        #expect(metrics.contains(#"tuisong_receipts_total{channel="huawei",outcome="repeated"} 3"#))
        #expect(metrics.contains(#"tuisong_receipts_total{channel="huawei",outcome="refused"} 3"#))
    }

    @Test func aMalformedReceiptIs400AndAnUnknownMessageIsAnswered200() async throws {
        let gw = try await TestGateway.start(environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL])
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp()
        let (userName, callbackKey) = try await Self.callbackCredentials(gw, appID: appID, channel: .huawei)
        let signature = Self.huaweiSignature(userName: userName, key: callbackKey, timestamp: "1", nonce: "n")
        let url = "\(gw.baseURL)/receipts/huawei/\(appID)"
        let malformed = try await http(
            "POST", url, body: Data("[1,2]".utf8), contentType: "application/json",
            headers: ["X-HUAWEI-CALLBACK-ID": signature])
        #expect(malformed.status == 400)
        #expect(malformed.jsonObject["errno"] as? String == "400")
        // A status of a push Tuisong did not tag (another sender of the app): answered, ignored.
        let foreign = try JSONSerialization.data(
            withJSONObject: [
                "statuses": [["biTag": "", "token": "t", "status": 0, "timestamp": 1, "appid": "1", "requestId": "x"]]
            ])
        let answered = try await http(
            "POST", url, body: foreign, contentType: "application/json", headers: ["X-HUAWEI-CALLBACK-ID": signature])
        #expect(answered.status == 200)
        // Answered once kept; recorded by the digest.
        await gw.runtime.receiptsDigested()
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(metrics.contains(#"tuisong_receipts_total{channel="huawei",outcome="unknown"} 1"#))
    }

    /// Local mode (the README's quickstart): with no `receipts.public_url`, the look-alikes of
    /// Huawei and HarmonyOS post their signed receipts, and those of Xiaomi, OPPO and vivo theirs
    /// with the param the push carried, to the gateway's own listener, so a push shows `arrived`
    /// for the Android and HarmonyOS phones and none for the iPhone.
    @Test(arguments: PluginStoreBackend.allCases)
    func localModeLookAlikesPostReceiptsThatShowArrived(_ database: PluginStoreBackend) async throws {
        let gw = try await TestGateway.start(database: database)
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.local")
        try await register(gw, key, "huawei-local-1", ["channel": "huawei", "tags": ["l"]])
        try await register(gw, key, "huawei-local-2", ["channel": "huawei", "tags": ["l"]])
        try await register(gw, key, "MAMzLg-local-harmony-1", ["channel": "harmony", "tags": ["l"]])
        try await register(gw, key, "xiaomi-local-1", ["channel": "xiaomi", "tags": ["l"]])
        try await register(gw, key, "oppo-local-1", ["channel": "oppo", "tags": ["l"]])
        try await register(gw, key, "vivo-local-1", ["channel": "vivo", "tags": ["l"]])
        try await register(gw, key, String(repeating: "ab", count: 32), ["environment": "production", "tags": ["l"]])
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "l"], "notification": ["alert": "hi"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))

        // The sends carried the message's tag where each service returns it.
        let harmonySent = try #require(gw.mock.receivedAndroidMessages().first { $0.service == .harmony })
        let biTag = try JSONValue(parsing: harmonySent.body)["pushOptions"]?["biTag"]?.stringValue
        #expect(biTag?.hasPrefix("\(id).") == true)

        var status: [String: Any] = [:]
        try await waitUntil("six phones reported arrival") {
            status = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)?channels=true", key: key).jsonObject
            return (status["counts"] as? [String: Int])?["arrived"] == 6
        }
        let counts = try #require(status["counts"] as? [String: Int])
        #expect(counts["delivered"] == 7)
        let channels = try #require(status["channels"] as? [String: [String: Any]])
        #expect(channels["huawei"]?["arrived"] as? Int == 2)
        #expect(channels["harmony"]?["arrived"] as? Int == 1)
        for channel in ["xiaomi", "oppo", "vivo"] { #expect(channels[channel]?["arrived"] as? Int == 1, "\(channel)") }
        #expect(channels["apns"]?["arrived"] == nil)
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(metrics.contains(#"tuisong_receipts_total{channel="harmony",outcome="arrived"} 1"#))
        #expect(!metrics.contains(#"outcome="refused""#))
    }

    /// Issue #43: a look-alike's receipt becomes a signed `delivery.arrived` at the app server,
    /// only for the endpoint that names it, once per delivery.
    @Test(arguments: PluginStoreBackend.allCases)
    func aLookAlikesReceiptReachesTheAppServerAsDeliveryArrived(_ database: PluginStoreBackend) async throws {
        let receiver = try WebhookReceiver()
        let quiet = try WebhookReceiver()
        let gw = try await TestGateway.start(database: database)
        let (_, key) = try await gw.createApp(bundleID: "com.example.arrived")
        let created = try await http(
            "POST", "\(gw.baseURL)/api/v1/webhooks", key: key,
            json: ["url": receiver.url, "events": ["delivery.arrived", "message.completed"]])
        let secret = try #require(created.jsonObject["secret"] as? String)
        // The default events only: no per-delivery event reaches it.
        let other = try await http("POST", "\(gw.baseURL)/api/v1/webhooks", key: key, json: ["url": quiet.url])
        #expect(other.status == 201)
        let tokens = ["huawei-hook-1", "huawei-hook-2", "MAMzLg-hook-harmony-1"]
        try await register(gw, key, tokens[0], ["channel": "huawei", "tags": ["w"]])
        try await register(gw, key, tokens[1], ["channel": "huawei", "tags": ["w"]])
        try await register(gw, key, tokens[2], ["channel": "harmony", "tags": ["w"]])
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "w"], "notification": ["alert": "hi"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)

        let got = try await receiver.wait { received in
            received.filter { $0.json?["type"] == "delivery.arrived" }.count >= 3
                && received.contains { $0.json?["type"] == "message.completed" }
        }
        let arrived = got.filter { $0.json?["type"] == "delivery.arrived" }
        #expect(Set(arrived.compactMap { $0.json?["data"]?["token"]?.stringValue }) == Set(tokens))
        #expect(arrived.allSatisfy { $0.json?["data"]?["message_id"] == .int(Int64(id)) })
        #expect(
            Set(arrived.compactMap { $0.json?["data"]?["channel"]?.stringValue }) == ["huawei", "harmony"])
        #expect(Set(arrived.map(\.id)).count == 3, "one event per delivery")
        let verdicts = try IndependentVerifier.verify(
            arrived.map {
                .init(secret: secret, id: $0.id, timestamp: $0.timestamp, signature: $0.signature, body: $0.body)
            })
        #expect(verdicts == ["ok", "ok", "ok"])
        // The quiet endpoint got the completion only (its default events).
        let quietGot = try await quiet.wait { $0.contains { $0.json?["type"] == "message.completed" } }
        #expect(quietGot.allSatisfy { $0.json?["type"] == "message.completed" })
        await gw.stop()
        await receiver.stop()
        await quiet.stop()
    }

    /// HarmonyOS V2 receipts as Push Kit posts them: signed like Huawei's, `deliveryStatus` (or a
    /// card's `formStatus`) per status; forged or another app's refused, malformed 400 (or, past
    /// the structural check, counted `unreadable` by the digest).
    @Test func harmonyReceiptsAreVerifiedAndRead() async throws {
        let gw = try await TestGateway.start(environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL])
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.harmony")
        let (otherAppID, _) = try await gw.createApp(bundleID: "com.example.other")
        for token in ["MAMzLg-h-1", "MAMzLg-h-2"] {
            try await register(gw, key, token, ["channel": "harmony", "tags": ["h"]])
        }
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "h"], "notification": ["alert": "hi"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))
        let sent = try #require(gw.mock.receivedAndroidMessages().first { $0.service == .harmony })
        let biTag = try #require(try JSONValue(parsing: sent.body)["pushOptions"]?["biTag"]?.stringValue)

        let body = try JSONSerialization.data(
            withJSONObject: [
                "statuses": [
                    [
                        "token": "MAMzLg-h-1", "pushType": 0, "appPackageName": "com.example.harmony", "biTag": biTag,
                        "requestId": "r1", "deliveryStatus": ["result": 0, "timestamp": 1_750_000_000_000],
                    ],
                    [
                        "token": "MAMzLg-h-2", "pushType": 0, "appPackageName": "com.example.harmony", "biTag": biTag,
                        "requestId": "r1", "deliveryStatus": ["result": 6, "timestamp": 1_750_000_000_000],
                    ],
                ]
            ])
        let (userName, callbackKey) = try await Self.callbackCredentials(gw, appID: appID, channel: .harmony)
        let signature = Self.huaweiSignature(
            userName: userName, key: callbackKey, timestamp: "1750000000123", nonce: UUID().uuidString.lowercased())
        let url = "\(gw.baseURL)/receipts/harmony/\(appID)"
        func post(_ url: String, _ body: Data, signature: String) async throws -> TestResponse {
            try await http(
                "POST", url, body: body, contentType: "application/json",
                headers: ["X-HUAWEI-CALLBACK-ID": signature])
        }
        // Huawei's (Android) callback key is not HarmonyOS's; another app's URL does not verify.
        let (_, huaweiKey) = try await Self.callbackCredentials(gw, appID: appID, channel: .huawei)
        let forged = Self.huaweiSignature(userName: userName, key: huaweiKey, timestamp: "1", nonce: "n")
        #expect(try await post(url, body, signature: forged).status == 401)
        #expect(
            try await post("\(gw.baseURL)/receipts/harmony/\(otherAppID)", body, signature: signature).status == 401)
        // Answered once kept; recorded by the digest.
        await gw.runtime.receiptsDigested()
        #expect(try await gw.runtime.store.receiptCounts(messageID: Int64(id)).isEmpty)
        // The signature covers the header: the body's structure is checked before the answer
        // (400), its statuses are read by the digest, which counts and logs a status it cannot
        // read (`unreadable`) and records nothing of that POST.
        #expect(try await post(url, Data(#"{"statuses":[{"token":"x"}]"#.utf8), signature: signature).status == 400)
        #expect(try await post(url, Data(#"{"statuses":[{"token":"x"}]}"#.utf8), signature: signature).status == 200)
        await gw.runtime.receiptsDigested()
        #expect(
            try await http("GET", "\(gw.baseURL)/metrics").text.contains(
                #"tuisong_receipts_total{channel="harmony",outcome="unreadable"} 1"#))
        #expect(try await gw.runtime.store.waitingReceiptStatuses(appID: appID) == 0)

        let accepted = try await post(url, body, signature: signature)
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(accepted.jsonObject["errno"] as? String == "0")
        // Answered once kept; recorded by the digest.
        await gw.runtime.receiptsDigested()
        let counts = try await gw.runtime.store.receiptCounts(messageID: Int64(id))
        #expect(counts[.harmony] == ReceiptCounts(arrived: 1, reasons: ["notifications_disabled": 1]))
    }

    /// Per delivery: the deliveries listing shows what each listed delivery's receipt said. A
    /// token Huawei refused as unregistered (a failed delivery, listed) whose receipt then says
    /// the app is gone carries that reason; a delivery without a receipt carries null.
    @Test func aListedDeliveryShowsWhatItsReceiptSaid() async throws {
        let gw = try await TestGateway.start(environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL])
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.listing")
        for token in ["huawei-l-1", "unregistered-huawei-l-2", "unregistered-huawei-l-3"] {
            try await register(gw, key, token, ["channel": "huawei", "tags": ["l"]])
        }
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "l"], "notification": ["alert": "hi"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))
        let sent = try #require(gw.mock.receivedAndroidMessages().first { $0.service == .huawei })
        let biTag = try #require(try JSONValue(parsing: sent.body)["message"]?["android"]?["bi_tag"]?.stringValue)
        func listed() async throws -> [String: [String: Any]] {
            let page = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)/deliveries?state=failed", key: key)
            #expect(page.status == 200, "\(page.text)")
            let rows = try #require(page.jsonObject["deliveries"] as? [[String: Any]])
            return Dictionary(
                uniqueKeysWithValues: rows.compactMap { row in (row["token"] as? String).map { ($0, row) } })
        }
        let before = try await listed()
        #expect(Set(before.keys) == ["unregistered-huawei-l-2", "unregistered-huawei-l-3"])
        #expect(before.values.allSatisfy { $0["receipt"] is NSNull })

        let body = try JSONSerialization.data(
            withJSONObject: [
                "statuses": [
                    [
                        "biTag": biTag, "appid": "10086", "token": "huawei-l-1", "status": 0,
                        "timestamp": 1_750_000_000_000, "requestId": "r1",
                    ],
                    [
                        "biTag": biTag, "appid": "10086", "token": "unregistered-huawei-l-2", "status": 2,
                        "timestamp": 1_750_000_000_000, "requestId": "r1",
                    ],
                ]
            ])
        let (userName, callbackKey) = try await Self.callbackCredentials(gw, appID: appID, channel: .huawei)
        let signature = Self.huaweiSignature(
            userName: userName, key: callbackKey, timestamp: "1750000000123", nonce: UUID().uuidString.lowercased())
        let accepted = try await http(
            "POST", "\(gw.baseURL)/receipts/huawei/\(appID)", body: body, contentType: "application/json",
            headers: ["X-HUAWEI-CALLBACK-ID": signature])
        #expect(accepted.status == 200, "\(accepted.text)")
        await gw.runtime.receiptsDigested()

        let after = try await listed()
        let gone = try #require(after["unregistered-huawei-l-2"]?["receipt"] as? [String: Any])
        #expect(gone["reason"] as? String == "uninstalled")
        #expect(gone["arrived_at"] is NSNull)
        #expect(gone["clicked_at"] is NSNull)
        #expect(after["unregistered-huawei-l-3"]?["receipt"] is NSNull)
    }

    /// Several nodes on one PostgreSQL database: Huawei may post a receipt to any of them (and,
    /// retrying, to two at once). Each node verifies it under the app's stored callback key,
    /// keeps it, and either node's digest records it; the repeat counts once, and every node
    /// answers the same counts.
    @Test func aReceiptMayReachAnyNodeAndCountsOnce() async throws {
        let first = try await TestGateway.start(
            environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL], database: .postgresql)
        let second: RunningGateway
        do {
            second = try await TestGateway.start(environment: [
                "TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL, "TUISONG_DATABASE_URL": try #require(first.databaseURL),
                "TUISONG_SECURITY_MASTER_KEY_FILE": first.directory.appending(path: "master.key").path,
            ])
        } catch {
            await first.stop()
            throw error
        }
        // The second node first: the first one's stop drops the database.
        defer {
            Task {
                await second.stop()
                await first.stop()
            }
        }
        let (appID, key) = try await first.createApp(bundleID: "com.example.nodes")
        for token in ["huawei-n-1", "huawei-n-2"] {
            try await register(first, key, token, ["channel": "huawei", "tags": ["n"]])
        }
        let push = try await http(
            "POST", "\(first.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": "n"], "notification": ["alert": "hi"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await first.completed(messageID: Int64(id))
        // Either node may have claimed the message's slice and sent it through its look-alike.
        let sent = try #require(
            (first.mock.receivedAndroidMessages() + second.mock.receivedAndroidMessages()).first {
                $0.service == .huawei
            })
        let biTag = try #require(try JSONValue(parsing: sent.body)["message"]?["android"]?["bi_tag"]?.stringValue)

        let body = try JSONSerialization.data(
            withJSONObject: [
                "statuses": ["huawei-n-1", "huawei-n-2"].map {
                    [
                        "biTag": biTag, "appid": "10086", "token": $0, "status": 0, "timestamp": 1_750_000_000_000,
                        "requestId": "r1",
                    ] as [String: Any]
                }
            ])
        // The node that did not send reads the pair the first one made and stored.
        let (userName, callbackKey) = try await Self.callbackCredentials(first, appID: appID, channel: .huawei)
        let signature = Self.huaweiSignature(
            userName: userName, key: callbackKey, timestamp: "1750000000123", nonce: UUID().uuidString.lowercased())
        func post(_ node: RunningGateway) async throws -> TestResponse {
            try await http(
                "POST", "\(node.baseURL)/receipts/huawei/\(appID)", body: body, contentType: "application/json",
                headers: ["X-HUAWEI-CALLBACK-ID": signature])
        }
        async let toFirst = post(first)
        async let toSecond = post(second)
        let answers = try await [toFirst, toSecond]
        #expect(answers.map(\.status) == [200, 200], "\(answers.map(\.text))")
        // A forged one is refused by the other node too.
        let forged = try await http(
            "POST", "\(second.baseURL)/receipts/huawei/\(appID)", body: body, contentType: "application/json",
            headers: [
                "X-HUAWEI-CALLBACK-ID": Self.huaweiSignature(
                    userName: userName, key: "not-the-key", timestamp: "1", nonce: "n")
            ])
        #expect(forged.status == 401)
        await first.runtime.receiptsDigested()
        await second.runtime.receiptsDigested()

        for node in [first, second] {
            let status = try await http("GET", "\(node.baseURL)/api/v1/messages/\(id)?channels=true", key: key)
                .jsonObject
            #expect((status["counts"] as? [String: Int])?["arrived"] == 2, "\(status)")
            #expect(status["receipts_waiting"] as? Int == 0)
        }
        // Each POST was recorded by one node: two arrivals and two repeats between them.
        var totals: [String: Int] = [:]
        for node in [first, second] {
            let metrics = try await http("GET", "\(node.baseURL)/metrics").text
            for outcome in ["arrived", "repeated"] {
                let prefix = #"tuisong_receipts_total{channel="huawei",outcome="\#(outcome)"} "#
                for line in metrics.split(separator: "\n") where line.hasPrefix(prefix) {
                    totals[outcome, default: 0] += Int(line.dropFirst(prefix.count)) ?? 0
                }
            }
        }
        #expect(totals == ["arrived": 2, "repeated": 2])
    }
}
