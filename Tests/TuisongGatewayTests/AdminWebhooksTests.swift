import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongGateway

/// The console's webhook endpoints: the native API's operations behind a session, each
/// endpoint's recent attempts, and resending one attempt's event with its `webhook-id`.
@Suite(.serialized) struct AdminWebhooksTests {
    @Test func endpointsAttemptsAndResend() async throws {
        let receiver = try WebhookReceiver()
        receiver.answer([500])
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let app = try await gw.runtime.store.createApp(name: "a", bundleID: "com.example.a", apiKeyHash: "h1")
        let other = try await gw.runtime.store.createApp(name: "b", bundleID: "com.example.b", apiKeyHash: "h2")

        let created = try await client.call("POST", "/apps/\(app.id)/webhooks", json: ["url": receiver.url])
        #expect(created.status == 201)
        #expect((created.jsonObject["secret"] as? String)?.hasPrefix("whsec_") == true)
        let id = try #require(created.jsonObject["id"] as? Int)
        #expect(try await client.call("GET", "/apps/\(other.id)/webhooks/\(id)").status == 404)
        let bad = try await client.call("POST", "/apps/\(app.id)/webhooks", json: ["url": "ftp://x/"])
        #expect(bad.status == 400 && bad.errorCode == "invalid_url")

        let test = try await client.call("POST", "/apps/\(app.id)/webhooks/\(id)/test")
        #expect(test.status == 202)
        let eventID = try #require(test.jsonObject["event_id"] as? String)
        _ = try await receiver.wait { $0.count >= 1 }
        var attempts: [[String: Any]] = []
        try await waitUntil("the failed attempt is listed") {
            attempts =
                try await client.call("GET", "/apps/\(app.id)/webhooks/\(id)").jsonObject["attempts"]
                as? [[String: Any]] ?? []
            return !attempts.isEmpty
        }
        #expect(attempts.first?["status"] as? Int == 500)
        #expect(attempts.first?["response"] as? String == #"{"error":"try later"}"#)
        let attemptID = try #require(attempts.first?["id"] as? Int)

        // Resent now rather than after the 5 s retry: the same event, the same id.
        let resent = try await client.call("POST", "/apps/\(app.id)/webhooks/\(id)/attempts/\(attemptID)/resend")
        #expect(resent.status == 202)
        let got = try await receiver.wait { $0.count >= 2 }
        #expect(got.prefix(2).map(\.id) == [eventID, eventID])

        let disabled = try await client.call("PATCH", "/apps/\(app.id)/webhooks/\(id)", json: ["enabled": false])
        #expect(disabled.jsonObject["enabled"] as? Bool == false)
        #expect(try await client.call("DELETE", "/apps/\(app.id)/webhooks/\(id)").status == 204)
        #expect(
            (try await client.call("GET", "/apps/\(app.id)/webhooks").jsonObject["webhooks"] as? [Any])?.isEmpty == true
        )
        await receiver.stop()
    }
}
