import Foundation
import Testing
import TuisongCore
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Local mode's magic tokens, through a whole gateway over loopback sockets.
@Suite(.serialized) struct LocalModeMagicTokenTests {
    /// A newcomer's gateway, with no faults file: the look-alike answers the same magic tokens
    /// as `apns-mock --magic-tokens`, so an invalidation and a retry show at once.
    @Test func localModeAnswersTheMagicTokens() async throws {
        // A long first retry delay keeps the retried delivery waiting while we look.
        let gw = try await TestGateway.start(environment: ["TUISONG_DELIVERY_RETRY_BASE_SECONDS": "600"])
        defer { Task { await gw.stop() } }
        #expect(gw.mock.faults == LookAlikeConfiguration.Faults.magicTokenPrefixes)
        let (_, key) = try await gw.createApp()
        let gone = token(1, prefix: "410")
        let busy = token(2, prefix: "429")
        let fine = token(3)
        for device in [gone, busy, fine] {
            let put = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(device)", key: key, json: ["environment": "production"])
            #expect(put.status == 201)
        }
        let android = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/unregistered-phone-1", key: key, json: ["channel": "fcm"])
        #expect(android.status == 201)
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "magic"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        var outcomes: [String: (state: String, reason: String)] = [:]
        var channels: [String: String] = [:]
        try await waitUntil("the four outcomes") {
            let answer = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)/deliveries", key: key)
            outcomes = [:]
            for delivery in answer.jsonObject["deliveries"] as? [[String: Any]] ?? [] {
                if let token = delivery["token"] as? String {
                    outcomes[token] = (delivery["state"] as? String ?? "", delivery["reason"] as? String ?? "")
                    channels[token] = delivery["channel"] as? String
                }
            }
            let status = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)", key: key).jsonObject
            return outcomes[gone]?.reason == "Unregistered" && outcomes[busy]?.reason == "TooManyRequests"
                && outcomes["unregistered-phone-1"]?.state == "failed"
                && (status["counts"] as? [String: Int])?["delivered"] == 1  // any other token is delivered
        }
        #expect(outcomes[gone]?.state == "failed" && outcomes[gone]?.reason == "Unregistered", "\(outcomes)")
        #expect(outcomes[busy]?.state != "failed", "429 is retried later: \(outcomes)")
        #expect(outcomes["unregistered-phone-1"]?.state == "failed", "\(outcomes)")
        // Each delivery names its push service (issue #41 item 12).
        #expect(channels[gone] == "apns" && channels["unregistered-phone-1"] == "fcm", "\(channels)")
        let device = try await gw.runtime.store.device(appID: 1, token: try #require(DeviceToken(gone)))
        #expect(device?.invalidatedAt != nil, "410 invalidates the device")
        let phone = try await gw.runtime.store.device(
            appID: 1, token: try #require(DeviceToken("unregistered-phone-1", channel: .fcm)))
        #expect(phone?.invalidatedAt != nil, "so does FCM's UNREGISTERED")
    }
}
