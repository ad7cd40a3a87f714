import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Android devices through the whole gateway: native API → message → channel router → the
/// FCM, Huawei and Honor transports over TLS + HTTP/2 → the bundled look-alike.
@Suite(.serialized) struct AndroidEndToEndTests {
    func register(_ gw: RunningGateway, _ key: String, _ token: String, _ body: [String: Any]) async throws {
        let r = try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(token)", key: key, json: body)
        #expect(r.status == 201, "\(r.text)")
    }

    func push(_ gw: RunningGateway, _ key: String, _ body: [String: Any]) async throws -> Int {
        let push = try await http("POST", "\(gw.baseURL)/api/v1/push", key: key, json: body)
        #expect(push.status == 202, "\(push.text)")
        return try #require(push.jsonObject["message_id"] as? Int)
    }

    /// Done when: local mode delivers one push to an iOS and an Android (FCM) device, each
    /// through its own look-alike, with no account of either.
    @Test(arguments: PluginStoreBackend.allCases)
    func localModeDeliversToAnIPhoneAndEveryAndroidService(_ database: PluginStoreBackend) async throws {
        let gw = try await TestGateway.start(database: database)
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.chat")
        let iphone = token(1, prefix: "ab")
        try await register(gw, key, iphone, ["environment": "production", "tags": ["all"]])
        try await register(gw, key, "fcm-token:APA91b-1", ["channel": "fcm", "tags": ["all"]])
        try await register(gw, key, "huawei-token-1", ["channel": "huawei", "tags": ["all"]])
        try await register(gw, key, "honor-token-1", ["channel": "honor", "tags": ["all"]])
        try await register(gw, key, "xiaomi-token-1", ["channel": "xiaomi", "tags": ["all"]])
        try await register(gw, key, "oppo-token-1", ["channel": "oppo", "tags": ["all"]])
        try await register(gw, key, "vivo-token-1", ["channel": "vivo", "tags": ["all"]])
        let id = try await push(
            gw, key,
            [
                "audience": ["tag": "all"],
                "notification": ["alert": ["title": "Ann", "body": "Lunch?"], "badge": 2, "custom": ["chat": "7"]],
            ])
        _ = try await gw.completed(messageID: Int64(id))
        let message = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)?channels=true", key: key).jsonObject
        #expect((message["counts"] as? [String: Int])?["delivered"] == 7)
        let channels = try #require(message["channels"] as? [String: [String: Int]])
        for channel in ["apns", "fcm", "huawei", "honor", "xiaomi", "oppo", "vivo"] {
            #expect(channels[channel]?["delivered"] == 1, "\(channel)")
        }

        let mock = gw.mock
        #expect(mock.receivedNotifications().map(\.deviceToken) == [iphone])
        let android = mock.receivedAndroidMessages()
        #expect(Set(android.map(\.service)) == [.fcm, .huawei, .honor, .xiaomi, .oppo, .vivo])
        let fcm = try #require(android.first { $0.service == .fcm })
        #expect(fcm.tokens == ["fcm-token:APA91b-1"])
        let sent = try #require(try JSONValue(parsing: fcm.body)["message"])
        #expect(sent["notification"] == ["title": "Ann", "body": "Lunch?"])
        #expect(sent["android"]?["notification"]?["notification_count"] == 2)
        #expect(sent["data"] == ["chat": "7"])
        let huawei = try #require(android.first { $0.service == .huawei })
        #expect(try JSONValue(parsing: huawei.body)["message"]?["android"]?["notification"]?["body"] == "Lunch?")

        // Metrics per channel.
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(metrics.contains(#"tuisong_deliveries_total{channel="fcm",outcome="delivered",reason=""} 1"#))
        #expect(metrics.contains(#"tuisong_channel_token_refreshes{channel="fcm"} 1"#))
    }

    /// Issue #41, item 1: the environment is every device's. A tag holds iPhones, Android and
    /// HarmonyOS phones of both environments (an FCM and a HarmonyOS test phone registered
    /// `sandbox`). A sandbox push reaches only the sandbox ones, the HarmonyOS one as a test
    /// message, and counts the production ones skipped `other_environment`; a production push
    /// does the opposite; a push without an environment reaches each device in its own.
    @Test(arguments: PluginStoreBackend.allCases)
    func aSandboxPushReachesOnlySandboxDevicesOfEveryChannel(_ database: PluginStoreBackend) async throws {
        let gw = try await TestGateway.start(database: database)
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.sandbox")
        let sandboxIPhone = token(1, prefix: "5a")
        let productionIPhone = token(3, prefix: "9c")
        try await register(gw, key, sandboxIPhone, ["environment": "sandbox", "tags": ["beta"]])
        try await register(gw, key, productionIPhone, ["environment": "production", "tags": ["beta"]])
        try await register(
            gw, key, "test-fcm:APA91b-1", ["channel": "fcm", "environment": "sandbox", "tags": ["beta"]])
        try await register(gw, key, "prod-fcm:APA91b-2", ["channel": "fcm", "tags": ["beta"]])
        try await register(gw, key, "prod-huawei-1", ["channel": "huawei", "tags": ["beta"]])
        try await register(
            gw, key, "test-harmony-1", ["channel": "harmony", "environment": "sandbox", "tags": ["beta"]])
        try await register(gw, key, "prod-harmony-2", ["channel": "harmony", "tags": ["beta"]])

        func send(_ environment: String?) async throws -> (MessageStatus, [String], [ReceivedAndroidMessage]) {
            gw.mock.resetRecorded()
            var body: [String: Any] = ["audience": ["tag": "beta"], "notification": ["alert": "hi"]]
            body["environment"] = environment
            let status = try await gw.completed(messageID: Int64(try await push(gw, key, body)))
            return (status, gw.mock.receivedNotifications().map(\.deviceToken), gw.mock.receivedAndroidMessages())
        }
        func tokens(_ messages: [ReceivedAndroidMessage], _ service: AndroidPushService) -> Set<String> {
            Set(messages.filter { $0.service == service }.flatMap(\.tokens))
        }

        let (sandbox, sandboxIPhones, sandboxAndroid) = try await send("sandbox")
        #expect(sandbox.counts.delivered == 3, "\(sandbox.counts) \(sandbox.skips)")
        #expect(sandbox.counts.skipped == 4 && sandbox.skips == ["other_environment": 4])
        #expect(sandbox.counts.total == 7, "the skipped are counted, not absent")
        #expect(sandboxIPhones == [sandboxIPhone])
        #expect(tokens(sandboxAndroid, .fcm) == ["test-fcm:APA91b-1"])
        #expect(tokens(sandboxAndroid, .huawei).isEmpty)
        let harmony = sandboxAndroid.filter { $0.service == .harmony }
        #expect(harmony.map(\.tokens) == [["test-harmony-1"]])
        #expect(harmony.allSatisfy { $0.harmonyTestMessage }, "a sandbox HarmonyOS phone gets a test message")

        let (production, productionIPhones, productionAndroid) = try await send("production")
        #expect(production.counts.delivered == 4 && production.skips == ["other_environment": 3])
        #expect(productionIPhones == [productionIPhone])
        #expect(tokens(productionAndroid, .fcm) == ["prod-fcm:APA91b-2"])
        #expect(tokens(productionAndroid, .harmony) == ["prod-harmony-2"])
        #expect(productionAndroid.allSatisfy { !$0.harmonyTestMessage })

        let (each, eachIPhones, eachAndroid) = try await send(nil)
        #expect(each.counts.delivered == 7 && each.counts.skipped == 0, "\(each.counts) \(each.skips)")
        #expect(Set(eachIPhones) == [sandboxIPhone, productionIPhone])
        let harmonyRequests = eachAndroid.filter { $0.service == .harmony }
        #expect(harmonyRequests.first { $0.tokens == ["test-harmony-1"] }?.harmonyTestMessage == true)
        #expect(harmonyRequests.first { $0.tokens == ["prod-harmony-2"] }?.harmonyTestMessage == false)
    }

    /// Issue #29, bug 2, through the gateway: a background push (custom data only) goes as a
    /// data message where the service has one (FCM, Huawei, Xiaomi `pass_through=1`) and is
    /// skipped as `unsupported_content` on vivo and OPPO, counted in the status and the
    /// metrics, never sent.
    @Test func aBackgroundPushIsADataMessageOrSkippedPerService() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.bg")
        try await register(gw, key, "bg-fcm:APA91b-1", ["channel": "fcm", "tags": ["bg"]])
        try await register(gw, key, "bg-huawei-1", ["channel": "huawei", "tags": ["bg"]])
        try await register(gw, key, "bg-xiaomi-1", ["channel": "xiaomi", "tags": ["bg"]])
        try await register(gw, key, "bg-oppo-1", ["channel": "oppo", "tags": ["bg"]])
        try await register(gw, key, "bg-vivo-1", ["channel": "vivo", "tags": ["bg"]])
        let id = try await push(
            gw, key,
            [
                "audience": ["tag": "bg"],
                "notification": ["content_available": true, "custom": ["sync": "inbox"]],
            ])
        let status = try await gw.completed(messageID: Int64(id))
        #expect(status.counts.delivered == 3, "\(status.counts) \(status.failures)")
        #expect(status.counts.skipped == 2)
        #expect(status.skips == ["unsupported_content": 2])
        let android = gw.mock.receivedAndroidMessages()
        #expect(Set(android.map(\.service)) == [.fcm, .huawei, .xiaomi])
        let fcm = try #require(android.first { $0.service == .fcm })
        let message = try #require(try JSONValue(parsing: fcm.body)["message"])
        #expect(message["notification"] == nil)
        #expect(message["data"] == ["sync": "inbox"])
        let huawei = try #require(android.first { $0.service == .huawei })
        #expect(try JSONValue(parsing: huawei.body)["message"]?["android"]?["notification"] == nil)
        let xiaomi = String(decoding: try #require(android.first { $0.service == .xiaomi }).body, as: UTF8.self)
        #expect(xiaomi.contains("pass_through=1"))
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        for channel in ["oppo", "vivo"] {
            #expect(
                metrics.contains(
                    #"tuisong_deliveries_total{channel="\#(channel)",outcome="skipped",reason="unsupported_content"} 1"#
                ),
                "\(channel)")
        }
    }

    /// Local mode learns an uploaded Android credential as the real service knows its own
    /// accounts: an app's own FCM service account and Huawei client deliver through the
    /// look-alike, and the look-alike saw them sign in.
    @Test func localModeDeliversWithAnUploadedCredential() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.own")
        let rsa = try TestKeys.rsa(0)
        let account: JSONValue = [
            "type": "service_account", "project_id": "own-project", "private_key_id": "k1",
            "private_key": .string(try rsa.pkcs8PEM()), "client_email": "push@own-project.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        _ = try await gw.runtime.credentialBackend.addChannel(
            .fcm(serviceAccountJSON: account.serialized()), appID: appID, selector: nil)
        _ = try await gw.runtime.credentialBackend.addChannel(
            .oauthClient(
                channel: .huawei, vendorAppID: "10086", clientID: "10086", clientSecret: "s3cret", badgeClass: nil),
            appID: appID, selector: nil)
        try await register(gw, key, "own-fcm-1", ["channel": "fcm"])
        try await register(gw, key, "own-huawei-1", ["channel": "huawei"])
        let id = try await push(gw, key, ["audience": ["all": true], "notification": ["alert": "mine"]])
        let status = try await gw.completed(messageID: Int64(id))
        #expect(status.counts.delivered == 2, "\(status.failures) \(status.counts)")
        let received = gw.mock.receivedAndroidMessages()
        #expect(received.first { $0.service == .fcm }?.target == "own-project")
        #expect(received.first { $0.service == .huawei }?.target == "10086")
    }

    /// The native API's `android` object reaches each service in its own words; a field the
    /// API does not know is refused in the native dialect.
    @Test func androidOptionsReachEachService() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.opts")
        try await register(gw, key, "opt-fcm", ["channel": "fcm", "tags": ["o"]])
        try await register(gw, key, "opt-huawei", ["channel": "huawei", "tags": ["o"]])
        try await register(gw, key, "opt-honor", ["channel": "honor", "tags": ["o"]])
        let id = try await push(
            gw, key,
            [
                "audience": ["tag": "o"], "notification": ["alert": ["title": "T", "body": "B"]],
                "android": [
                    "channel_ids": ["fcm": "chat", "huawei": "im"], "importance": ["huawei": "LOW", "honor": "LOW"],
                    "category": ["huawei": "IM"], "sound": "ding", "intent": "intent://chat/7#Intent;scheme=app;end",
                ],
            ])
        let status = try await gw.completed(messageID: Int64(id))
        #expect(status.counts.delivered == 3, "\(status.failures)")
        let received = gw.mock.receivedAndroidMessages()
        let fcm = try JSONValue(parsing: try #require(received.first { $0.service == .fcm }).body)
        #expect(fcm["message"]?["android"]?["notification"]?["channel_id"] == "chat")
        #expect(fcm["message"]?["android"]?["notification"]?["sound"] == "ding")
        let huawei = try JSONValue(parsing: try #require(received.first { $0.service == .huawei }).body)
        let android = try #require(huawei["message"]?["android"])
        #expect(android["category"] == "IM")
        #expect(android["notification"]?["importance"] == "LOW")
        #expect(android["notification"]?["channel_id"] == "im")
        #expect(android["notification"]?["click_action"]?["intent"] == "intent://chat/7#Intent;scheme=app;end")
        let honor = try JSONValue(parsing: try #require(received.first { $0.service == .honor }).body)
        #expect(honor["android"]?["notification"]?["importance"] == "LOW")

        for bad: [String: Any] in [
            ["channel_ids": ["apns": "x"]], ["importance": ["fcm": 3]], ["vivo_classification": 2], ["colour": "red"],
        ] {
            let r = try await http(
                "POST", "\(gw.baseURL)/api/v1/push", key: key,
                json: ["audience": ["tag": "o"], "notification": ["alert": "x"], "android": bad])
            #expect(r.status == 400, "\(bad)")
            #expect(r.errorCode == "invalid_request", "\(r.text)")
        }
    }

    /// vivo's classification, as the `vivo` object or the `android` object's older key, reaches
    /// vivo (its own object winning when both say it); nothing else but 0 or 1 is taken.
    @Test func vivosClassificationReachesVivoFromEitherField() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.vivo")
        try await register(gw, key, "vivo-1", ["channel": "vivo"])
        func classification(_ extra: [String: Any]) async throws -> JSONValue? {
            let before = gw.mock.receivedAndroidMessages().filter { $0.service == .vivo }.count
            let body = ["audience": ["all": true], "notification": ["alert": "hi"]].merging(extra) { $1 }
            let id = try await push(gw, key, body)
            let status = try await gw.completed(messageID: Int64(id))
            #expect(status.counts.delivered == 1, "\(status.failures)")
            let sent = gw.mock.receivedAndroidMessages().filter { $0.service == .vivo }
            #expect(sent.count == before + 1)
            return try JSONValue(parsing: try #require(sent.last).body)["classification"]
        }
        #expect(try await classification([:]) == 0, "vivo's default: an operation message")
        #expect(try await classification(["android": ["vivo_classification": 1]]) == 1)
        #expect(try await classification(["vivo": ["classification": 1]]) == 1)
        #expect(
            try await classification(["vivo": ["classification": 0], "android": ["vivo_classification": 1]]) == 0)

        for (bad, message): ([String: Any], String) in [
            (
                ["android": ["vivo_classification": 2]],
                #""android.vivo_classification" must be 0 (operation) or 1 (system)"#
            ),
            (["vivo": ["classification": "1"]], #""vivo.classification" must be 0 (operation) or 1 (system)"#),
            (["vivo": ["colour": "red"]], #"unknown field "vivo.colour""#),
        ] {
            let r = try await http(
                "POST", "\(gw.baseURL)/api/v1/push", key: key,
                json: ["audience": ["all": true], "notification": ["alert": "x"]].merging(bad) { $1 })
            #expect(r.status == 400, "\(bad)")
            #expect(r.errorCode == "invalid_request" && r.errorMessage == message, "\(r.text)")
        }
    }

    /// An app with no credential for a channel: its devices there are held `no_credential`, as
    /// APNs's are, and the message says it waits for them (not "completed"); adding the
    /// service's credential releases and sends them, and only then is the message completed. A
    /// channel with a credential delivers; a token no device registered counts under no service.
    @Test func withoutLocalModeAChannelWithoutCredentialIsHeldUntilOneIsAdded() async throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.prod")
        var configuration = setup.configuration(host: "127.0.0.1", port: 0)
        configuration.faults = .magicTokenPrefixes
        let mock = try LookAlikeServer(
            configuration: configuration, certificate: setup.serverCertificate, key: setup.serverKey)
        try mock.start()
        defer { mock.shutdown() }
        let directory = FileManager.default.temporaryDirectory.appending(path: "android-prod-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appending(path: "ca.pem").path
        try setup.writeCAFile(to: caFile)
        let base = "https://127.0.0.1:\(mock.port)"
        let gw = try await TestGateway.start(environment: [
            "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_APNS_PRODUCTION_URL": base, "TUISONG_APNS_CA_FILE": caFile,
            "TUISONG_TRANSPORTS_CA_FILE": caFile, "TUISONG_TRANSPORTS_FCM_URL": base,
            "TUISONG_TRANSPORTS_HUAWEI_URL": base, "TUISONG_TRANSPORTS_HUAWEI_TOKEN_URL": base + "/oauth2/v3/token",
        ])
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.prod")
        // The config points FCM at the look-alike, so a token_uri on its host is allowed.
        _ = try await ChannelCredentialService(
            store: gw.runtime.store, masterKey: gw.runtime.masterKey,
            testTokenHosts: ChannelCredentialService.testTokenHosts(gw.runtime.config)
        ).add(.fcm(serviceAccountJSON: setup.fcmServiceAccountJSON(tokenURI: base + "/token")), appID: appID)
        try await register(gw, key, "fcm-a", ["channel": "fcm", "tags": ["t"]])
        try await register(gw, key, "unregistered-fcm-b", ["channel": "fcm", "tags": ["t"]])
        try await register(gw, key, "huawei-a", ["channel": "huawei", "tags": ["t"]])
        let id = try await push(gw, key, ["audience": ["tag": "t"], "notification": ["alert": "hi"]])
        let status = try await gw.completed(messageID: Int64(id))
        #expect(status.counts.delivered == 1)
        #expect(status.counts.failed == 1)
        #expect(status.counts.held == 1)
        #expect(status.counts.skipped == 0)
        #expect(status.failures["UNREGISTERED"] == 1)
        let held = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)", key: key)
        #expect(held.jsonObject["state"] as? String == "held", "\(held.text)")
        #expect(held.jsonObject["completed_at"] is NSNull)
        let waiting = try #require(held.jsonObject["waiting_for"] as? [[String: Any]])
        #expect(waiting.count == 1)
        #expect(waiting.first?["state"] as? String == "held")
        #expect(waiting.first?["reason"] as? String == "no_credential")
        #expect(waiting.first?["count"] as? Int == 1)
        #expect(waiting.first?["until"] is String, "held until the message expires")

        let channels = try await gw.runtime.store.channelCounts(messageID: Int64(id))
        #expect(channels[.fcm]?.delivered == 1)
        #expect(channels[.fcm]?.failed == 1)
        #expect(channels[.huawei]?.held == 1)
        // The unregistered token's device is invalidated.
        let device = try await http("GET", "\(gw.baseURL)/api/v1/devices/unregistered-fcm-b", key: key)
        #expect(device.jsonObject["invalidated_at"] is String)

        // A Huawei credential arrives: the held delivery is released and sent, and the message
        // completes.
        let client = setup.huaweiClient
        _ = try await gw.runtime.credentialBackend.addChannel(
            .oauthClient(
                channel: .huawei, vendorAppID: client.appID, clientID: client.clientID,
                clientSecret: client.clientSecret, badgeClass: nil), appID: appID, selector: nil)
        let done = try await DeliveryWait.until(gw.runtime.engine, Int64(id)) { $0.counts.delivered == 2 }
        #expect(done.state == "completed" && done.completedAt != nil)
        let completed = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)?channels=true", key: key)
        #expect(completed.jsonObject["state"] as? String == "completed")
        #expect(completed.jsonObject["completed_at"] is String)
        #expect(completed.jsonObject["waiting_for"] == nil)
        #expect(try await gw.runtime.store.channelCounts(messageID: Int64(id))[.huawei]?.delivered == 1)

        // An explicit token no device registered is skipped, counted under no service.
        let unknown = try await push(
            gw, key, ["audience": ["tokens": ["fcm-never-registered:APA91b"]], "notification": ["alert": "hi"]])
        let skipped = try await gw.completed(messageID: Int64(unknown))
        #expect(skipped.skips["UnknownDevice"] == 1)
        let byChannel = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(unknown)?channels=true", key: key)
        #expect((byChannel.jsonObject["channels"] as? [String: Any])?.isEmpty == true, "\(byChannel.text)")
    }

    /// "Add and check": adding a credential signs in with the service once and reports its
    /// answer; a refused one (a wrong Honor or Huawei secret, checked at the look-alikes) is
    /// saved, marked failing with the service's reason; a right one is accepted.
    @Test func addingACredentialSignsInOnceAndKeepsARefusedOneMarkedFailing() async throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.check")
        let mock = try LookAlikeServer(
            configuration: setup.configuration(host: "127.0.0.1", port: 0), certificate: setup.serverCertificate,
            key: setup.serverKey)
        try mock.start()
        defer { mock.shutdown() }
        let directory = FileManager.default.temporaryDirectory.appending(path: "android-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appending(path: "ca.pem").path
        try setup.writeCAFile(to: caFile)
        let base = "https://127.0.0.1:\(mock.port)"
        let gw = try await TestGateway.start(environment: [
            "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_APNS_PRODUCTION_URL": base, "TUISONG_APNS_CA_FILE": caFile,
            "TUISONG_TRANSPORTS_CA_FILE": caFile, "TUISONG_TRANSPORTS_HUAWEI_URL": base,
            "TUISONG_TRANSPORTS_HUAWEI_TOKEN_URL": base + "/oauth2/v3/token", "TUISONG_TRANSPORTS_HONOR_URL": base,
            "TUISONG_TRANSPORTS_HONOR_TOKEN_URL": base + "/auth/token",
        ])
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp(bundleID: "com.example.check")
        let backend = gw.runtime.credentialBackend
        let honor = setup.honorClient

        let wrong = try await backend.addChannel(
            .oauthClient(
                channel: .honor, vendorAppID: honor.appID, clientID: honor.clientID,
                clientSecret: honor.clientSecret + "x", badgeClass: nil), appID: appID, selector: "old")
        guard case .refused(let reason) = wrong.check else {
            Issue.record("a wrong Honor secret must be refused, got \(wrong.check)")
            return
        }
        #expect(!reason.isEmpty)
        #expect(wrong.record.status == "failing" && wrong.record.statusReason == reason)
        let stored = try #require(try await gw.runtime.store.channelCredential(id: wrong.record.id))
        #expect(stored.status == "failing" && stored.statusReason == reason, "saved either way, marked failing")

        let right = try await backend.addChannel(
            .oauthClient(
                channel: .honor, vendorAppID: honor.appID, clientID: honor.clientID, clientSecret: honor.clientSecret,
                badgeClass: nil), appID: appID, selector: nil)
        #expect(right.check == .accepted)
        #expect(right.record.status == "ok")

        let huawei = try await backend.addChannel(
            .oauthClient(
                channel: .huawei, vendorAppID: setup.huaweiClient.appID, clientID: setup.huaweiClient.clientID,
                clientSecret: "not-the-secret", badgeClass: nil), appID: appID, selector: nil)
        guard case .refused = huawei.check else {
            Issue.record("a wrong Huawei secret must be refused, got \(huawei.check)")
            return
        }
        #expect(try await gw.runtime.store.channelCredential(id: huawei.record.id)?.status == "failing")

        // The monitor's failing credentials say which one: its selector and when it was added.
        let alerts = try await AdminMonitorAPI(api: gw.runtime.adminAPI).credentialAlerts(now: Date())
        let failing = try #require(alerts["failing"] as? [[String: Any]])
        #expect(failing.count == 2)
        #expect(failing.contains { $0["selector"] as? String == "old" && $0["created_at"] is String })
    }

    /// A `.p8` key is probed when it is added (one push to a made-up device token): a key the
    /// APNs look-alike does not know (a wrong key id or team) is saved, marked failing with
    /// APNs's InvalidProviderToken; the right one stays ok.
    @Test func addingATokenKeyProbesAPNsOnce() async throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.probe")
        let mock = try LookAlikeServer(
            configuration: setup.configuration(host: "127.0.0.1", port: 0), certificate: setup.serverCertificate,
            key: setup.serverKey)
        try mock.start()
        defer { mock.shutdown() }
        let directory = FileManager.default.temporaryDirectory.appending(path: "apns-probe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appending(path: "ca.pem").path
        try setup.writeCAFile(to: caFile)
        let base = "https://127.0.0.1:\(mock.port)"
        let gw = try await TestGateway.start(environment: [
            "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_APNS_PRODUCTION_URL": base, "TUISONG_APNS_CA_FILE": caFile,
        ])
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp(bundleID: "com.example.probe")

        let wrongTeam = try await gw.runtime.addCredential(
            .p8(pem: setup.tokenKeyPEM, keyID: setup.keyID, teamID: "WRONGTEAM1"), appID: appID,
            environment: .production)
        #expect(wrongTeam.status == "failing")
        #expect(wrongTeam.statusReason == "InvalidProviderToken")
        let stored = try await gw.runtime.store.credentials(appID: appID).first { $0.id == wrongTeam.id }
        #expect(stored?.status == "failing", "saved either way, marked failing")

        let right = try await gw.runtime.addCredential(
            .p8(pem: setup.tokenKeyPEM, keyID: setup.keyID, teamID: setup.teamID), appID: appID,
            environment: .production)
        #expect(right.status == "ok", "\(right.statusReason ?? "")")
        #expect(mock.receivedNotifications().isEmpty, "the probe reaches no device")
    }
}
