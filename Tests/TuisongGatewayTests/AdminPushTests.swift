import Foundation
import Logging
import Testing
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTP
import TuisongPluginTestKit
import TuisongStore

@testable import TuisongGateway

/// The admin API over loopback with a real delivery engine whose sender is scripted: what the
/// console shows while a push runs and after it finished.
struct AdminPushFixture {
    let fixture: EngineFixture
    let engine: DeliveryEngine
    let server: HTTPServer
    let client: AdminTestClient

    static func start(sender: any PushTransport) async throws -> AdminPushFixture {
        let fixture = try await EngineFixture.make()
        let engine = fixture.engine(sender, pageSize: 10, workers: 8)
        try await engine.start()
        _ = try await AdminPassword.bootstrap(
            settings: fixture.store, environment: ["TUISONG_ADMIN_PASSWORD": AdminTestClient.password],
            passwordFile: fixture.directory.appending(path: "pw").path, iterations: 1_000)
        let router = Router()
        var logger = Logger(label: "admin-push-test")
        logger.logLevel = .critical
        let masterKey = MasterKey(box: try SecretBox(key: SecureRandom.bytes(32)), source: "test", created: false)
        AdminAPI(
            store: fixture.store, masterKey: masterKey, apiKeys: nil, gateway: engine,
            config: GatewayConfig.embeddedDefault, clock: SystemClock(), logger: logger
        ).register(on: router)
        let server = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0, threads: 2), router: router)
        try server.start()
        let client = AdminTestClient(baseURL: "http://127.0.0.1:\(server.port)")
        try await client.login()
        return AdminPushFixture(fixture: fixture, engine: engine, server: server, client: client)
    }

    func stop() async {
        await server.shutdown()
        await engine.stop()
        try? fixture.store.close()
        try? FileManager.default.removeItem(at: fixture.directory)
    }

    /// The console's message view once the engine completed the message.
    func follow(_ id: Int) async throws -> [String: Any] {
        _ = try await DeliveryWait.completed(engine, Int64(id))
        return try await client.call("GET", "/messages/\(id)").jsonObject
    }
}

@Suite(.serialized) struct AdminPushTests {
    @Test func aTestPushToATagIsFollowedToTheEnd() async throws {
        // Every seventh device's token is dead; the rest are delivered.
        let sender = ScriptedTransport { token, _ in
            token.hasSuffix("7") ? .invalidate(.service("Unregistered"), since: nil) : .delivered(serviceMessageID: nil)
        }
        let f = try await AdminPushFixture.start(sender: sender)
        defer { Task { await f.stop() } }
        try await f.fixture.seed(30, tag: "vip")
        let template = try await f.fixture.store.createTemplate(
            appID: f.fixture.appID, name: "t", titlePattern: "订单 {0}", bodyPattern: "{1} 已发货")

        let sent = try await f.client.call(
            "POST", "/apps/\(f.fixture.appID)/push",
            json: [
                "audience": ["tag": "vip"], "environment": "production", "template_id": template.id,
                "arguments": ["A-1", "手环"], "notification": ["badge": 1, "custom": ["order": 1]],
            ])
        #expect(sent.status == 202, "\(String(decoding: sent.body, as: UTF8.self))")
        let id = try #require(sent.jsonObject["message_id"] as? Int)
        let payloadBytes = try #require(sent.jsonObject["payload_bytes"] as? Int)

        let done = try await f.follow(id)
        let counts = try #require(done["counts"] as? [String: Int])
        #expect(counts["delivered"] == 28)
        #expect(sender.totalAttempts == 30, "each device tried once")
        #expect(counts["failed"] == 2)
        #expect(done["failures"] as? [String: Int] == ["Unregistered": 2])
        #expect(done["total"] as? Int == 30)
        #expect(done["vendor"] as? String == "console")
        #expect(done["title"] as? String == "订单 A-1")
        #expect(done["body"] as? String == "手环 已发货")
        #expect(done["payload_bytes"] as? Int == payloadBytes)
        #expect(done["payload_channel"] as? String == "apns" && done["payload_limit"] as? Int == 4096)
        #expect(
            done["payload"] as? String == #"{"aps":{"alert":{"body":"手环 已发货","title":"订单 A-1"},"badge":1},"order":1}"#)

        // The monitor: the message in the recent list, its failures, its deliveries in the rate.
        let monitor = try await f.client.call("GET", "/monitor?minutes=5&bucket=5")
        #expect(monitor.list("recent").first?["id"] as? Int == id)
        #expect(monitor.jsonObject["failures"] as? [String: Int] == ["Unregistered": 2])
        let delivered = monitor.list("rate").reduce(0.0) { $0 + ($1["per_second"] as? Double ?? 0) * 5 }
        #expect(abs(delivered - 28) < 0.5)

        // Device detail: a delivered device and an invalidated one.
        let good = try await f.client.call("GET", "/apps/\(f.fixture.appID)/devices/\(token(1, prefix: "cd"))")
        let goodLast = try #require(good.jsonObject["last_delivery"] as? [String: Any])
        #expect(goodLast["message_id"] as? Int == id)
        #expect(goodLast["state"] as? String == "delivered")
        let dead = try await f.client.call("GET", "/apps/\(f.fixture.appID)/devices/\(token(7, prefix: "cd"))")
        let deadLast = try #require(dead.jsonObject["last_delivery"] as? [String: Any])
        #expect(deadLast["state"] as? String == "failed")
        #expect(deadLast["reason"] as? String == "Unregistered")
        #expect(dead.jsonObject["invalidated_at"] is String)
        #expect((dead.jsonObject["recent_problems"] as? [Any])?.count == 1)

        let recent = try await f.client.call("GET", "/messages?app=\(f.fixture.appID)")
        #expect(recent.list("messages").map { $0["id"] as? Int } == [id])
    }

    @Test func aRunningFanOutShowsLiveProgress() async throws {
        let f = try await AdminPushFixture.start(sender: ScriptedTransport(answering: .after(.milliseconds(40))))
        defer { Task { await f.stop() } }
        try await f.fixture.seed(60)
        let sent = try await f.client.call(
            "POST", "/apps/\(f.fixture.appID)/push",
            json: ["audience": ["all": true], "notification": ["alert": ["body": "hi"]]])
        let id = try #require(sent.jsonObject["message_id"] as? Int)
        // With 8 workers and 40 ms per send, 60 devices take about 300 ms: catch it running.
        let sawRunning = try await eventually(within: 10) {
            let monitor = try await f.client.call("GET", "/monitor")
            guard let running = monitor.list("running").first(where: { $0["id"] as? Int == id }),
                let counts = running["counts"] as? [String: Int], running["total"] as? Int == 60
            else { return false }
            return (counts["delivered"] ?? 0) > 0 && (counts["delivered"] ?? 0) < 60
        }
        #expect(sawRunning, "the monitor showed the fan-out part-way")
        let done = try await f.follow(id)
        #expect((done["counts"] as? [String: Int])?["delivered"] == 60)
    }

    @Test func refusedPushesNameTheField() async throws {
        let f = try await AdminPushFixture.start(sender: ScriptedTransport())
        defer { Task { await f.stop() } }
        let app = f.fixture.appID
        let noAudience = try await f.client.call("POST", "/apps/\(app)/push", json: ["notification": ["alert": "x"]])
        #expect(noAudience.errorField == "audience")
        let badEnvironment = try await f.client.call(
            "POST", "/apps/\(app)/push",
            json: ["audience": ["all": true], "environment": "staging", "notification": [:]])
        #expect(badEnvironment.status == 400)
        let tooBig = try await f.client.call(
            "POST", "/apps/\(app)/push",
            json: ["audience": ["all": true], "notification": ["alert": ["body": String(repeating: "字", count: 1400)]]])
        #expect(tooBig.status == 400)
        #expect(tooBig.errorCode == "notification_too_large")
        let otherTemplate = try await f.client.call(
            "POST", "/apps/\(app)/push", json: ["audience": ["all": true], "template_id": 999, "notification": [:]])
        #expect(otherTemplate.errorField == "template_id")
        #expect(try await f.fixture.store.messages(appID: nil, limit: 10).isEmpty, "nothing refused was recorded")
        #expect(try await f.client.call("GET", "/messages/12345").status == 404)
    }
}
