import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import JPushProvider
@testable import TuisongGateway

/// The whole gateway with the JPush provider mounted by the default config, driven by JPush's
/// own Python server SDK (`jpush` on PyPI, 3.4.1) with only its hosts changed: devices, tags,
/// aliases, pushes by tag, alias and registration id, the batch single push, cids, reports, the
/// errors it raises. Pushes go to the bundled APNs look-alike over TLS + HTTP/2.
@Suite(.serialized) struct JPushSDKTests {
    static let appKey = "7d431e42dfa6a6d693ac2d04"
    static let masterSecret = "5e987ac6d2e04d95a9d8f0d1"

    /// The SDK with its hosts pointed at the gateway (what an app server changes), then the
    /// test's own steps; each step's result is printed as one JSON document.
    static let prelude = #"""
        import sys, json, jpush
        from jpush import common
        port, key, secret = sys.argv[1], sys.argv[2], sys.argv[3]
        args = json.loads(sys.argv[4])
        base = "http://127.0.0.1:%s/v3/" % port
        common.ZONES["DEFAULT"] = {"PUSH": base, "REPORT": base, "DEVICE": base + "devices/",
            "ALIAS": base + "aliases/", "TAG": base + "tags/", "SCHEDULE": base + "schedules/", "ADMIN": base}
        client = jpush.JPush(key, secret)
        out = {}
        def failure(call):
            try:
                call()
                return None
            except jpush.JPushFailure as error:
                return {"status": error.response.status_code, "code": error.error_code}
            except jpush.Unauthorized:
                return {"status": 401}
        """#

    /// Off the cooperative pool: the script calls the gateway in this process, whose handlers
    /// need that pool's threads (two on two cores); waiting for the child on one of them
    /// starved the gateway when tests ran side by side, and the SDK's request timed out.
    static func run(_ script: String, port: Int, arguments: [String: Any], secret: String = masterSecret)
        async throws -> [String: Any]
    {
        let argumentText = String(decoding: try JSONSerialization.data(withJSONObject: arguments), as: UTF8.self)
        let program = prelude + "\n" + script + "\nprint(json.dumps(out))"
        let output = try await offPool { try runPython(program, [String(port), appKey, secret, argumentText]) }
        return try #require(try JSONSerialization.jsonObject(with: Data(output)) as? [String: Any])
    }

    struct Gateway {
        let running: RunningGateway
        let app: App
        let apiKey: String
        var port: Int { running.port }

        /// `PUT /api/v1/devices/{token}` as an app registers a phone; the answer.
        func register(_ token: String, _ body: [String: Any]) async throws -> [String: Any] {
            let response = try await TestClient(port: port).execute(
                "PUT", "/api/v1/devices/\(token)", json: body, headers: [("Authorization", "Bearer \(apiKey)")])
            #expect([200, 201].contains(response.status), "\(response.text)")
            return response.jsonObject
        }

        func completed(_ msgID: Any?) async throws -> MessageStatus {
            let text = try #require(msgID as? String)
            return try await running.completed(messageID: try #require(Int64(text)))
        }

        func skipped(_ status: MessageStatus) async throws -> [String: String] {
            let page = try await running.runtime.store.deliveries(
                messageID: status.record.id, state: .skipped, cursor: nil, limit: 100)
            return Dictionary(page.items.map { ($0.token, $0.reason ?? "") }, uniquingKeysWith: { a, _ in a })
        }

        func alerts() -> [String: [String]] {
            var byToken: [String: [String]] = [:]
            for notification in running.mock.receivedNotifications() {
                let payload = (try? JSONSerialization.jsonObject(with: Data(notification.payload))) as? [String: Any]
                let aps = payload?["aps"] as? [String: Any]
                let alert = aps?["alert"] as? String ?? (aps?["alert"] as? [String: Any])?["body"] as? String ?? ""
                byToken[notification.deviceToken, default: []].append(alert)
            }
            return byToken
        }
    }

    func withGateway(
        on database: PluginStoreBackend, environment: [String: String] = [:], directory: URL? = nil,
        _ body: (Gateway) async throws -> Void
    ) async throws {
        let running = try await RunningGateway.start(
            environment: environment, directory: directory, logLevel: .critical, name: "jpush-e2e", database: database)
        do {
            let runtime = running.runtime
            let apiKey = APIKey.generate()
            var app = try await runtime.store.createApp(
                name: "jpush", bundleID: "com.example.jpush", apiKeyHash: APIKey.hash(apiKey))
            app.vendorSettings["jpush"] = try JPushKeys(appKey: Self.appKey, masterSecret: Self.masterSecret)
                .settings(appID: app.id, sealer: MasterKeySealer(masterKey: runtime.masterKey))
            try await runtime.store.updateApp(app)
            try await body(Gateway(running: running, app: app, apiKey: apiKey))
        } catch {
            await running.stop()
            throw error
        }
        await running.stop()
    }

    static func token(_ n: Int) -> String { testToken(n, prefix: String(repeating: "d", count: 48)) }

    @Test(arguments: PluginStoreBackend.allCases)
    func theServerSDKDrivesDevicesTagsAliasesAndPushes(_ database: PluginStoreBackend) async throws {
        try await withGateway(on: database) { gw in
            // The phones register through the native API; one brings the id it had under JPush.
            let alice = try #require(
                try await gw.register(Self.token(1), ["environment": "production"])["registration_id"] as? String)
            #expect(JPushPayload.registrationIDProblem(alice) == nil && alice.count == 19)
            let imported = "1a0018970a8c4a5e2f4"
            let bob =
                try await gw.register(
                    Self.token(2), ["environment": "sandbox", "registration_id": imported])["registration_id"]
                as? String
            #expect(bob == imported)
            let carol = try #require(
                try await gw.register(Self.token(3), ["environment": "production"])["registration_id"] as? String)
            // Registering again keeps the id.
            #expect(try await gw.register(Self.token(1), [:])["registration_id"] as? String == alice)
            // Another device cannot take an id a device holds.
            let taken = try await TestClient(port: gw.port).execute(
                "PUT", "/api/v1/devices/\(Self.token(4))",
                json: ["environment": "production", "registration_id": alice],
                headers: [("Authorization", "Bearer \(gw.apiKey)")])
            #expect(taken.status == 409 && taken.text.contains("registration_id_taken"), "\(taken.text)")

            let result = try await Self.run(
                #"""
                a, b, c = args["alice"], args["bob"], args["carol"]
                device = client.create_device()
                device.set_deviceinfo(a, {"tags": {"add": ["vip", "北京"]}, "alias": "alice"})
                device.set_deviceinfo(c, jpush.device_tag(jpush.add("vip")))
                device.set_devicemobile(a, jpush.device_mobile("13012345678"))
                device.update_tagusers("beta", {"registration_ids": jpush.add(b, c)})
                device.update_tagusers("beta", {"registration_ids": jpush.remove(c)})
                # JPush's tags may hold a few symbols.
                device.set_deviceinfo(b, jpush.device_tag(jpush.add("vip@2024$+1")))
                out["alice"] = device.get_deviceinfo(a).payload
                out["tags"] = device.get_taglist().payload
                out["carol_vip"] = device.check_taguserexist("vip", c).payload
                out["bob_vip"] = device.check_taguserexist("vip", b).payload
                out["alias"] = device.get_aliasuser("alice").payload
                out["status"] = device.get_device_status([a]).payload
                out["unknown_device"] = failure(lambda: device.get_deviceinfo("1ffffffffffffffffff"))

                push = client.create_push()
                push.audience = jpush.audience(jpush.tag("vip"))
                push.platform = jpush.all_
                push.notification = jpush.notification(alert="to vip")
                push.options = {"sendno": 7}
                out["by_tag"] = push.send().payload

                push = client.create_push()
                push.audience = jpush.audience(jpush.alias("alice"))
                push.platform = jpush.platform("ios")
                push.notification = jpush.notification(ios=jpush.ios(alert="to alice", badge=5, sound="default"))
                out["by_alias"] = push.send().payload

                push = client.create_push()
                push.audience = jpush.audience(jpush.registration_id(b))
                push.platform = jpush.all_
                push.notification = jpush.notification(alert="to bob")
                push.options = {"apns_production": False}
                out["by_registration_id"] = push.send().payload

                push = client.create_push()
                push.audience = jpush.audience(jpush.tag_and("vip", "北京"))
                push.platform = jpush.all_
                push.notification = jpush.notification(alert="vip in beijing")
                out["by_tag_and"] = push.send().payload

                push = client.create_push()
                push.audience = jpush.audience(jpush.tag("vip"), jpush.tag_not("北京"))
                push.platform = jpush.all_
                push.notification = jpush.notification(alert="vip elsewhere")
                out["by_tag_not"] = push.send().payload

                push = client.create_push()
                push.audience = jpush.audience(jpush.tag("vip@2024$+1"))
                push.platform = jpush.all_
                push.notification = jpush.notification(alert="to symbols")
                push.options = {"apns_production": False}
                out["by_symbol_tag"] = push.send().payload
                out["validate"] = push.send_validate().payload

                cids = client.create_push().get_cid(2).payload["cidlist"]
                out["cids"] = cids
                push = client.create_push()
                push.audience = jpush.audience(jpush.registration_id(c))
                push.platform = jpush.all_
                push.notification = jpush.notification(alert="once")
                push.cid = cids[0]
                first = push.send().payload
                again = push.send().payload
                out["cid_repeat_same"] = first["msg_id"] == again["msg_id"]
                out["cid_msg_id"] = first["msg_id"]

                out["batch"] = client.create_push().batch_push_by_regid(
                    [{"platform": "all", "target": c, "notification": {"alert": "single to carol"}}]).payload
                out["batch_alias"] = client.create_push().batch_push_by_alias(
                    [{"platform": "all", "target": "alice", "notification": {"alert": "single to alice"}}]).payload

                push = client.create_push()
                push.audience = jpush.audience(jpush.tag("nobody-has-this"))
                push.platform = jpush.all_
                push.notification = jpush.notification(alert="x")
                out["no_target"] = failure(push.send)
                push.platform = ["winphone"]
                out["winphone"] = failure(push.send)
                bad = jpush.JPush(key, "0" * 24).create_push()
                bad.audience = "all"
                bad.platform = "all"
                bad.notification = {"alert": "x"}
                out["wrong_secret"] = failure(bad.send)
                """#, port: gw.port, arguments: ["alice": alice, "bob": imported, "carol": carol])

            let aliceInfo = try #require(result["alice"] as? [String: Any])
            #expect(Set(aliceInfo["tags"] as? [String] ?? []) == ["vip", "北京"])
            #expect(aliceInfo["alias"] as? String == "alice" && aliceInfo["mobile"] as? String == "13012345678")
            #expect(
                Set((result["tags"] as? [String: Any])?["tags"] as? [String] ?? []) == [
                    "vip", "北京", "beta", "vip@2024$+1",
                ])
            #expect((result["carol_vip"] as? [String: Any])?["result"] as? Bool == true)
            #expect((result["bob_vip"] as? [String: Any])?["result"] as? Bool == false)
            #expect((result["alias"] as? [String: Any])?["registration_ids"] as? [String] == [alice])
            #expect(((result["status"] as? [String: Any])?[alice] as? [String: Any])?["online"] as? Bool == false)
            #expect((result["unknown_device"] as? [String: Any])?["code"] as? Int == 7002)

            // Each push reached exactly the phones its audience names.
            let byTag = try await gw.completed((result["by_tag"] as? [String: Any])?["msg_id"])
            #expect(byTag.counts.delivered == 2 && (result["by_tag"] as? [String: Any])?["sendno"] as? String == "7")
            let byAlias = try await gw.completed((result["by_alias"] as? [String: Any])?["msg_id"])
            #expect(byAlias.counts.delivered == 1)
            let byID = try await gw.completed((result["by_registration_id"] as? [String: Any])?["msg_id"])
            #expect(byID.counts.delivered == 1, "the sandbox phone, by apns_production false")
            let byTagAnd = try await gw.completed((result["by_tag_and"] as? [String: Any])?["msg_id"])
            #expect(byTagAnd.counts.delivered == 1)
            let byTagNot = try await gw.completed((result["by_tag_not"] as? [String: Any])?["msg_id"])
            #expect(byTagNot.counts.delivered == 1)
            let bySymbolTag = try await gw.completed((result["by_symbol_tag"] as? [String: Any])?["msg_id"])
            #expect(bySymbolTag.counts.delivered == 1)
            #expect((result["validate"] as? [String: Any])?["msg_id"] as? String == "0")
            #expect((result["cids"] as? [String])?.allSatisfy { $0.hasPrefix(Self.appKey + "-") } == true)
            #expect(result["cid_repeat_same"] as? Bool == true)
            _ = try await gw.completed(result["cid_msg_id"])
            let batch = try #require(result["batch"] as? [String: [String: Any]])
            #expect(batch.count == 1)
            _ = try await gw.completed(batch.values.first?["msg_id"])
            let batchAlias = try #require(result["batch_alias"] as? [String: [String: Any]])
            _ = try await gw.completed(batchAlias.values.first?["msg_id"])
            #expect((result["no_target"] as? [String: Any])?["code"] as? Int == 1011)
            #expect((result["winphone"] as? [String: Any])?["code"] as? Int == 1003)
            #expect((result["wrong_secret"] as? [String: Any])?["status"] as? Int == 401)

            let alerts = gw.alerts()
            #expect(Set(alerts[Self.token(1)] ?? []) == ["to vip", "to alice", "vip in beijing", "single to alice"])
            #expect(Set(alerts[Self.token(2)] ?? []) == ["to bob", "to symbols"])
            #expect(Set(alerts[Self.token(3)] ?? []) == ["to vip", "vip elsewhere", "once", "single to carol"])

            // The report API from the counts: what APNs accepted.
            let report = try await Self.run(
                #"""
                report = client.create_report()
                out["received"] = report.get_received(args["ids"]).payload
                out["detail"] = report.get_received_detail(args["ids"]).payload
                out["messages"] = report.get_messages(args["ids"]).payload
                out["status"] = report.get_status_message(int(args["tag_msg"]), [args["alice"], args["bob"], "1fff"]).payload
                """#, port: gw.port,
                arguments: [
                    "ids": "\(byTag.record.id),\(byAlias.record.id)", "tag_msg": String(byTag.record.id),
                    "alice": alice, "bob": imported,
                ])
            let received = try #require(report["received"] as? [[String: Any]])
            #expect(received.count == 2)
            #expect(received.first?["msg_id"] as? String == String(byTag.record.id))
            #expect(received.first?["ios_apns_sent"] as? Int == 2)
            #expect(received.first?["android_received"] is NSNull, "no Android phone was a target")
            let detail = try #require(report["detail"] as? [[String: Any]])
            #expect(detail.first?["ios_apns_sent"] as? Int == 2 && detail.first?["jpush_received"] is NSNull)
            let messages = try #require(report["messages"] as? [[String: Any]])
            #expect((messages.first?["ios"] as? [String: Any])?["apns_sent"] as? Int == 2)
            #expect(messages.first?["android"] == nil, "no Android target: no android figures")
            let status = try #require(report["status"] as? [String: [String: Any]])
            #expect(status[alice]?["status"] as? Int == 1, "targeted; no receipt says it arrived")
            #expect(status[imported]?["status"] as? Int == 3, "of the app, not a target of the tag push")
            #expect(status["1fff"]?["status"] as? Int == 2)

            // Deleting the alias and a tag, as the SDK does.
            let cleanup = try await Self.run(
                #"""
                device = client.create_device()
                device.delete_alias("alice")
                device.delete_tag("vip")
                device.delete_tag("vip@2024$+1")  # in the URL's path, as the SDK puts it
                out["alias"] = device.get_aliasuser("alice").payload
                out["tags"] = device.get_taglist().payload
                out["again"] = failure(lambda: device.delete_alias("alice"))
                """#, port: gw.port, arguments: [:])
            #expect((cleanup["alias"] as? [String: Any])?["registration_ids"] as? [String] == [])
            #expect(Set((cleanup["tags"] as? [String: Any])?["tags"] as? [String] ?? []) == ["北京", "beta"])
            #expect((cleanup["again"] as? [String: Any])?["status"] as? Int == 400)
        }
    }

    /// One tag push reaches an iPhone, a Huawei phone and a HarmonyOS phone through the
    /// look-alikes, each with its platform's own alert; a registration-id push reaches only its
    /// phone, whatever its service.
    @Test func aPushReachesAnIPhoneAnAndroidAndAHarmonyPhone() async throws {
        try await withGateway(on: .sqlite) { gw in
            let backend = gw.running.runtime.credentialBackend
            _ = try await backend.addChannel(
                .form(
                    channel: .huawei,
                    CredentialFormInput(values: [
                        "vendor_app_id": "10086", "client_id": "10086", "client_secret": "s3cret",
                    ])),
                appID: gw.app.id, selector: nil)
            let account: JSONValue = [
                "project_id": "101888", "key_id": "0123abcd", "sub_account": "2001",
                "private_key": .string(try TestKeys.rsa(0).pkcs8PEM()),
            ]
            _ = try await backend.addChannel(
                .form(channel: .harmony, CredentialFormInput(files: ["file": account.serialized()])), appID: gw.app.id,
                selector: nil)
            let iphone = try #require(
                try await gw.register(Self.token(1), ["environment": "production"])["registration_id"] as? String)
            let huawei = try #require(
                try await gw.register("huawei-dave-token_1", ["channel": "huawei"])["registration_id"] as? String)
            let harmony = try #require(
                try await gw.register("MAMzLg-dave-harmony", ["channel": "harmony"])["registration_id"] as? String)
            let result = try await Self.run(
                #"""
                device = client.create_device()
                for rid in args["ids"]:
                    device.set_deviceinfo(rid, {"tags": {"add": ["mixed"]}, "alias": "dave"})
                push = client.create_push()
                push.audience = jpush.audience(jpush.tag("mixed"))
                push.platform = jpush.all_
                push.notification = jpush.notification(alert="to all",
                    android=jpush.android(alert="to android", title="T"),
                    hmos={"alert": "to harmony", "title": "H", "category": "IM"})
                out["by_tag"] = push.send().payload
                push = client.create_push()
                push.audience = jpush.audience(jpush.registration_id(args["huawei"]))
                push.platform = jpush.platform("android")
                push.notification = jpush.notification(alert="only huawei")
                out["by_id"] = push.send().payload
                push = client.create_push()
                push.audience = jpush.audience(jpush.alias("dave"))
                push.platform = jpush.platform("ios", "hmos")
                push.notification = jpush.notification(alert="alias, not android")
                out["by_alias"] = push.send().payload
                """#, port: gw.port, arguments: ["ids": [iphone, huawei, harmony], "huawei": huawei])
            let byTag = try await gw.completed((result["by_tag"] as? [String: Any])?["msg_id"])
            #expect(byTag.counts.delivered == 3, "\(byTag.failures) \(byTag.skips)")
            let byID = try await gw.completed((result["by_id"] as? [String: Any])?["msg_id"])
            #expect(byID.counts.delivered == 1)
            let byAlias = try await gw.completed((result["by_alias"] as? [String: Any])?["msg_id"])
            #expect(byAlias.counts.delivered == 2 && byAlias.skips["platform"] == 1, "\(byAlias.skips)")

            #expect(Set(gw.alerts()[Self.token(1)] ?? []) == ["to all", "alias, not android"])
            let android = gw.running.mock.receivedAndroidMessages()
            let huaweiBodies = android.filter { $0.service == .huawei }.map { String(decoding: $0.body, as: UTF8.self) }
            #expect(huaweiBodies.count == 2)
            #expect(
                huaweiBodies.contains { $0.contains("to android") }
                    && huaweiBodies.contains { $0.contains("only huawei") })
            let harmonyBodies = android.filter { $0.service == .harmony }.map {
                String(decoding: $0.body, as: UTF8.self)
            }
            #expect(harmonyBodies.count == 2)
            #expect(harmonyBodies.contains { $0.contains("to harmony") && $0.contains("IM") })
            #expect(harmonyBodies.contains { $0.contains("alias, not android") })
        }
    }

    /// JPush's server-side badge: the app reports what it shows (`setBadge`, here the native
    /// device API's `badge`), and `"+N"` / `"-N"` pushes (the server SDK sends `"+1"` unless told
    /// otherwise) give each iPhone its own next badge; a number sets it. A page decided again is
    /// not counted twice.
    @Test(arguments: PluginStoreBackend.allCases)
    func aRelativeBadgeCountsFromWhatTheAppReported(_ database: PluginStoreBackend) async throws {
        try await withGateway(on: database) { gw in
            let reported = try await gw.register(Self.token(1), ["environment": "production", "badge": 5])
            #expect(reported["badge"] as? Int == 5)
            _ = try await gw.register(Self.token(2), ["environment": "production"])
            _ = try await gw.register(Self.token(3), ["environment": "sandbox"])
            let refused = try await TestClient(port: gw.port).execute(
                "PUT", "/api/v1/devices/\(Self.token(1))", json: ["badge": -1],
                headers: [("Authorization", "Bearer \(gw.apiKey)")])
            #expect(refused.status == 400 && refused.text.contains("invalid_badge"), "\(refused.text)")

            var seen = 0
            /// Sends one iOS push with `badge` (nil: the SDK's default) and waits for it; the
            /// badges the two production iPhones were sent.
            func push(_ alert: String, badge: Any?) async throws -> [Int?] {
                let result = try await Self.run(
                    #"""
                    ios = jpush.ios(alert=args["alert"]) if args["badge"] is None else \
                        jpush.ios(alert=args["alert"], badge=args["badge"])
                    push = client.create_push()
                    push.audience = jpush.all_
                    push.platform = jpush.platform("ios")
                    push.notification = jpush.notification(ios=ios)
                    out["push"] = push.send().payload
                    """#, port: gw.port, arguments: ["alert": alert, "badge": badge ?? NSNull()])
                let status = try await gw.completed((result["push"] as? [String: Any])?["msg_id"])
                #expect(status.counts.delivered == 2 && status.skips["other_environment"] == 1, "\(status.skips)")
                let received = gw.running.mock.receivedNotifications()
                let new = received.dropFirst(seen)
                seen = received.count
                return [Self.token(1), Self.token(2)].map { token in
                    new.first { $0.deviceToken == token }.flatMap { notification in
                        let payload = try? JSONSerialization.jsonObject(with: Data(notification.payload))
                        return ((payload as? [String: Any])?["aps"] as? [String: Any])?["badge"] as? Int
                    }
                }
            }
            #expect(try await push("default", badge: nil) == [6, 1], "the SDK's default \"+1\"")
            #expect(try await push("plus two", badge: "+2") == [8, 3])
            #expect(try await push("minus five", badge: "-5") == [3, 0], "never below 0")
            #expect(try await push("set", badge: 4) == [4, 4])
            #expect(try await push("after set", badge: "+1") == [5, 5])
            _ = try await gw.register(Self.token(1), ["badge": 0])  // resetBadge
            #expect(try await push("after reset", badge: "+1") == [1, 6])
            #expect(try await push("cleared", badge: 0) == [0, 0])

            // The sandbox iPhone was never pushed: it has no kept badge.
            let store = JPushStore(
                database: gw.running.runtime.store.sharedDatabase, store: gw.running.runtime.store,
                clock: SystemClock())
            let sandbox = try #require(
                try await gw.running.runtime.store.device(
                    appID: gw.app.id, token: DeviceToken(Self.token(3), channel: .apns)!))
            #expect(try await store.badge(deviceID: sandbox.id) == nil)
            // A page decided again (same message) gets what it was given; the next message counts.
            let iphone = try #require(
                try await gw.running.runtime.store.device(
                    appID: gw.app.id, token: DeviceToken(Self.token(1), channel: .apns)!))
            let first = try await store.applyBadge(.add(1), messageID: 9_001, deviceIDs: [iphone.id, 999_999])
            let again = try await store.applyBadge(.add(1), messageID: 9_001, deviceIDs: [iphone.id])
            let next = try await store.applyBadge(.add(1), messageID: 9_002, deviceIDs: [iphone.id])
            #expect(first == [iphone.id: 1] && again == [iphone.id: 1] && next == [iphone.id: 2])
        }
    }

    /// A push to a combination of tags keeps the combination, not a list of devices: the core
    /// reads it page by page when it sends, so a large app's tags make no list when accepted.
    @Test(arguments: PluginStoreBackend.allCases)
    func aTagCombinationIsReadWhenSentNotListedWhenAccepted(_ database: PluginStoreBackend) async throws {
        try await withGateway(on: database) { gw in
            _ = try await gw.register(Self.token(1), ["environment": "production", "tags": ["news"]])
            _ = try await gw.register(Self.token(2), ["environment": "production", "tags": ["news", "vip"]])
            _ = try await gw.register(Self.token(3), ["environment": "production", "tags": ["sports"]])
            let result = try await Self.run(
                #"""
                push = client.create_push()
                push.audience = jpush.audience(jpush.tag("news", "sports"), jpush.tag_not("vip"))
                push.platform = jpush.platform("ios")
                push.notification = jpush.notification(ios=jpush.ios(alert="not for vip", badge=1))
                out["push"] = push.send().payload
                push = client.create_push()
                push.audience = jpush.audience(jpush.tag_and("news", "sports"))
                push.platform = jpush.all_
                push.notification = jpush.notification(alert="nobody")
                out["nobody"] = failure(push.send)
                """#, port: gw.port, arguments: [:])
            let status = try await gw.completed((result["push"] as? [String: Any])?["msg_id"])
            #expect(status.counts.delivered == 2)
            #expect(status.record.audience == .tagSelection(TagSelection(anyOf: ["news", "sports"], noneOf: ["vip"])))
            #expect(Set(gw.alerts().keys) == [Self.token(1), Self.token(3)])
            #expect((result["nobody"] as? [String: Any])?["code"] as? Int == 1011)
        }
    }

    /// A single-trigger schedule is a scheduled message: created, read, listed, moved, its
    /// message cancelled with it; a recurring one is not offered.
    @Test func schedulesAreScheduledMessages() async throws {
        try await withGateway(on: .sqlite) { gw in
            _ = try await gw.register(Self.token(1), ["environment": "production"])
            let result = try await Self.run(
                #"""
                import datetime
                from jpush.schedule import schedulepayload
                beijing = datetime.timezone(datetime.timedelta(hours=8))
                later = (datetime.datetime.now(beijing) + datetime.timedelta(hours=2)).strftime("%Y-%m-%d %H:%M:%S")
                moved = (datetime.datetime.now(beijing) + datetime.timedelta(hours=3)).strftime("%Y-%m-%d %H:%M:%S")
                schedule = client.create_schedule()
                push = {"platform": "all", "audience": "all", "notification": {"alert": "later"}}
                created = schedule.post_schedule(schedulepayload.schedulepayload("evening", True, schedulepayload.trigger(later), push)).payload
                sid = created["schedule_id"]
                out["created"] = created
                out["read"] = schedule.get_schedule_by_id(sid).payload
                out["list"] = schedule.get_schedule_list(1).payload
                out["put"] = schedule.put_schedule({"trigger": schedulepayload.trigger(moved)}, sid).payload
                out["msg_ids"] = client._request("GET", None, common.get_url("schedule") + sid + "/msg_ids").json()
                weekly = schedule.post_schedule(schedulepayload.schedulepayload(
                    "weekly", True, schedulepayload.trigger("12:00:00", "2030-01-01 00:00:00", "2030-02-01 00:00:00", "week", 1, ["WED", "fri"]), push)).payload
                out["weekly"] = client._request("GET", None, common.get_url("schedule") + weekly["schedule_id"] + "/msg_ids").json()
                schedule.delete_schedule(weekly["schedule_id"])
                out["too_many"] = failure(lambda: schedule.post_schedule(schedulepayload.schedulepayload(
                    "forever", True, schedulepayload.trigger("12:00:00", "2030-01-01 00:00:00", "2040-01-01 00:00:00", "day", 1), push)))
                out["past"] = failure(lambda: schedule.post_schedule(schedulepayload.schedulepayload(
                    "past", True, schedulepayload.trigger("2020-01-01 00:00:00"), push)))
                schedule.delete_schedule(sid)
                out["gone"] = failure(lambda: schedule.get_schedule_by_id(sid))
                """#, port: gw.port, arguments: [:])
            let created = try #require(result["created"] as? [String: Any])
            #expect(created["name"] as? String == "evening" && created["schedule_id"] is String)
            #expect((result["read"] as? [String: Any])?["enabled"] as? Bool == true)
            #expect((result["list"] as? [String: Any])?["total_count"] as? Int == 1)
            #expect((result["put"] as? [String: Any])?["name"] as? String == "evening")
            let ids = try #require((result["msg_ids"] as? [String: Any])?["msgids"] as? [String])
            #expect(ids.count == 1)
            // The moved schedule's message is the one that stands, due in about three hours; the
            // first was cancelled, and deleting the schedule cancelled the second.
            let messages = try await gw.running.runtime.store.messages(appID: gw.app.id, limit: 20)
            #expect(messages.allSatisfy { $0.state == .cancelled }, "\(messages.map(\.state))")
            let moved = try #require(messages.first { String($0.id) == ids[0] })
            #expect(abs((moved.sendAt ?? .distantPast).timeIntervalSinceNow - 3 * 3600) < 120)
            // A weekly schedule on Wednesdays and Fridays of January 2030 at noon, Beijing time:
            // one scheduled message a push, all cancelled with the schedule.
            let weekly = try #require((result["weekly"] as? [String: Any])?["msgids"] as? [String])
            let noons = [2, 4, 9, 11, 16, 18, 23, 25, 30].map { day in
                Date(timeIntervalSince1970: 1_893_456_000 + Double(day - 1) * 86_400 + 4 * 3600)
            }
            #expect(weekly.count == noons.count && messages.count == 2 + noons.count)
            #expect(messages.filter { weekly.contains(String($0.id)) }.compactMap(\.sendAt).sorted() == noons)
            #expect((result["too_many"] as? [String: Any])?["code"] as? Int == 8400)
            #expect((result["past"] as? [String: Any])?["code"] as? Int == 8400)
            #expect((result["gone"] as? [String: Any])?["status"] as? Int == 404)
        }
    }

    /// Issue #40 item 5 in JPush's dialect: an app whose backlog is at the bound is answered
    /// JPush's rate limit, 2002 with HTTP 429 and `Retry-After`; nothing is stored.
    @Test func aPushOverTheBacklogBoundIsRefusedWith2002() async throws {
        let hold = try DispatcherHold()
        try await withGateway(
            on: .sqlite, environment: ["TUISONG_DELIVERY_MAX_BACKLOG_PER_APP": "1"], directory: hold.directory
        ) { gw in
            _ = try await gw.register(Self.token(1), ["environment": "production"])
            let auth = "Basic " + Data("\(Self.appKey):\(Self.masterSecret)".utf8).base64EncodedString()
            let body = Array(#"{"platform":"all","audience":"all","notification":{"alert":"x"}}"#.utf8)
            let client = TestClient(port: gw.port)
            let first = try await client.execute("POST", "/v3/push", headers: [("Authorization", auth)], body: body)
            #expect(first.status == 200, "\(first.text)")
            let refused = try await client.execute("POST", "/v3/push", headers: [("Authorization", auth)], body: body)
            #expect(refused.status == 429, "\(refused.text)")
            #expect((refused.jsonObject["error"] as? [String: Any])?["code"] as? Int == 2002)
            #expect(refused.headers["Retry-After"] == "1")
            #expect(try await gw.running.runtime.store.messages(appID: gw.app.id, limit: 10).count == 1)
        }
    }

    /// A critical sound's volume is the APNs transport's to check (its entry of the content,
    /// `PushContent.services["apns"]`): out of range it is refused in JPush's dialect, 1003, and
    /// nothing is stored.
    @Test func aCriticalVolumeAPNsCannotTakeIsRefusedWith1003() async throws {
        try await withGateway(on: .sqlite) { gw in
            _ = try await gw.register(Self.token(1), ["environment": "production"])
            let auth = "Basic " + Data("\(Self.appKey):\(Self.masterSecret)".utf8).base64EncodedString()
            let body = Array(
                #"{"platform":"all","audience":"all","notification":{"ios":{"alert":"x","sound":{"name":"a.caf","volume":2}}}}"#
                    .utf8)
            let client = TestClient(port: gw.port)
            let refused = try await client.execute("POST", "/v3/push", headers: [("Authorization", auth)], body: body)
            #expect(refused.status == 400, "\(refused.text)")
            let error = refused.jsonObject["error"] as? [String: Any]
            #expect(error?["code"] as? Int == 1003)
            #expect((error?["message"] as? String)?.contains("critical sound volume must be within 0…1") == true)
            #expect(try await gw.running.runtime.store.messages(appID: gw.app.id, limit: 10).isEmpty)
        }
    }

    /// Every error is JPush's shape with its status, whatever went wrong: a client that gets
    /// other JSON on a non-2xx fails.
    @Test func errorsAreAlwaysJPushsShape() async throws {
        try await withGateway(on: .sqlite) { gw in
            let auth = "Basic " + Data("\(Self.appKey):\(Self.masterSecret)".utf8).base64EncodedString()
            let client = TestClient(port: gw.port)
            let cases: [(String, String, [UInt8], [(String, String)], Int, Int)] = [
                ("POST", "/v3/push", Array("{}".utf8), [], 401, 1004),
                ("POST", "/v3/push", Array("{".utf8), [("Authorization", auth)], 400, 1003),
                ("GET", "/v3/push", [], [("Authorization", auth)], 405, 1001),
                ("GET", "/v3/nothing-here", [], [("Authorization", auth)], 404, 1003),
                (
                    "POST", "/v3/push", Array(#"{"platform":"all","audience":"all"}"#.utf8),
                    [("Authorization", auth), ("Content-Type", "application/json;charset:utf-8")], 400, 1002
                ),
                ("GET", "/v3/received", [], [("Authorization", auth)], 400, 3001),
                (
                    "POST", "/v3/push",
                    Array(
                        #"{"platform":"all","audience":"all","notification":{"hmos":{"alert":"x","category":"NOPE"}}}"#
                            .utf8),
                    [("Authorization", auth)], 400, 1003
                ),
            ]
            for (method, target, body, headers, status, code) in cases {
                let response = try await client.execute(method, target, headers: headers, body: body)
                #expect(response.status == status, "\(method) \(target): \(response.text)")
                let error = response.jsonObject["error"] as? [String: Any]
                #expect(error?["code"] as? Int == code, "\(method) \(target): \(response.text)")
                #expect(error?["message"] is String)
            }
        }
    }
}

/// Runs Python 3 (JPush's own SDK) and returns its standard output.
func runPython(_ script: String, _ arguments: [String] = []) throws -> [UInt8] {
    let process = ChildProcess()
    process.executableURL = Python3.executable
    process.arguments = Python3.arguments(["-c", script] + arguments)
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw PythonFailure(description: "python3 failed (\(process.terminationStatus)): \(errorText)")
    }
    return Array(data)
}

struct PythonFailure: Error, CustomStringConvertible {
    var description: String
}
