import Foundation
import Testing
import TuisongCore
import TuisongGateway
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongStore

@testable import BaiduProvider

/// The whole gateway with the Baidu provider mounted from config: Baidu calls over HTTP →
/// durable messages → dispatcher → APNs pool over TLS + HTTP/2 → the bundled APNs mock.
@Suite(.serialized) struct GatewayEndToEndTests {
    struct Gateway {
        let running: RunningGateway
        let app: App
        var runtime: GatewayRuntime { running.runtime }
        var baseURL: String { running.baseURL }
        var mock: LookAlikeServer { running.mock }
        /// Baidu's data on the running gateway's database.
        var baiduStore: BaiduStore {
            BaiduStore(database: runtime.store.sharedDatabase, store: runtime.store, clock: SystemClock())
        }

        /// A REST call signed (by the Python signer) with the wall clock's timestamp.
        func rest(_ path: String, _ parameters: [String: String]) async throws -> TestResponse {
            var parameters = parameters
            parameters["apikey"] = BaiduFixture.apiKey
            parameters["timestamp"] = String(Int(Date().timeIntervalSince1970))
            let url = baseURL + path
            let unsigned = parameters
            parameters["sign"] = try await offPool {
                try signWithPython(
                    method: "POST", url: url, parameters: unsigned, secret: BaiduFixture.secretKey, style: .python)
            }
            return try await httpCall(
                method: "POST", url: url, body: Data(formEncode(parameters).utf8),
                contentType: "application/x-www-form-urlencoded")
        }

        func device(_ call: String, _ body: [String: Any]) async throws -> TestResponse {
            try await httpCall(
                method: "POST", url: "\(baseURL)/baidu/device/\(call)",
                body: try JSONSerialization.data(withJSONObject: body.merging(["apikey": BaiduFixture.apiKey]) { $1 }),
                contentType: "application/json")
        }

        /// Waits until the message with this `msg_id` has an outcome for every device.
        func completed(msgID: String) async throws -> MessageStatus {
            let record = try #require(try await baiduStore.messages(appID: app.id, msgIDs: [msgID]).first)
            return try await running.completed(messageID: record.id)
        }
    }

    func withGateway(
        on database: PluginStoreBackend = .sqlite, environment: [String: String] = [:], directory: URL? = nil,
        _ body: (Gateway) async throws -> Void
    ) async throws {
        let running = try await RunningGateway.start(
            providers: ["baidu"], environment: environment, directory: directory, logLevel: .critical,
            name: "baidu-e2e", database: database)
        do {
            let runtime = running.runtime
            var app = try await runtime.store.createApp(
                name: "baidu", bundleID: "com.example.baidu", apiKeyHash: UUID().uuidString)
            app.vendorSettings["baidu"] = try BaiduKeys(apiKey: BaiduFixture.apiKey, secretKey: BaiduFixture.secretKey)
                .settings(appID: app.id, sealer: MasterKeySealer(masterKey: runtime.masterKey))
            try await runtime.store.updateApp(app)
            try await body(Gateway(running: running, app: app))
        } catch {
            await running.stop()
            throw error
        }
        await running.stop()
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func bindTagPushReachesExactlyTheTaggedDevices(_ database: PluginStoreBackend) async throws {
        try await withGateway(on: database) { gw in
            var channels: [Int: String] = [:]
            for n in 1...5 {
                let bound = try await gw.device(
                    "bind", ["device_token": token(n), "push_mode": n == 4 ? "development" : "production"])
                #expect(bound.errorCode == 0, "\(bound.text)")
                channels[n] = bound.parameters["channel_id"] as? String
            }
            for n in [1, 2, 4] {
                #expect(try await gw.device("set_tags", ["device_token": token(n), "tags": ["vip"]]).errorCode == 0)
            }

            let msg = #"{"aps":{"alert":{"title":"会员日","body":"全场八折"},"badge":5,"sound":"default"},"coupon":"VIP8"}"#
            let sentAt = Date()
            let pushed = expectSuccess(
                try await gw.rest(
                    "/rest/3.0/push/tags",
                    [
                        "type": "1", "tag": "vip", "msg_type": "1", "msg": msg, "msg_expires": "3600",
                        "deploy_status": "2",
                    ]))
            let msgID = try #require(pushed["msg_id"] as? String)
            let status = try await gw.completed(msgID: msgID)
            #expect(status.counts.delivered == 2)

            // Exactly the tagged production devices: not 3 and 5 (no tag), not 4 (development).
            let received = gw.mock.receivedNotifications()
            #expect(received.map(\.deviceToken).sorted() == [token(1), token(2)])
            for notification in received {
                #expect(notification.status == 200)
                #expect(notification.topic == "com.example.baidu")
                #expect(notification.pushType == "alert" && notification.priority == "10")
                #expect(notification.collapseID == nil)
                #expect(
                    String(decoding: notification.payload, as: UTF8.self)
                        == #"{"aps":{"alert":{"body":"全场八折","title":"会员日"},"badge":5,"sound":"default"},"coupon":"VIP8"}"#
                )
                let expiration = try #require(notification.expiration.flatMap { Double($0) })
                #expect(abs(expiration - (sentAt.timeIntervalSince1970 + 3600)) < 10)
            }
            let reported = expectSuccess(try await gw.rest("/rest/3.0/report/query_msg_status", ["msg_id": msgID]))
            let result = try #require((reported["result"] as? [[String: Any]])?.first)
            #expect(result["status"] as? Int == 0 && result["success"] as? Int == 2)

            // A pass-through message: a silent background push to one channel.
            gw.mock.resetRecorded()
            let single = expectSuccess(
                try await gw.rest(
                    "/rest/3.0/push/single_device", ["channel_id": channels[3]!, "msg": #"{"cmd":"sync"}"#]))
            _ = try await gw.completed(msgID: try #require(single["msg_id"] as? String))
            let silent = try #require(gw.mock.receivedNotifications().first)
            #expect(gw.mock.receivedNotifications().count == 1)
            #expect(silent.deviceToken == token(3))
            #expect(silent.pushType == "background" && silent.priority == "5")
            #expect(String(decoding: silent.payload, as: UTF8.self) == #"{"aps":{"content-available":1},"cmd":"sync"}"#)

            // 2.0 to a user, after the user's device unbound: refused, nothing sent.
            gw.mock.resetRecorded()
            let user = try #require(
                try await gw.baiduStore.device(appID: gw.app.id, channelID: channels[5]!)?.userID)
            #expect(try await gw.device("unbind", ["device_token": token(5)]).errorCode == 0)
            expectError(
                try await gw.rest(
                    "/rest/2.0/channel/channel",
                    ["method": "push_msg", "push_type": "1", "user_id": user, "messages": #""x""#]),
                30608)
            #expect(gw.mock.receivedNotifications().isEmpty)
        }
    }
}
