import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongGateway

/// Issue #41 item 11: `DELETE /api/v1/messages/{id}` cancels a scheduled push before it is sent.
@Suite(.serialized) struct MessageCancelTests {
    @Test func aScheduledPushIsCancelledAndNeverSent() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let (_, otherKey) = try await gw.createApp(bundleID: "com.example.other")
        let device = token(1)
        _ = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(device)", key: key, json: ["environment": "production"])
        let later = Int(Date().timeIntervalSince1970) + 3600
        let scheduled = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tokens": [device]], "notification": ["alert": "later"], "send_at": later])
        #expect(scheduled.status == 202)
        #expect(scheduled.jsonObject["state"] as? String == "scheduled")
        let id = try #require(scheduled.jsonObject["message_id"] as? Int)
        let url = "\(gw.baseURL)/api/v1/messages/\(id)"
        let status = try await http("GET", url, key: key).jsonObject
        #expect(status["send_at"] as? String != nil, "the message says when it will be sent")

        // Another app's key cannot see it, let alone cancel it.
        let stranger = try await http("DELETE", url, key: otherKey)
        #expect(stranger.status == 404 && stranger.errorCode == "message_not_found")

        let cancelled = try await http("DELETE", url, key: key)
        #expect(cancelled.status == 200)
        #expect(cancelled.jsonObject["state"] as? String == "cancelled")
        #expect(try await http("GET", url, key: key).jsonObject["state"] as? String == "cancelled")
        let again = try await http("DELETE", url, key: key)
        #expect(again.status == 409 && again.errorCode == "not_scheduled")

        // A message already sent cannot be.
        let now = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tokens": [device]], "notification": ["alert": "now"]])
        let sent = try #require(now.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(sent))
        let late = try await http("DELETE", "\(gw.baseURL)/api/v1/messages/\(sent)", key: key)
        #expect(late.status == 409)
        #expect(gw.runtime.localMock?.receivedNotifications().count == 1, "only the unscheduled push was sent")
    }
}
