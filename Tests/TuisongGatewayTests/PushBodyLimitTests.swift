import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongGateway

/// The native push route's body limit, over a real socket.
@Suite(.serialized) struct PushBodyLimitTests {
    /// The push route's limit is the largest valid push (`NativePushAPI.bodyLimit`): longer
    /// bodies are refused 413 before they are read or parsed; shorter ones are parsed.
    @Test func aPushBodyNoValidPushCanHaveIsRefusedAtTheFrontDoor() async throws {
        #expect(NativePushAPI.bodyLimit == 1_085_536)
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        func post(_ body: Data) async throws -> TestResponse {
            try await http(
                "POST", "\(gw.baseURL)/api/v1/push", key: key, body: body, contentType: "application/json")
        }
        func json(_ object: Any) throws -> Data { try JSONSerialization.data(withJSONObject: object) }

        // The 2 MB push with a huge alert: 413, not parsed into notification_too_large.
        let huge = try json([
            "audience": ["all": true], "notification": ["alert": String(repeating: "x", count: 2_000_000)],
        ])
        let refused = try await post(huge)
        #expect(refused.status == 413)
        #expect(refused.errorCode == "payload_too_large")
        #expect(refused.errorMessage?.contains("1085536") == true, "\(String(describing: refused.errorMessage))")
        let justOver = try await post(Data(repeating: UInt8(ascii: " "), count: NativePushAPI.bodyLimit + 1))
        #expect(justOver.status == 413)

        // Under the limit, an oversized notification is parsed and refused for what it is.
        let parsed = try await post(
            try json([
                "audience": ["all": true], "notification": ["alert": String(repeating: "x", count: 500_000)],
            ]))
        #expect(parsed.status == 400)
        #expect(parsed.errorCode == "notification_too_large")

        // The largest list fits: 5,000 APNs tokens of the longest kind (scheduled, so nothing is sent now).
        let longest = (1...NativePushAPI.maxTokens).map { n in
            let hex = String(n, radix: 16)
            return String(repeating: "a", count: 200 - hex.count) + hex
        }
        let later = Int(Date().timeIntervalSince1970) + 3600
        let full = try json([
            "audience": ["tokens": longest], "notification": ["alert": "all of them"], "send_at": later,
        ])
        #expect(full.count <= NativePushAPI.bodyLimit)
        let accepted = try await post(full)
        #expect(accepted.status == 202, "\(String(decoding: accepted.body, as: UTF8.self).prefix(300))")
        let overCap = try await post(
            try json([
                "audience": ["tokens": (1...(NativePushAPI.maxTokens + 1)).map { token($0) }],
                "notification": ["alert": "x"],
            ]))
        #expect(overCap.status == 400)
        #expect(overCap.errorMessage?.contains("at most 5000 per push") == true)
    }
}
