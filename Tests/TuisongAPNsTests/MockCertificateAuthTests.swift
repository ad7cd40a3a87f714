import Foundation
import Testing
import TuisongLookAlikes
import TuisongPluginTestKit

@Suite("APNs mock certificate authentication")
struct MockCertificateAuthTests {
    func certificateArguments(_ harness: MockHarness) -> [String] {
        ["--cert", harness.path("client.pem"), "--key", harness.path("client-key.pem")]
    }

    @Test("a client certificate from the setup's CA authenticates; topics come from the certificate")
    func clientCertificateTopics() throws {
        let harness = try MockHarness()
        let payload = harness.path("payload.json")
        let bundle = MockHarness.bundleID
        let responses = try harness.curl(
            [
                CurlRequest(headers: ["apns-topic: \(bundle)", "apns-push-type: alert"], bodyFile: payload),
                CurlRequest(headers: ["apns-push-type: alert"], bodyFile: payload),
                CurlRequest(headers: ["apns-topic: \(bundle).voip", "apns-push-type: voip"], bodyFile: payload),
                CurlRequest(headers: ["apns-topic: com.other.app"], bodyFile: payload),
            ], extraArguments: certificateArguments(harness))
        #expect(responses.map(\.status) == [200, 200, 200, 400])
        #expect(responses.last?.reason == "TopicDisallowed")
        let statistics = harness.server.statistics
        let apns = harness.server.apnsStatistics
        #expect(apns.certificateAuthenticatedRequests == 4)
        #expect(statistics.connectionsAccepted == 1)
        let received = harness.server.receivedNotifications()
        #expect(received.map(\.teamID) == [nil, nil, nil, nil])
        #expect(received.map(\.topic) == [bundle, nil, bundle + ".voip", "com.other.app"])
    }

    @Test("a certificate connection gets the full stream limit at once")
    func fullLimitImmediately() throws {
        let harness = try MockHarness()
        let output = try harness.nghttp(
            headers: ["apns-topic: \(MockHarness.bundleID)"],
            extraArguments: certificateArguments(harness) + ["-m", "4"]
        ).stdout
        #expect(output.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1000]"), "\(output)")
        #expect(!output.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1]"))
        #expect(!output.contains("REFUSED_STREAM"))
        #expect(harness.server.apnsStatistics.requests == 4)
    }

    @Test("a client certificate from another CA fails the TLS handshake")
    func foreignCertificate() async throws {
        let harness = try MockHarness()
        let stranger = try LookAlikeLocalSetup.generate(bundleID: MockHarness.bundleID)
        let certificate = try harness.write(stranger.clientCertificatePEM, to: "stranger.pem")
        let key = try harness.write(stranger.clientKeyPEM, to: "stranger-key.pem")
        let result = try Command.run(
            "curl",
            [
                "-s", "--http2", "--cacert", harness.path("ca.pem"), "--cert", certificate, "--key", key,
                "-H", "apns-topic: \(MockHarness.bundleID)", "--data-binary", "@\(harness.path("payload.json"))",
                harness.deviceURL,
            ])
        #expect(result.status != 0)
        // Counted on the server's loop, which may get to it after curl has read the alert and
        // exited (seen once in ten loaded runs).
        #expect(await eventually { harness.server.statistics.handshakeFailures == 1 })
        #expect(harness.server.statistics.handshakeFailures == 1)
        #expect(harness.server.apnsStatistics.requests == 0)
    }
}
