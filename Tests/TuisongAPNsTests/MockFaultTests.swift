import Foundation
import Testing
import TuisongLookAlikes

@Suite("APNs mock injects faults")
struct MockFaultTests {
    static func tokenPath(_ prefix: String) -> String {
        let token = prefix + String(repeating: "0", count: 64 - prefix.count)
        return "/3/device/\(token)"
    }

    @Test("token prefixes choose the answer after validation; 410 carries a timestamp")
    func tokenPrefixes() throws {
        let harness = try MockHarness { $0.faults = .magicTokenPrefixes }
        let payload = harness.path("payload.json")
        let headers = try harness.validHeaders()
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let responses = try harness.curl(
            ["410", "400bad", "429", "500", "4000", "abcd"].map { prefix in
                CurlRequest(path: Self.tokenPath(prefix), headers: headers, bodyFile: payload)
            })
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(responses.map(\.status) == [410, 400, 429, 500, 200, 200])
        #expect(
            responses.map(\.reason) == [
                "Unregistered", "BadDeviceToken", "TooManyRequests", "InternalServerError", nil, nil,
            ])
        let timestamp = try #require((responses[0].json?["timestamp"] as? NSNumber)?.int64Value)
        #expect(timestamp >= before && timestamp <= after)
        for response in responses.dropFirst() { #expect(response.json?["timestamp"] == nil) }
        #expect(harness.server.apnsStatistics.responsesByStatus == [410: 1, 400: 1, 429: 1, 500: 1, 200: 2])

        // Validation comes first: an invalid request with a fault prefix gets its validation error.
        let invalid = try harness.curl(
            CurlRequest(path: Self.tokenPath("410"), headers: [harness.bearer(try harness.jwt())], bodyFile: payload))
        #expect(invalid.status == 400)
        #expect(invalid.reason == "MissingTopic")
    }

    @Test("faults can be replaced while the server runs")
    func setFaultsAtRunTime() throws {
        let harness = try MockHarness()
        let request = CurlRequest(
            path: Self.tokenPath("dead"), headers: try harness.validHeaders(), bodyFile: harness.path("payload.json"))
        #expect(try harness.curl(request).status == 200)

        let faults = LookAlikeConfiguration.Faults(tokenPrefixes: ["dead": .init(status: 410, reason: "ExpiredToken")])
        harness.server.setFaults(faults)
        #expect(harness.server.faults == faults)
        let expired = try harness.curl(request)
        #expect(expired.status == 410)
        #expect(expired.reason == "ExpiredToken")

        harness.server.setFaults(.init())
        #expect(try harness.curl(request).status == 200)
    }

    @Test("latency delays each answer without serialising the streams")
    func latency() throws {
        let harness = try MockHarness { configuration in
            configuration.faults.latencyMilliseconds = 300
            configuration.streamsBeforeFirstValidToken = 100
        }
        let single = Date()
        #expect(
            try harness.curl(CurlRequest(headers: try harness.validHeaders(), bodyFile: harness.path("payload.json")))
                .status == 200)
        #expect(Date().timeIntervalSince(single) >= 0.3)

        // 20 requests 10 at a time: two rounds of ~300 ms; one at a time would take 6 s.
        let concurrent = Date()
        let load = try harness.h2load(requests: 20, connections: 1, streams: 10, headers: try harness.validHeaders())
        let elapsed = Date().timeIntervalSince(concurrent)
        #expect(load.succeeded == 20, "\(load.output)")
        #expect(elapsed >= 0.6)
        #expect(elapsed < 3)
    }

    @Test("GOAWAY after N requests names the last processed stream; later streams are not processed")
    func goawayAfterRequests() throws {
        let harness = try MockHarness { configuration in
            configuration.faults.goawayAfterRequests = 2
            configuration.streamsBeforeFirstValidToken = 100
        }
        let result = try harness.nghttp(headers: try harness.validHeaders(), extraArguments: ["-m", "5"])
        let output = result.stdout
        #expect(output.contains("recv GOAWAY frame"), "\(output)")
        #expect(output.contains("last_stream_id=3"), "\(output)")
        #expect(output.contains(#"{"reason":"Shutdown"}"#))
        let statistics = harness.server.statistics
        let apns = harness.server.apnsStatistics
        #expect(apns.requests == 2)
        #expect(statistics.goawaysSent == 1)
        #expect(harness.server.receivedNotifications().map(\.streamID) == [1, 3])
    }

    @Test("curl moves to a new connection after the GOAWAY")
    func curlRetriesOnNewConnection() throws {
        let harness = try MockHarness { $0.faults.goawayAfterRequests = 1 }
        let request = CurlRequest(headers: try harness.validHeaders(), bodyFile: harness.path("payload.json"))
        let responses = try harness.curl([request, request, request])
        #expect(responses.map(\.status) == [200, 200, 200])
        let statistics = harness.server.statistics
        #expect(statistics.connectionsAccepted == 3)
        #expect(statistics.goawaysSent == 3)
        #expect(Set(harness.server.receivedNotifications().map(\.connectionID)).count == 3)
    }

    @Test("the connection is dropped without GOAWAY after N requests")
    func dropConnection() throws {
        let harness = try MockHarness { configuration in
            configuration.faults.dropConnectionAfterRequests = 2
            configuration.streamsBeforeFirstValidToken = 100
        }
        let result = try harness.nghttp(headers: try harness.validHeaders(), extraArguments: ["-m", "6"])
        #expect(!result.stdout.contains("recv GOAWAY frame"))
        let statistics = harness.server.statistics
        let apns = harness.server.apnsStatistics
        #expect(apns.requests == 2)
        #expect(statistics.connectionsDropped == 1)
        #expect(statistics.goawaysSent == 0)
        #expect(statistics.connectionsOpen == 0)
        // The client saw at most the two processed answers, never a fourth or sixth.
        #expect(result.stdout.components(separatedBy: ":status: 200").count - 1 <= 2)
    }
}
