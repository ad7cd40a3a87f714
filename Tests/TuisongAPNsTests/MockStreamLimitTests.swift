import Foundation
import Testing
import TuisongLookAlikes

@Suite("APNs mock stream limits")
struct MockStreamLimitTests {
    static let one = "[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1]"
    static let thousand = "[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1000]"

    @Test("one stream until a valid provider token, then SETTINGS raise the limit")
    func raisedAfterFirstValidToken() throws {
        let harness = try MockHarness()
        let output = try harness.nghttp(headers: try harness.validHeaders()).stdout
        let first = try #require(output.range(of: Self.one), "\(output)")
        let request = try #require(output.range(of: "send HEADERS frame"))
        let raised = try #require(output.range(of: Self.thousand), "\(output)")
        // nghttp may send its request before or after reading the first SETTINGS; the raise
        // always comes after both.
        #expect(first.lowerBound < raised.lowerBound)
        #expect(request.lowerBound < raised.lowerBound)
        #expect(output.contains(":status: 200"))
        #expect(harness.server.statistics.streamLimitRaises == 1)
    }

    @Test("a rejected token leaves the limit at one")
    func notRaisedByRejectedToken() throws {
        let harness = try MockHarness()
        let output = try harness.nghttp(
            headers: [harness.bearer(try harness.jwt(teamID: "ZZZZZZZZZZ")), "apns-topic: \(MockHarness.bundleID)"]
        ).stdout
        #expect(output.contains(Self.one))
        #expect(!output.contains(Self.thousand))
        #expect(output.contains(":status: 403"))
        #expect(harness.server.statistics.streamLimitRaises == 0)
    }

    @Test("configured limits are advertised")
    func configuredLimits() throws {
        let harness = try MockHarness { configuration in
            configuration.streamsBeforeFirstValidToken = 3
            configuration.maxConcurrentStreams = 250
        }
        let output = try harness.nghttp(headers: try harness.validHeaders(), extraArguments: ["-m", "3"]).stdout
        #expect(output.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):3]"))
        #expect(output.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):250]"))
        #expect(!output.contains("REFUSED_STREAM"))
        #expect(harness.server.apnsStatistics.requests == 3)
    }
}
