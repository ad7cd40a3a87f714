import Foundation
import Logging
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongPostgresTestKit

@testable import TuisongDelivery
@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// Delivery engines of several nodes on one PostgreSQL database: they share a message's
/// audience slice by slice and send every device once. (Killed and stalled nodes are the
/// cluster test's: Tests/cluster.)
///
/// PostgreSQL only, and not through the kit's `withTestStore`: slices, leases and several nodes
/// on one database are PostgreSQL's mechanism (a SQLite store is one node; it sends a message
/// whole), and the three stores here are opened on one database with a node id each.
@Suite struct ClusterEngineTests {
    @Test func threeEnginesShareATagPushAndSendEveryDeviceOnce() async throws {
        try await withTestDatabase { url in
            var stores: [PostgresStore] = []
            for index in 0..<3 {
                stores.append(
                    try PostgresStore(
                        url: url, configuration: .init(poolSize: 3, sliceSize: 500, nodeID: "engine-\(index)")))
            }
            defer { for store in stores { try? store.close() } }
            let app = try await stores[0].createApp(name: "c", bundleID: "com.example.c", apiKeyHash: UUID().uuidString)
            let devices = 5_000
            // Bare hex tokens parse once APNs is declared; alone, this suite runs before anything else does.
            StandardChannels.declare()
            var batch: [DeviceRegistration] = []
            for n in 1...devices {
                batch.append(
                    DeviceRegistration(
                        token: DeviceToken(testToken(n))!, environment: .production, tags: [TagName("all")!],
                        channel: .apns))
            }
            _ = try await stores[0].registerDevices(appID: app.id, batch)

            let transports = (0..<3).map { _ in ScriptedTransport(answering: .after(.milliseconds(2))) }
            var logger = Logger(label: "cluster-engine-test")
            logger.logLevel = .critical
            let engines = (0..<3).map { index in
                var settings = EngineFixture.settings(pageSize: 100)
                settings.leaseRenewInterval = .milliseconds(500)
                return DeliveryEngine(
                    store: stores[index], transport: transports[index], settings: settings, clock: SystemClock(),
                    logger: logger)
            }
            for engine in engines { try await engine.start() }
            let record = try await engines[0].submit(
                PushJob(
                    appID: app.id, vendor: "native", audience: .tag("all"),
                    content: PushContent(body: "hi"), options: PushOptions()))
            // Any node answers the status; the one that accepted it need not be the one sending.
            let status = try await DeliveryWait.completed(engines[2], record.id, timeout: .seconds(60))
            for engine in engines { await engine.stop() }

            #expect(status.counts.delivered == devices)
            #expect(status.record.total == devices)
            let sent = transports.map(\.totalAttempts)
            #expect(sent.reduce(0, +) == devices, "every device once: \(sent)")
            let tokens = Set(transports.flatMap { $0.pushes.map(\.token) })
            #expect(tokens.count == devices)
            #expect(sent.filter { $0 > 0 }.count >= 2, "the work was shared: \(sent)")
        }
    }
}
