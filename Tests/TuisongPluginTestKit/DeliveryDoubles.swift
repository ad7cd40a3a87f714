import Foundation
import Logging
import Synchronization
import TuisongAPNsTransport
import TuisongCore
import TuisongDelivery
import TuisongPostgresTestKit
import TuisongStore

/// A transport whose outcomes a test scripts, per token and attempt (1 for the first), and
/// which records every push and batch it is handed.
public final class ScriptedTransport: PushTransport {
    /// How a batch is answered.
    public enum Answering: Sendable {
        /// Before `send` returns, in one report.
        case atOnce
        /// From another task after `delay`, in one report.
        case after(Duration)
        /// From another task, soon, in two reports, the second half first: as the APNs
        /// transport answers from its event loop, so the engine must map outcomes by index.
        case laterInTwoParts
    }

    public typealias Script = @Sendable (_ token: String, _ attempt: Int) -> SendOutcome

    public let script: Script
    public let answering: Answering
    /// Attempts by token.
    public let attempts = Mutex<[String: Int]>([:])
    /// Every batch handed over, in order.
    public let batches = Mutex<[PushBatch]>([])

    public init(
        answering: Answering = .atOnce, script: @escaping Script = { _, _ in .delivered(serviceMessageID: nil) }
    ) {
        self.script = script
        self.answering = answering
    }

    /// Refuses ahead what the gateway's transports refuse (its APNs transport: what APNs could
    /// not carry for any device), so a message the gateway would not take is not taken here.
    public func check(_ content: PushContent, options: PushOptions) throws {
        _ = try APNsPayload.build(content, pushType: options.pushType)
    }

    public func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async {
        batches.withLock { $0.append(batch) }
        let numbered = attempts.withLock { attempts in
            batch.pushes.map { push -> (String, Int) in
                attempts[push.token, default: 0] += 1
                return (push.token, attempts[push.token]!)
            }
        }
        let script = self.script
        let reports = numbered.enumerated().map {
            SendReport(index: $0.offset, outcome: script($0.element.0, $0.element.1))
        }
        switch answering {
        case .atOnce:
            report(reports)
        case .after(let delay):
            Task {
                try? await Task.sleep(for: delay)
                report(reports)
            }
        case .laterInTwoParts:
            Task {
                await Task.yield()
                let half = reports.count / 2
                report(Array(reports[half...]))
                report(Array(reports[..<half]))
            }
        }
    }

    public var totalAttempts: Int { attempts.withLock { $0.values.reduce(0, +) } }

    /// Every push handed over, in order.
    public var pushes: [OutgoingPush] { batches.withLock { $0.flatMap(\.pushes) } }

    /// The pushes that carried `content` (one message's, when messages differ in content).
    public func pushes(carrying content: PushContent) -> [OutgoingPush] {
        pushes.filter { $0.content.content == content }
    }
}

/// A delivery engine over a temporary store with one app, for tests of the pipeline: a SQLite
/// file, or a new database in the PostgreSQL test cluster (the same tests run on both:
/// `@Test(arguments: PluginStoreBackend.allCases)`).
public struct EngineFixture: Sendable {
    public let store: any GatewayStore
    public let directory: URL
    public let appID: Int64
    let database: TestDatabase?

    public static func make(_ backend: PluginStoreBackend = .sqlite) async throws -> EngineFixture {
        // Its devices' bare hex tokens are APNs's: declared here, not by whichever test happened
        // to run first (a fixture made before any had crashed `seed` on `DeviceToken(…)!`).
        StandardChannels.declare()
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-engine-\(UUID().uuidString)")
        let store: any GatewayStore
        var database: TestDatabase?
        switch backend {
        case .sqlite:
            store = try SQLiteStore(path: directory.appending(path: "t.db").path)
        case .postgresql:
            let created = try TestDatabase(template: migratedTemplate())
            database = created
            store = try PostgresStore(url: created.url, configuration: .init(poolSize: 4))
        }
        let app = try await store.createApp(name: "e", bundleID: "com.example.engine", apiKeyHash: UUID().uuidString)
        return EngineFixture(store: store, directory: directory, appID: app.id, database: database)
    }

    /// Settings fast enough for tests: short retries, flushes and polls.
    public static func settings(pageSize: Int = 100, workers: Int = 32, retryBase: Double = 0.01) -> DeliverySettings {
        var settings = DeliverySettings(
            workers: workers, pageSize: pageSize, maxAttempts: 5, retryBase: retryBase, retryMax: 0.05)
        settings.flushInterval = .milliseconds(20)
        settings.pollInterval = .milliseconds(20)
        return settings
    }

    public func engine(
        _ transport: any PushTransport, pageSize: Int = 100, workers: Int = 32, retryBase: Double = 0.01,
        flushInterval: Duration = .milliseconds(20), clock: any Clock = SystemClock()
    ) -> DeliveryEngine {
        var settings = Self.settings(pageSize: pageSize, workers: workers, retryBase: retryBase)
        settings.flushInterval = flushInterval
        var logger = Logger(label: "engine-test")
        logger.logLevel = .critical
        return DeliveryEngine(store: store, transport: transport, settings: settings, clock: clock, logger: logger)
    }

    /// Registers `count` production devices tagged `tag`, tokens `token(n, prefix:)`.
    public func seed(_ count: Int, tag: String = "all-users", prefix: String = "cd") async throws {
        var batch: [DeviceRegistration] = []
        for n in 1...count {
            batch.append(
                DeviceRegistration(
                    token: DeviceToken(testToken(n, prefix: prefix))!, environment: .production,
                    tags: [TagName(tag)!], channel: .apns))
        }
        _ = try await store.registerDevices(appID: appID, batch)
    }

    public func job(_ audience: Audience) -> PushJob {
        PushJob(
            appID: appID, vendor: "native", audience: audience, content: PushContent(body: "hi"),
            options: PushOptions())
    }

    /// The message's status once it completed with nothing queued or sending.
    public func waitUntilCompleted(_ engine: DeliveryEngine, _ id: Int64, timeout: Duration = .seconds(30)) async throws
        -> MessageStatus
    {
        try await DeliveryWait.completed(engine, id, timeout: timeout)
    }

    public func cleanUp() {
        try? store.close()
        try? FileManager.default.removeItem(at: directory)
        database?.drop()
    }
}

/// Waiting on a message, for tests that hold any `PushGateway` (an engine, a running gateway's).
public enum DeliveryWait {
    /// Polls `gateway.status` until the message completed with nothing queued or sending.
    public static func completed(_ gateway: any PushGateway, _ id: Int64, timeout: Duration = .seconds(30))
        async throws -> MessageStatus
    {
        try await until(gateway, id, timeout: timeout) {
            $0.record.state == .completed && $0.counts.queued == 0 && $0.counts.sending == 0
        }
    }

    /// Polls `gateway.status` until `condition` holds.
    public static func until(
        _ gateway: any PushGateway, _ id: Int64, timeout: Duration = .seconds(30),
        _ condition: (MessageStatus) -> Bool
    ) async throws -> MessageStatus {
        var last: MessageStatus?
        let reached = try await firstValue(within: timeout) { () async throws -> MessageStatus? in
            guard let status = try await gateway.status(messageID: id) else { return nil }
            last = status
            return condition(status) ? status : nil
        }
        guard let reached else {
            throw TestTimeout(message: "message \(id) did not get there: \(String(describing: last?.counts))")
        }
        return reached
    }
}

/// A 64-hex-digit device token: `prefix`, zeros, then `n` in hex in the last four digits.
public func testToken(_ n: Int, prefix: String = "cd") -> String {
    let hex = String(n, radix: 16)
    return prefix + String(repeating: "0", count: 64 - prefix.count - hex.count) + hex
}
