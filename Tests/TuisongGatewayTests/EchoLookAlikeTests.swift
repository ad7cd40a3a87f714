import Foundation
import Testing
import TuisongCore
import TuisongEcho
import TuisongEchoLookAlike
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

/// The proof that a look-alike is its transport's folder and a registry line: the test-only
/// Echo transport's look-alike (`Tests/Transports/Echo/LookAlike`, no file outside Echo's
/// folder) is registered as the real ones are, and local mode runs it like theirs (#44).
@Suite struct EchoLookAlikeTests {
    @Test func aTestOnlyLookAlikeRegisteredTheNewWayServesLocalMode() async throws {
        let gw = try await TestGateway.start(
            transports: TransportRegistry.standard.adding(EchoTransport.declaration),
            lookAlikes: LookAlikeRegistry.standard.adding(EchoLookAlike.declaration))
        defer { Task { await gw.stop() } }
        #expect(gw.mock.lookAlikeServices.last == .echo)
        let (_, key) = try await gw.createApp(bundleID: "com.example.echo")
        for token in ["echo-token-1", "unregistered-echo-2"] {
            let device = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(token)", key: key, json: ["channel": "echo"])
            #expect(device.status == 201, "\(device.text)")
        }

        // The app has no echo credential: local mode signs in with the look-alike's own (as it
        // does for every service with a look-alike), and the push goes to it over HTTP.
        let pushed = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: [
                "audience": ["tokens": ["echo-token-1", "unregistered-echo-2"]],
                "notification": ["alert": ["title": "Hi look-alike"]], "echo": ["room": "lobby"],
            ])
        #expect(pushed.status == 202, "\(pushed.text)")
        let messageID = try #require(pushed.jsonObject["message_id"] as? Int)
        let status = try await gw.completed(messageID: Int64(messageID), timeout: .seconds(60))
        #expect(status.counts.delivered == 1 && status.counts.failed == 1, "\(status)")

        let received = gw.mock.receivedAndroidMessages().filter { $0.service == .echo }
        #expect(received.map(\.tokens) == [["echo-token-1"]])
        #expect(received.first?.principal == "lookalike", "the look-alike's own throwaway account")
        let body = try #require(
            try JSONSerialization.jsonObject(with: Data(received.first?.body ?? [])) as? [String: Any])
        #expect(body["title"] as? String == "Hi look-alike")
        #expect((body["options"] as? [String: String]) == ["room": "lobby"])
        // The magic token is answered in Echo's own words (410), which invalidates the token.
        #expect(gw.mock.androidStatistics[.echo].requestsRefused == 1)
        #expect(status.failures == ["unregistered": 1], "\(status.failures)")
    }
}
