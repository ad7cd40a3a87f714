import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongGatewayTestKit
import TuisongHarmony
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

/// HarmonyOS NEXT registered the new way (#31): its declaration gives the channel, the token
/// rule, `transports.harmony.*`, the credential form and the factory; local mode's look-alike
/// stands in for Push Kit v3.
@Suite struct HarmonyRegistryTests {
    @Test func theChannelItsTokensAndItsConfigSection() throws {
        TransportRegistry.install()
        #expect(TransportRegistry.standard.channels.last == .harmony)
        #expect(PushChannel.declared("harmony") == .harmony)
        #expect(PushChannel.harmony.displayName == "HarmonyOS" && PushChannel.harmony.withArticle == "a HarmonyOS")
        #expect(PushChannel.harmony.isAndroid, "Android-style: opaque tokens, its own credential")
        // Base64-like tokens, `+/=` included; never APNs hex, no spaces, at most 4 KB.
        let token = "MAMzLgBAAAA+abc/DEF=="
        #expect(DeviceToken(token, channel: .harmony)?.value == token)
        #expect(DeviceToken(String(repeating: "ab", count: 32), channel: .harmony) == nil)
        #expect(DeviceToken("two words", channel: .harmony) == nil)
        #expect(DeviceToken(String(repeating: "a", count: 4097), channel: .harmony) == nil)
        #expect(DeviceToken(token, channel: .fcm) == nil, "FCM's rule has no + / =")

        let defaults = try GatewayConfig.load(fileContents: nil, environment: [:])
        #expect(defaults.transports.section(.harmony)["url"] == "https://push-api.cloud.huawei.com")
        let overridden = try GatewayConfig.load(
            fileContents: nil, environment: ["TUISONG_TRANSPORTS_HARMONY_URL": "https://harmony.example/push"])
        #expect(overridden.transports.section(.harmony)["url"] == "https://harmony.example/push")
        let fromFile = try GatewayConfig.load(
            fileContents: Data(#"{"transports": {"harmony": {"url": "https://h.example"}}}"#.utf8), environment: [:])
        #expect(fromFile.transports.section(.harmony)["url"] == "https://h.example")
        #expect(throws: ConfigError.self) {
            try GatewayConfig.load(fileContents: nil, environment: ["TUISONG_TRANSPORTS_HARMONY_URL": "ftp://x"])
        }
    }

    @Test func theCredentialFormTakesTheKeyFileAndSealsIt() throws {
        let form = try #require(HarmonyService.declaration.credentialForm)
        #expect(form.fields.map(\.name) == ["file", "category", "receipt_id"])
        #expect(form.fields[0].cliFlag == "--service-account" && form.fields[0].kind == .file)
        let key = try TestKeys.rsa(0)
        func file(project: String = "101888", sub: String = "2001", pem: String? = nil) throws -> [UInt8] {
            JSONValue.object([
                "project_id": .string(project), "key_id": "0123abcd", "sub_account": .string(sub),
                "private_key": .string(try pem ?? key.pkcs8PEM()),
            ]).serialized()
        }
        let context = CredentialFormContext(testTokenHosts: [])
        let valid = try form.validate(
            CredentialFormInput(values: ["category": "IM"], files: ["file": try file()]), context)
        #expect(valid.vendorAppID == "101888" && valid.clientID == "2001" && valid.options == ["category": "IM"])
        #expect(try HarmonyServiceAccount(json: valid.secret).keyID == "0123abcd")
        func refusal(_ input: CredentialFormInput) -> CredentialFormError? {
            do {
                _ = try form.validate(input, context)
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal(CredentialFormInput())?.field == "file")
        #expect(refusal(CredentialFormInput(files: ["file": Array("{}".utf8)]))?.code == "invalid_service_account")
        #expect(
            refusal(CredentialFormInput(files: ["file": try file(project: "abc")]))?.code == "invalid_service_account")
        #expect(refusal(CredentialFormInput(files: ["file": try file(pem: "nope")]))?.code == "invalid_service_account")
        let badCategory = refusal(CredentialFormInput(values: ["category": "CHAT"], files: ["file": try file()]))
        #expect(badCategory?.code == "invalid_category" && badCategory?.field == "category")
        // The refusal never quotes the key.
        #expect(
            !(refusal(CredentialFormInput(files: ["file": try file(project: "x")]))?.message ?? "").contains("PRIVATE"))
    }

    /// Local mode: the gateway makes the harmony transport from its section, its fallback is the
    /// look-alike's own service account, and a push reaches the look-alike through it.
    @Test func localModeDeliversThroughTheLookAlike() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let session = try await client.call("GET", "/session").jsonObject
        let features = try #require(session["features"] as? [String: Any])
        #expect((features["android_channels"] as? [String])?.contains("harmony") == true)
        let forms = try #require(features["transports"] as? [[String: Any]])
        let harmony = try #require(forms.first { $0["channel"] as? String == "harmony" })
        #expect(harmony["display_name"] as? String == "HarmonyOS")
        // Its name in the console's languages and its codes' meanings are the declaration's:
        // the console keeps no list of services.
        #expect(harmony["display_name_text"] as? [String: String] == ["en": "HarmonyOS", "zh": "鸿蒙"])
        let codes = try #require(harmony["service_codes"] as? [String: [String: String]])
        #expect(codes["80200001"]?["en"]?.hasPrefix("authentication failed") == true)
        #expect(codes["80200001"]?["zh"]?.hasPrefix("鉴权失败") == true)

        // The admin API checks a key file by the declared form.
        let (appID, key) = try await gw.createApp(bundleID: "com.example.harmony")
        let refused = try await client.call(
            "POST", "/apps/\(appID)/channel-credentials",
            json: ["channel": "harmony", "file": Data("{}".utf8).base64EncodedString()])
        #expect(refused.errorCode == "invalid_service_account", "\(refused.text)")
        // The store keeps any declared channel (v15 / pg9 check the name's shape only): the key
        // file is stored and a HarmonyOS device registered, and a native push to it reaches the
        // look-alike through the uploaded service account.
        let account = HarmonyServiceAccount(
            projectID: "101888", keyID: "0123abcd", privateKeyPEM: try TestKeys.rsa(0).pkcs8PEM(),
            subAccount: "2001")
        let keyFile = Data(account.json).base64EncodedString()
        let stored = try await client.call(
            "POST", "/apps/\(appID)/channel-credentials", json: ["channel": "harmony", "file": keyFile])
        #expect(stored.status == 201, "\(stored.text)")
        let device = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/MAMzLg-1", key: key, json: ["channel": "harmony"])
        #expect(device.status == 201, "\(device.text)")
        let pushed = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tokens": ["MAMzLg-1"]], "notification": ["alert": ["title": "Hi", "body": "鸿蒙"]]])
        #expect(pushed.status == 202, "\(pushed.text)")
        let messageID = try #require(pushed.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(messageID), timeout: .seconds(60))
        let status = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(messageID)", key: key).jsonObject
        #expect((status["counts"] as? [String: Int])?["delivered"] == 1, "\(status)")
        let viaAPI = try #require(gw.mock.receivedAndroidMessages().first { $0.service == .harmony })
        #expect(viaAPI.tokens == ["MAMzLg-1"] && viaAPI.harmonyPushType == 0)
        #expect(try JSONValue(parsing: viaAPI.body)["payload"]?["notification"]?["title"] == "Hi")

        let transport = try #require(gw.runtime.transports.byChannel[.harmony])
        let app = try #require(try await gw.runtime.store.app(id: appID))
        func push(_ token: String, _ content: PushContent) -> OutgoingPush {
            OutgoingPush(
                token: token, environment: .production, content: content,
                headers: PushHeaders(PushOptions(services: ["harmony": ["category": "IM"]])), channel: .harmony)
        }
        let outcomes = await transport.outcomes(
            of: PushBatch(
                app: app,
                pushes: [
                    push("MAMzLg-1", PushContent(title: "Hi", body: "HarmonyOS")),
                    push("unregistered-2", PushContent(title: "Hi", body: "HarmonyOS")),
                ]))
        guard case .delivered = outcomes[0] else {
            Issue.record("expected delivered, got \(outcomes)")
            return
        }
        #expect(outcomes[1] == .invalidate(.service("noRight"), since: nil))
        let received = try #require(gw.mock.receivedAndroidMessages().last { $0.service == .harmony })
        #expect(received.harmonyPushType == 0 && received.tokens == ["MAMzLg-1"])
        #expect(try JSONValue(parsing: received.body)["payload"]?["notification"]?["category"] == "IM")
    }

    /// The native API's `harmony.notify_id` reaches Push Kit as the notification's `notifyId`
    /// (notifications with one id replace each other on the device); a value Push Kit cannot
    /// take is refused with the field's name, and a push without one sends none.
    @Test func aNativePushsNotifyIDReachesTheLookAlike() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.harmony")
        let account = HarmonyServiceAccount(
            projectID: "101888", keyID: "0123abcd", privateKeyPEM: try TestKeys.rsa(0).pkcs8PEM(),
            subAccount: "2001")
        _ = try await gw.runtime.credentialBackend.addChannel(
            .form(channel: .harmony, CredentialFormInput(files: ["file": Array(account.json)])), appID: appID,
            selector: nil)
        let device = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/MAMzLg-7", key: key, json: ["channel": "harmony"])
        #expect(device.status == 201, "\(device.text)")
        func push(_ harmony: [String: Any]?) async throws -> TestResponse {
            var body: [String: Any] = [
                "audience": ["tokens": ["MAMzLg-7"]], "notification": ["alert": ["title": "Hi", "body": "鸿蒙"]],
            ]
            if let harmony { body["harmony"] = harmony }
            return try await http("POST", "\(gw.baseURL)/api/v1/push", key: key, json: body)
        }
        func sent(_ pushed: TestResponse) async throws -> JSONValue? {
            let messageID = try #require(pushed.jsonObject["message_id"] as? Int)
            _ = try await gw.completed(messageID: Int64(messageID), timeout: .seconds(60))
            let received = gw.mock.receivedAndroidMessages().filter { $0.service == .harmony }
            return try received.last.map { try JSONValue(parsing: $0.body)["payload"]?["notification"] } ?? nil
        }
        let pushed = try await push(["notify_id": 7])
        #expect(pushed.status == 202, "\(pushed.text)")
        let notification = try #require(try await sent(pushed))
        #expect(notification["notifyId"] == 7 && notification["title"] == "Hi")

        let refused = try await push(["notify_id": 2_147_483_648])
        #expect(refused.status == 400 && refused.errorCode == "invalid_request")
        #expect(refused.errorMessage == #""harmony.notify_id" must be an integer from -1 to 2147483647"#)

        let plain = try await sent(try await push(nil))
        #expect(plain?["title"] == "Hi" && plain?["notifyId"] == nil)
        #expect(gw.mock.receivedAndroidMessages().filter { $0.service == .harmony }.count == 2)
    }
}
