import Foundation
import Testing
import TuisongLookAlikes

@Suite("APNs mock under load")
struct MockLoadTests {
    @Test("h2load: every request of a bounded multi-stream run succeeds and is counted")
    func boundedRun() throws {
        // h2load may open all its streams before reading the server's SETTINGS; with the
        // Apple-like initial limit of one, the excess would be refused (see the next test).
        let harness = try MockHarness { configuration in
            configuration.recordedNotificationLimit = 500
            configuration.streamsBeforeFirstValidToken = 1000
        }
        let result = try harness.h2load(
            requests: 3000, connections: 2, streams: 50, headers: try harness.validHeaders())
        #expect(result.succeeded == 3000, "\(result.output)")
        #expect(result.statusCodes["2xx"] == 3000)
        let statistics = harness.server.statistics
        let apns = harness.server.apnsStatistics
        #expect(apns.requests == 3000)
        #expect(apns.responsesByStatus == [200: 3000])
        #expect(statistics.connectionsAccepted == 2)
        #expect(apns.providerTokensAccepted == 1)
        // The ring keeps the most recent requests only.
        #expect(harness.server.receivedNotifications().count == 500)
    }

    @Test("two event loops share the connections; streams refused before the first token are accounted for")
    func twoEventLoops() throws {
        let harness = try MockHarness { $0.eventLoopThreads = 2 }
        let result = try harness.h2load(
            requests: 2000, connections: 4, streams: 20, headers: try harness.validHeaders())
        let statistics = harness.server.statistics
        let apns = harness.server.apnsStatistics
        #expect(result.succeeded == apns.requests, "\(result.output)")
        #expect(apns.requests + statistics.refusedStreams == 2000)
        #expect(apns.responsesByStatus == [200: apns.requests])
        #expect(statistics.connectionsAccepted == 4)
        #expect(statistics.streamLimitRaises == 4)
    }

    @Test("h2load: many FCM and Huawei sends multiplexed on few connections all succeed and are counted")
    func androidRun() throws {
        let harness = try MockHarness { configuration in
            configuration.recordedNotificationLimit = 100
            configuration.streamsBeforeFirstValidToken = 1000
        }
        let fcmToken = try harness.fcmAccessToken()
        try harness.write(harness.fcmMessage(), to: "payload.json")
        let fcm = try harness.h2load(
            requests: 1000, connections: 2, streams: 50, headers: ["authorization: Bearer \(fcmToken)"],
            path: harness.fcmSendPath)
        #expect(fcm.succeeded == 1000, "\(fcm.output)")

        let huaweiToken = try harness.pushKitAccessToken(path: "/oauth2/v3/token", client: harness.setup.huaweiClient)
        let tokens = (0..<100).map { "device\($0)" }
        try harness.write(#"{"message":{"token":\#(MockHarness.tokenArray(tokens)),"data":"x"}}"#, to: "payload.json")
        let huawei = try harness.h2load(
            requests: 200, connections: 1, streams: 20, headers: ["authorization: Bearer \(huaweiToken)"],
            path: harness.huaweiSendPath)
        #expect(huawei.succeeded == 200, "\(huawei.output)")

        let statistics = harness.server.androidStatistics
        #expect(statistics.fcm.sendRequests == 1000)
        #expect(statistics.fcm.messagesDelivered == 1000)
        #expect(statistics.huawei.messagesDelivered == 200 * 100)
        #expect(harness.server.receivedAndroidMessages().count == 100)
        #expect(harness.server.apnsStatistics.requests == 0)
    }
}
