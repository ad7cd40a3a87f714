import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// The native push API through the real path: HTTP → durable message → dispatcher → APNs pool
/// over TLS + HTTP/2 → the bundled APNs mock (local mode).
@Suite(.serialized) struct PushEndToEndTests {
    func register(_ gw: RunningGateway, _ key: String, _ tokens: [String], tag: String? = nil) async throws {
        for t in tokens {
            var body: [String: Any] = ["environment": "production"]
            if let tag { body["tags"] = [tag] }
            let r = try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(t)", key: key, json: body)
            #expect(r.status == 201)
        }
    }

    /// The message's view through the API once the gateway completed it.
    func waitForCompletion(_ gw: RunningGateway, _ key: String, _ id: Int, timeout: Duration = .seconds(60))
        async throws -> [String: Any]
    {
        _ = try await gw.completed(messageID: Int64(id), timeout: timeout)
        return try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)", key: key).jsonObject
    }

    @Test func tagPushReachesExactlyTheTaggedDevices() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.news")
        let tagged = (1...30).map { token($0, prefix: "aa") }
        let others = (1...10).map { token($0, prefix: "bb") }
        try await register(gw, key, tagged, tag: "sports")
        try await register(gw, key, others)

        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: [
                "audience": ["tag": "sports"],
                "notification": [
                    "alert": ["title": "进球", "body": "2:1"], "badge": 3, "sound": "default", "custom": ["match": 42],
                ],
                "collapse_id": "match-42",
            ])
        #expect(push.status == 202)
        let id = try #require(push.jsonObject["message_id"] as? Int)
        let message = try await waitForCompletion(gw, key, id)
        #expect((message["counts"] as? [String: Int])?["delivered"] == 30)

        let mock = try #require(gw.runtime.localMock)
        let received = mock.receivedNotifications()
        #expect(Set(received.map(\.deviceToken)) == Set(tagged))
        #expect(received.count == 30)
        let first = try #require(received.first)
        #expect(first.topic == "com.example.news")
        #expect(first.pushType == "alert")
        #expect(first.collapseID == "match-42")
        #expect(first.status == 200)
        #expect(
            String(decoding: first.payload, as: UTF8.self)
                == #"{"aps":{"alert":{"body":"2:1","title":"进球"},"badge":3,"sound":"default"},"match":42}"#)
    }

    @Test func unregisteredTokensAreInvalidatedAndSkippedAfterwards() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let dead = token(1, prefix: "410")
        let alive = token(2, prefix: "ab")
        try await register(gw, key, [dead, alive])
        let mock = try #require(gw.runtime.localMock)
        mock.setFaults(LookAlikeConfiguration.Faults.magicTokenPrefixes)

        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "x"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        let message = try await waitForCompletion(gw, key, id)
        #expect((message["counts"] as? [String: Int])?["delivered"] == 1)
        #expect((message["counts"] as? [String: Int])?["failed"] == 1)
        #expect(message["failures"] as? [String: Int] == ["Unregistered": 1])

        let failed = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)/deliveries?state=failed", key: key)
        let rows = failed.jsonObject["deliveries"] as? [[String: Any]] ?? []
        #expect(rows.count == 1)
        #expect(rows.first?["token"] as? String == dead)
        #expect(rows.first?["reason"] as? String == "Unregistered")

        let device = try await http("GET", "\(gw.baseURL)/api/v1/devices/\(dead)", key: key)
        #expect(device.jsonObject["invalidated_at"] is String)

        mock.resetRecorded()
        let second = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "y"]])
        _ = try await waitForCompletion(gw, key, try #require(second.jsonObject["message_id"] as? Int))
        #expect(mock.receivedNotifications().map(\.deviceToken) == [alive], "an invalidated device receives nothing")

        // Registering again makes it deliverable again.
        let again = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(dead)", key: key, json: ["environment": "production"])
        #expect(again.jsonObject["invalidated_at"] is NSNull)
    }

    @Test func retryableFailuresAreRetriedUntilDelivered() async throws {
        let gw = try await TestGateway.start(environment: [
            "TUISONG_DELIVERY_RETRY_BASE_SECONDS": "0.05", "TUISONG_DELIVERY_RETRY_MAX_SECONDS": "0.2",
        ])
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let flaky = token(1, prefix: "500")
        try await register(gw, key, [flaky])
        let mock = try #require(gw.runtime.localMock)
        mock.setFaults(.init(tokenPrefixes: ["500": .init(status: 500, reason: "InternalServerError")]))
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tokens": [flaky]], "notification": ["alert": "x"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        // Let it fail a few times, then heal APNs.
        #expect(await eventually(within: 20) { mock.receivedNotifications().count >= 3 })
        mock.setFaults(.init())
        let message = try await waitForCompletion(gw, key, id)
        #expect((message["counts"] as? [String: Int])?["delivered"] == 1)
        let rows =
            try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)/deliveries", key: key).jsonObject["deliveries"]
            as? [[String: Any]] ?? []
        #expect(rows.first?["state"] as? String == "delivered")
        #expect((rows.first?["attempts"] as? Int ?? 0) >= 3)
    }

    @Test func aCredentialAPNsRefusesHoldsItsDeliveriesAndIsMarkedFailing() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp()
        // A key the mock was never told about (the console would have registered it): APNs
        // answers 403 InvalidProviderToken.
        let stranger = try PrivateKey.generateP256().pkcs8PEM()
        let credential = try await gw.runtime.credentials.add(
            .p8(pem: stranger, keyID: "STRANGER01", teamID: "STRANGER01"), appID: appID, environment: .production)
        let tokens = (1...25).map { token($0, prefix: "cc") }
        try await register(gw, key, tokens)
        let mock = try #require(gw.runtime.localMock)

        try await expectPushToAllHeld(gw, key, tokens, credentialID: credential.id, reason: "InvalidProviderToken")

        // The next push is held without being offered to APNs at all.
        mock.resetRecorded()
        let second = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "y"]])
        let secondMessage = try await waitForCompletion(gw, key, try #require(second.jsonObject["message_id"] as? Int))
        #expect((secondMessage["counts"] as? [String: Int])?["held"] == 25)
        #expect(mock.receivedNotifications().isEmpty)
    }

    @Test func aClientCertificateAPNsRefusesInTheHandshakeHoldsDeliveriesAndIsMarkedFailing() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp()
        // A well-formed push certificate for the app's topic, issued by a CA the mock (APNs)
        // does not trust: the TLS handshake ends with an alert, no HTTP answer ever comes.
        let stranger = try LookAlikeLocalSetup.generate(bundleID: "com.example.test")
        let credential = try await gw.runtime.credentials.add(
            .pem(text: stranger.clientCertificatePEM + "\n" + stranger.clientKeyPEM, password: nil),
            appID: appID, environment: .production)
        let tokens = (1...10).map { token($0, prefix: "cd") }
        try await register(gw, key, tokens)
        let mock = try #require(gw.runtime.localMock)

        // Held at once rather than retried as a transport error until the message expires.
        try await expectPushToAllHeld(gw, key, tokens, credentialID: credential.id, reason: "BadCertificate")
        #expect(mock.receivedNotifications().isEmpty)
        #expect(mock.statistics.handshakeFailures >= 1)
    }

    @Test func aPushReachingNoDeviceIsAcceptedWithAWarning() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let registered = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: key,
            json: ["environment": "production", "tags": ["vip"]])
        let deviceID = try #require(registered.jsonObject["id"] as? Int)
        func warnings(_ audience: [String: Any]) async throws -> [String]? {
            let answer = try await http(
                "POST", "\(gw.baseURL)/api/v1/push", key: key,
                json: ["audience": audience, "notification": ["alert": "x"]])
            #expect(answer.status == 202, "\(audience)")
            return answer.jsonObject["warnings"] as? [String]
        }
        #expect(try await warnings(["tag": "nobody-here"]) == ["audience_empty"])
        #expect(try await warnings(["tag": "VIP"]) == ["audience_empty"], "tags are case-sensitive")
        #expect(try await warnings(["devices": [deviceID + 1000]]) == ["audience_empty"])
        #expect(
            try await warnings(["tokens": ["dGVzdC1pbnN0YW5jZQ:APA91bUnregistered"]]) == ["audience_empty"],
            "an unregistered Android token has no channel to be sent on")
        #expect(try await warnings(["tag": "vip"]) == nil)
        #expect(try await warnings(["all": true]) == nil)
        #expect(try await warnings(["devices": [deviceID]]) == nil)
        #expect(try await warnings(["tokens": [token(2)]]) == nil, "an unregistered APNs token is still sent")
    }

    @Test func badPushRequestsAreRefusedInTheNativeDialect() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        func post(_ body: Any) async throws -> TestResponse {
            try await http("POST", "\(gw.baseURL)/api/v1/push", key: key, json: body)
        }
        #expect(try await post(["notification": ["alert": "x"]]).errorCode == "invalid_request")
        #expect(
            try await post(["audience": ["tag": "a", "all": true], "notification": ["alert": "x"]]).errorCode
                == "invalid_request")
        #expect(
            try await post(["audience": ["tokens": ["z z"]], "notification": ["alert": "x"]]).errorCode
                == "invalid_token")
        #expect(
            try await post([
                "audience": ["all": true],
                "notification": ["alert": "x", "custom": ["big": String(repeating: "x", count: 5000)]],
            ]).errorCode == "notification_too_large")
        // The keys only APNs takes are checked by the APNs transport (its entry of the content),
        // and refused in the native dialect as before.
        let score = try await post(["audience": ["all": true], "notification": ["alert": "x", "relevance_score": 2]])
        #expect(score.status == 400)
        #expect(score.errorCode == "invalid_notification")
        #expect(score.errorMessage == "relevance-score must be within 0…1, got 2.0")
        let volume = try await post([
            "audience": ["all": true], "notification": ["alert": "x", "sound": ["name": "a.caf", "volume": 1.5]],
        ])
        #expect(volume.status == 400 && volume.errorCode == "invalid_notification")
        #expect(volume.errorMessage == "critical sound volume must be within 0…1, got 1.5")
        #expect(
            try await post(["audience": ["all": true], "notification": ["alert": "x", "interruption_level": "loud"]])
                .errorCode == "invalid_request")
        #expect(
            try await post(["audience": ["all": true], "notification": ["alert": "x"], "push_type": "fax"]).errorCode
                == "invalid_request")
        #expect(
            try await post([
                "audience": ["all": true], "notification": ["alert": "x"],
                "collapse_id": String(repeating: "c", count: 65),
            ]).errorCode == "invalid_request")
        // Over the route's limit (the largest valid push) the front door answers 413 before any
        // parsing: a body that is not even JSON gets the size refusal, in the native dialect.
        let oversized = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            body: Data(repeating: UInt8(ascii: "x"), count: NativePushAPI.bodyLimit + 1),
            contentType: "application/json")
        #expect(oversized.status == 413)
        #expect(oversized.errorCode == "payload_too_large")
        #expect(oversized.errorMessage?.isEmpty == false)
        #expect(try await gw.runtime.store.messages(appID: nil, limit: 10).isEmpty, "nothing half-done stays behind")
        let missing = try await http("GET", "\(gw.baseURL)/api/v1/messages/999", key: key)
        #expect(missing.status == 404)
    }
}

extension PushEndToEndTests {
    /// Pushes to all of the app's devices and expects every one held with `reason`, nothing
    /// delivered or failed, and the credential marked failing with the same reason.
    func expectPushToAllHeld(
        _ gw: RunningGateway, _ key: String, _ tokens: [String], credentialID: Int64, reason: String
    ) async throws {
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "x"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        let message = try await waitForCompletion(gw, key, id)
        let counts = message["counts"] as? [String: Int]
        #expect(counts?["held"] == tokens.count)
        #expect(counts?["delivered"] == 0)
        #expect(counts?["failed"] == 0)
        #expect((message["failures"] as? [String: Int] ?? [:]).isEmpty)
        let held = try await gw.runtime.store.deliveries(messageID: Int64(id), state: .held, cursor: nil, limit: 100)
        #expect(Set(held.items.map(\.token)) == Set(tokens))
        #expect(held.items.allSatisfy { $0.reason == reason })
        let marked = try #require(try await gw.runtime.store.credential(id: credentialID))
        #expect(marked.status == "failing")
        #expect(marked.statusReason == reason)
    }
}
