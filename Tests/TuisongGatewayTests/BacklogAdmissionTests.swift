import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import TuisongGateway

/// Issue #40 item 5: an app whose backlog (messages accepted and not yet sent through) reached
/// `delivery.max_backlog_per_app` is answered 429 with `Retry-After` in the native dialect,
/// while another app under its bound is served as before; once the backlog drains, the app's
/// pushes are accepted again. The backlog is real: the test holds the SQLite dispatcher lock,
/// so what the API accepts stays queued, as when acceptance outruns delivery.
@Suite(.serialized) struct BacklogAdmissionTests {
    func push(_ gw: RunningGateway, _ key: String, _ n: Int) async throws -> TestResponse {
        try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tokens": [token(n)]], "notification": ["alert": "line \(n)"]])
    }

    @Test func anAppOverItsBoundIsRefusedWhileAnotherIsServedAndAdmittedAgainOnceItDrains() async throws {
        let hold = try DispatcherHold()
        let gw = try await TestGateway.start(
            environment: ["TUISONG_DELIVERY_MAX_BACKLOG_PER_APP": "3"], directory: hold.directory)
        defer { Task { await gw.stop() } }
        let (chatID, chatKey) = try await gw.createApp(bundleID: "com.example.chat")
        let (_, newsKey) = try await gw.createApp(bundleID: "com.example.news")

        var accepted: [Int] = []
        for n in 1...3 {
            let answer = try await push(gw, chatKey, n)
            #expect(answer.status == 202, "\(answer.text)")
            accepted += [try #require(answer.jsonObject["message_id"] as? Int)]
        }
        let refused = try await push(gw, chatKey, 4)
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.errorCode == "backlog_full")
        #expect(refused.errorMessage?.contains("at most 3") == true)
        #expect(refused.header("Retry-After") == "1")
        #expect(try await gw.runtime.store.messages(appID: chatID, limit: 10).count == 3, "nothing of it was stored")

        // Another app under its bound is unaffected while the first is over it.
        let news = try await push(gw, newsKey, 5)
        #expect(news.status == 202, "\(news.text)")

        // Delivery resumes: the backlog drains and the app's pushes are accepted again.
        hold.release()
        for id in accepted { _ = try await gw.completed(messageID: Int64(id)) }
        try await waitUntil("the drained app is admitted again") {
            try await push(gw, chatKey, 6).status == 202
        }
    }

    @Test func theConsolesTestPushIsRefusedTheSameWay() async throws {
        let hold = try DispatcherHold()
        let gw = try await TestGateway.start(
            environment: [
                "TUISONG_DELIVERY_MAX_BACKLOG_PER_APP": "1", "TUISONG_ADMIN_PASSWORD": AdminTestClient.password,
            ], directory: hold.directory)
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp()
        let client = AdminTestClient(baseURL: gw.baseURL)
        try await client.login()
        let body: [String: Any] = ["audience": ["all": true], "notification": ["alert": ["body": "test"]]]
        let first = try await client.call("POST", "/apps/\(appID)/push", json: body)
        #expect(first.status == 202, "\(first.text)")
        let refused = try await client.call("POST", "/apps/\(appID)/push", json: body)
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.errorCode == "backlog_full")
        #expect((refused.jsonObject["error"] as? [String: Any])?["retry_after"] as? Int == 1)
        #expect(refused.header("Retry-After") == "1")
    }

    @Test func withoutABoundNothingIsRefused() async throws {
        let hold = try DispatcherHold()
        let gw = try await TestGateway.start(
            environment: ["TUISONG_DELIVERY_MAX_BACKLOG_PER_APP": "0"], directory: hold.directory)
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        for n in 1...5 {
            let answer = try await push(gw, key, n)
            #expect(answer.status == 202, "\(answer.text)")
        }
    }

    @Test func theDefaultBoundIsInTheConfig() throws {
        let config = try GatewayConfig.load(fileContents: nil, environment: [:])
        #expect(config.delivery.maxBacklogPerApp == 10_000)
        let unbounded = try GatewayConfig.load(
            fileContents: nil, environment: ["TUISONG_DELIVERY_MAX_BACKLOG_PER_APP": "0"])
        #expect(unbounded.delivery.maxBacklogPerApp == 0)
        #expect(throws: ConfigError.self) {
            try GatewayConfig.load(fileContents: nil, environment: ["TUISONG_DELIVERY_MAX_BACKLOG_PER_APP": "-1"])
        }
    }
}
