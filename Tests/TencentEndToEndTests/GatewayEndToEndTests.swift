import Foundation
import Testing
import TuisongCore
import TuisongGateway
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TencentProvider

/// The whole gateway with the Tencent provider mounted from config: Tencent REST calls over
/// real HTTP (raw sockets, sent as Tencent's clients send them) → durable messages → the
/// dispatcher and Tencent's delivery policy → APNs over TLS + HTTP/2 → the bundled APNs mock.
/// Every UserSig is made by Python (`PythonUserSig`), not by the plugin.
@Suite(.serialized) struct TencentGatewayEndToEndTests {
    static let sdkAppID: Int64 = 1_400_123_456
    static let key = "a8c1d4a0e8d1c3b3c6e4f0a9b2c5d7e1f3a5b7c9d1e3f5a7b9c1d3e5f7a9b1c3"

    final class Gateway: @unchecked Sendable {
        // Only mutated by the test's own task (the sig cache), never concurrently.
        let running: RunningGateway
        let app: App
        /// The app's native API key (`/api/v1/messages`).
        let apiKey: String
        private var sigs: [String: String] = [:]

        init(running: RunningGateway, app: App, apiKey: String) {
            self.running = running
            self.app = app
            self.apiKey = apiKey
        }

        var runtime: GatewayRuntime { running.runtime }

        /// The message as the native API shows it.
        func nativeMessage(_ id: Int64) async throws -> [String: Any] {
            let response = try await rawHTTP(
                port: port, method: "GET", target: "/api/v1/messages/\(id)", body: [],
                headers: ["Authorization": "Bearer \(apiKey)"])
            #expect(response.status == 200, "\(response.text)")
            return response.jsonObject
        }

        var port: Int { running.port }
        var mock: LookAlikeServer { running.mock }

        func sig(_ identifier: String) throws -> String {
            if let sig = sigs[identifier] { return sig }
            let sig = try PythonUserSig.make(
                sdkAppID: TencentGatewayEndToEndTests.sdkAppID, key: TencentGatewayEndToEndTests.key,
                identifier: identifier)
            sigs[identifier] = sig
            return sig
        }

        /// One REST call as Tencent's SDKs make it: no Content-Type, raw UTF-8 JSON.
        func call(
            _ command: String, _ body: String, as identifier: String = "administrator", sig: String? = nil,
            sdkAppID: Int64 = TencentGatewayEndToEndTests.sdkAppID, method: String = "POST", random: UInt32 = 99
        ) async throws -> TestResponse {
            let usersig = try sig ?? self.sig(identifier)
            let target =
                "/v4/\(command)?sdkappid=\(sdkAppID)&identifier=\(identifier)&usersig=\(usersig)&random=\(random)&contenttype=json"
            return try await rawHTTP(port: port, method: method, target: target, body: Array(body.utf8))
        }

        /// A call that must succeed; its JSON.
        func ok(_ command: String, _ body: String, as identifier: String = "administrator") async throws
            -> [String: Any]
        {
            let response = try await call(command, body, as: identifier)
            #expect(response.status == 200)
            #expect(response.actionStatus == "OK" && response.errorCode == 0, "\(command): \(response.text)")
            return response.jsonObject
        }

        func importAccounts(_ accounts: [(String, String?)]) async throws {
            for (account, nick) in accounts {
                let nickField = nick.map { #","Nick":"\#($0)""# } ?? ""
                _ = try await ok("im_open_login_svc/account_import", #"{"UserID":"\#(account)"\#(nickField)}"#)
            }
        }

        func setToken(_ account: String, _ token: String, busiID: Int = 0, environment: String = "production")
            async throws
        {
            _ = try await ok(
                "offline_push/set_token", #"{"Token":"\#(token)","BusiId":\#(busiID),"Environment":"\#(environment)"}"#,
                as: account)
        }

        func background(_ account: String, unread: Int) async throws {
            _ = try await ok("offline_push/report_background", #"{"C2CUnread":\#(unread)}"#, as: account)
        }

        /// The Tuisong message a vendor id (MsgKey, TaskId, GroupId#MsgSeq) names, once every
        /// device has an outcome.
        func completed(_ vendorMessageID: String) async throws -> MessageStatus {
            let record = try #require(
                try await runtime.store.message(appID: app.id, vendorMessageID: vendorMessageID))
            return try await running.completed(messageID: record.id, timeout: .seconds(120))
        }

        /// Skip reasons of a message's skipped deliveries, by device token.
        func skipped(_ status: MessageStatus) async throws -> [String: String] {
            var reasons: [String: String] = [:]
            var cursor: String?
            repeat {
                let page = try await runtime.store.deliveries(
                    messageID: status.record.id, state: .skipped, cursor: cursor, limit: 500)
                for delivery in page.items { reasons[delivery.token] = delivery.reason ?? "" }
                cursor = page.nextCursor
            } while cursor != nil
            return reasons
        }

        func payloads() -> [String: String] {
            var byToken: [String: String] = [:]
            for notification in mock.receivedNotifications() {
                byToken[notification.deviceToken] = String(decoding: notification.payload, as: UTF8.self)
            }
            return byToken
        }

        func messageCount() async throws -> Int {
            try await runtime.store.messages(appID: app.id, limit: 10_000).count
        }
    }

    func withGateway(
        on database: PluginStoreBackend = .sqlite, environment: [String: String] = [:], directory: URL? = nil,
        _ body: (Gateway) async throws -> Void
    ) async throws {
        let running = try await RunningGateway.start(
            providers: ["baidu", "tencent"], environment: environment, directory: directory, logLevel: .critical,
            name: "tencent-e2e", database: database)
        do {
            let runtime = running.runtime
            let apiKey = APIKey.generate()
            var app = try await runtime.store.createApp(
                name: "tencent", bundleID: "com.example.tencent", apiKeyHash: APIKey.hash(apiKey))
            app.vendorSettings["tencent"] = try TencentKeys(
                sdkAppID: Self.sdkAppID, secretKey: Self.key, adminIdentifier: "administrator"
            ).settings(appID: app.id, sealer: MasterKeySealer(masterKey: runtime.masterKey))
            try await runtime.store.updateApp(app)
            try await body(Gateway(running: running, app: app, apiKey: apiKey))
        } catch {
            await running.stop()
            throw error
        }
        await running.stop()
    }

    static func token(_ n: Int) -> String { testToken(n, prefix: String(repeating: "c", count: 48)) }

    // MARK: The seed example and the per-receiver rules

    @Test(arguments: PluginStoreBackend.allCases)
    func seedExampleBadgesAndSkipReasons(_ database: PluginStoreBackend) async throws {
        try await withGateway(on: database) { gw in
            try await gw.importAccounts([("alice", "Alice"), ("bob", nil)])
            try await gw.setToken("bob", Self.token(1))
            // Reporting the same token again is the same device.
            try await gw.setToken("bob", Self.token(1))
            #expect(
                try await gw.runtime.store.devices(appID: gw.app.id, account: "bob").map(\.token) == [Self.token(1)])
            // The Environment a device reports is kept with it (the APNs endpoint it is sent to).
            try await gw.setToken("alice", Self.token(2), environment: "sandbox")
            #expect(
                try await gw.runtime.store.devices(appID: gw.app.id, account: "alice").map(\.environment) == [.sandbox])
            try await gw.background("bob", unread: 4)

            let seed = try await gw.ok(
                "openim/sendmsg",
                #"""
                {"SyncOtherMachine":2,"From_Account":"alice","To_Account":"bob","MsgRandom":1287657,"MsgBody":[
                 {"MsgType":"TIMCustomElem","MsgContent":{"Data":"message","Desc":"helloworld","Ext":"www.qq.com","Sound":"dingdong.aiff"}}]}
                """#)
            #expect(seed["MsgTime"] is Int)
            let seedKey = try #require(seed["MsgKey"] as? String)
            #expect(try await gw.completed(seedKey).counts.delivered == 1)
            let received = try #require(gw.mock.receivedNotifications().first)
            #expect(received.deviceToken == Self.token(1) && received.topic == "com.example.tencent")
            #expect(
                String(decoding: received.payload, as: UTF8.self)
                    == #"{"aps":{"alert":"Alice:helloworld","badge":5,"sound":"dingdong.aiff"},"ext":"www.qq.com"}"#)

            // The next message counts on: 6; text and image words; a sender without nick.
            gw.mock.resetRecorded()
            let next = try await gw.ok(
                "openim/sendmsg",
                #"{"From_Account":"alice","To_Account":"bob","MsgRandom":1287657,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"Test"}},{"MsgType":"TIMImageElem","MsgContent":{"UUID":"u"}}]}"#
            )
            _ = try await gw.completed(try #require(next["MsgKey"] as? String))
            #expect(gw.payloads()[Self.token(1)] == #"{"aps":{"alert":"Alice:Test[图片]","badge":6}}"#)

            // BadgeMode 1: no badge, the counter stays; Title, Desc, Ext, Sound, SubTitle.
            gw.mock.resetRecorded()
            let titled = try await gw.ok(
                "openim/sendmsg",
                #"""
                {"From_Account":"alice","To_Account":"bob","MsgRandom":5,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"x"}}],
                 "OfflinePushInfo":{"PushFlag":0,"Title":"订单","Desc":"已发货","Ext":"{\"id\":1}","ApnsInfo":{"Sound":"a.caf","BadgeMode":1,"SubTitle":"S"}}}
                """#)
            _ = try await gw.completed(try #require(titled["MsgKey"] as? String))
            #expect(
                gw.payloads()[Self.token(1)]
                    == #"{"aps":{"alert":{"body":"Alice:已发货","subtitle":"S","title":"订单"},"sound":"a.caf"},"ext":"{\"id\":1}"}"#
            )
            gw.mock.resetRecorded()
            let counted = try await gw.ok(
                "openim/sendmsg",
                #"{"To_Account":"bob","MsgRandom":6,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"y"}}]}"#)
            _ = try await gw.completed(try #require(counted["MsgKey"] as? String))
            #expect(gw.payloads()[Self.token(1)] == #"{"aps":{"alert":"y","badge":7}}"#)

            // Nothing pushed, each with its reason, each still one Tuisong message.
            func skipReason(_ body: String, expect reason: String) async throws {
                gw.mock.resetRecorded()
                let sent = try await gw.ok("openim/sendmsg", body)
                let status = try await gw.completed(try #require(sent["MsgKey"] as? String))
                #expect(status.counts.skipped == 1 && status.counts.delivered == 0)
                #expect(try await gw.skipped(status) == [Self.token(1): reason])
                #expect(gw.mock.receivedNotifications().isEmpty)
                // One Tuisong message, its skip reason in the native API too.
                let native = try await gw.nativeMessage(status.record.id)
                #expect(native["vendor"] as? String == "tencent")
                #expect(native["skips"] as? [String: Int] == [reason: 1])
            }
            let text = #""MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"z"}}]"#
            try await skipReason(
                #"{"To_Account":"bob","MsgRandom":7,\#(text),"OfflinePushInfo":{"PushFlag":1}}"#, expect: "push_flag")
            try await skipReason(
                #"{"To_Account":"bob","MsgRandom":7,"MsgBody":[{"MsgType":"TIMCustomElem","MsgContent":{"Data":"d","Desc":""}}]}"#,
                expect: "empty_content")
            try await skipReason(
                #"{"To_Account":"bob","MsgRandom":7,"MsgLifeTime":0,\#(text)}"#, expect: "online_only")
            try await skipReason(#"{"From_Account":"bob","To_Account":"bob","MsgRandom":7,\#(text)}"#, expect: "sender")
            _ = try await gw.ok("offline_push/report_foreground", "{}", as: "bob")
            try await skipReason(#"{"To_Account":"bob","MsgRandom":7,\#(text)}"#, expect: "foreground")
            try await gw.background("bob", unread: 0)
            _ = try await gw.ok("offline_push/set_config", #"{"OpenPush":2}"#, as: "bob")
            try await skipReason(#"{"To_Account":"bob","MsgRandom":7,\#(text)}"#, expect: "push_disabled")
            _ = try await gw.ok("offline_push/set_config", #"{"OpenPush":0}"#, as: "bob")
            try await skipReason(#"{"To_Account":"bob","MsgRandom":7,\#(text)}"#, expect: "push_disabled")
            _ = try await gw.ok("offline_push/set_config", #"{"OpenPush":1}"#, as: "bob")

            // report_background reset the counter to 0: the next push carries 1.
            gw.mock.resetRecorded()
            let again = try await gw.ok("openim/sendmsg", #"{"To_Account":"bob","MsgRandom":7,\#(text)}"#)
            _ = try await gw.completed(try #require(again["MsgKey"] as? String))
            #expect(gw.payloads()[Self.token(1)] == #"{"aps":{"alert":"z","badge":1}}"#)

            // querystate: Online = foreground, PushOnline = background, Offline = never reported.
            let state = try await gw.ok("openim/querystate", #"{"To_Account":["bob","alice"]}"#)
            let results = try #require(state["QueryResult"] as? [[String: Any]])
            #expect(results.map { $0["State"] as? String } == ["PushOnline", "Offline"])

            // Device-side errors: a missing Token, a server call with a user's sig.
            let missing = try await gw.call("offline_push/set_token", #"{"BusiId":0}"#, as: "bob")
            #expect(missing.status == 200 && missing.actionStatus == "FAIL" && (missing.errorCode ?? 0) != 0)
            let notAdmin = try await gw.call("openim/querystate", #"{"To_Account":["bob"]}"#, as: "bob")
            #expect(notAdmin.status == 200 && notAdmin.errorCode == 60010)
        }
    }
}
