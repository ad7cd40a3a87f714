import Foundation
import Logging
import Synchronization
import Testing
import TuisongCore
import TuisongStore

@testable import TuisongGateway

/// A scripted sender: decides each token's outcome and records every attempt.
final class ScriptedSender: PushSender {
    let script: @Sendable (String, Int) -> SendOutcome
    let attempts = Mutex<[String: Int]>([:])
    let delay: Duration?

    init(
        delay: Duration? = nil,
        script: @escaping @Sendable (String, Int) -> SendOutcome = { _, _ in .delivered(apnsID: nil) }
    ) {
        self.script = script
        self.delay = delay
    }

    func send(app: App, message: MessageRecord, token: String, environment: APNsEnvironment) async -> SendOutcome {
        let attempt = attempts.withLock { attempts -> Int in
            attempts[token, default: 0] += 1
            return attempts[token]!
        }
        if let delay { try? await Task.sleep(for: delay) }
        return script(token, attempt)
    }

    var totalAttempts: Int { attempts.withLock { $0.values.reduce(0, +) } }
}

/// A sender with a batch path of its own, as the APNs sender has: records each batch it is
/// handed and answers it later from another task, in two parts.
final class BatchScriptedSender: PushSender {
    struct Batch: Sendable {
        var environment: APNsEnvironment
        var tokens: [String]
    }

    let script: @Sendable (String) -> SendOutcome
    let batches = Mutex<[Batch]>([])
    let singles = Atomic<Int>(0)

    init(script: @escaping @Sendable (String) -> SendOutcome) {
        self.script = script
    }

    func send(app: App, message: MessageRecord, token: String, environment: APNsEnvironment) async -> SendOutcome {
        singles.add(1, ordering: .relaxed)
        return script(token)
    }

    func send(
        app: App, message: MessageRecord, environment: APNsEnvironment, tokens: [String],
        report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        batches.withLock { $0.append(Batch(environment: environment, tokens: tokens)) }
        let script = self.script
        Task {
            try? await Task.sleep(for: .milliseconds(2))
            let reports = tokens.enumerated().map { SendReport(index: $0.offset, outcome: script($0.element)) }
            let half = reports.count / 2
            // Out of order, in two calls: the dispatcher must map by index.
            report(Array(reports[half...]))
            report(Array(reports[..<half]))
        }
    }
}

struct EngineFixture {
    let store: SQLiteStore
    let directory: URL
    let appID: Int64

    static func make() async throws -> EngineFixture {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-engine-\(UUID().uuidString)")
        let store = try SQLiteStore(path: directory.appending(path: "t.db").path)
        let app = try await store.createApp(name: "e", bundleID: "com.example.engine", apiKeyHash: UUID().uuidString)
        return EngineFixture(store: store, directory: directory, appID: app.id)
    }

    func engine(
        _ sender: any PushSender, pageSize: Int = 100, workers: Int = 32, retryBase: Double = 0.01,
        flushInterval: Duration = .milliseconds(20)
    ) -> DeliveryEngine {
        var settings = DeliverySettings(GatewayConfig.embeddedDefault.delivery)
        settings.pageSize = pageSize
        settings.workers = workers
        settings.retryBase = retryBase
        settings.retryMax = 0.05
        settings.flushInterval = flushInterval
        settings.pollInterval = .milliseconds(20)
        var logger = Logger(label: "engine-test")
        logger.logLevel = .critical
        return DeliveryEngine(store: store, sender: sender, settings: settings, clock: SystemClock(), logger: logger)
    }

    func seed(_ count: Int, tag: String = "all-users", prefix: String = "cd") async throws {
        var batch: [DeviceRegistration] = []
        for n in 1...count {
            batch.append(
                DeviceRegistration(
                    token: DeviceToken(token(n, prefix: prefix))!, environment: .production, tags: [TagName(tag)!]))
        }
        _ = try await store.registerDevices(appID: appID, batch)
    }

    func job(_ audience: Audience) -> PushJob {
        PushJob(
            appID: appID, vendor: "native", audience: audience, notification: PushNotification(alert: .plain("hi")),
            options: PushOptions())
    }

    func waitUntilCompleted(_ engine: DeliveryEngine, _ id: Int64, timeout: Duration = .seconds(30)) async throws
        -> MessageStatus
    {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = try await engine.status(messageID: id), status.record.state == .completed,
                status.counts.queued == 0, status.counts.sending == 0
            {
                return status
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestTimeout(
            message:
                "message \(id) did not complete: \(String(describing: try await engine.status(messageID: id)?.counts))")
    }

    func cleanUp() {
        try? store.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

struct TestTimeout: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

@Suite(.serialized) struct DeliveryEngineTests {
    @Test func tagFanOutDeliversEveryDeviceOnce() async throws {
        let f = try await EngineFixture.make()
        defer { f.cleanUp() }
        try await f.seed(1050)
        let sender = ScriptedSender()
        let engine = f.engine(sender)
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("all-users")))
        #expect(record.state == .queued)
        let status = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        #expect(status.counts.delivered == 1050)
        #expect(status.counts.failed == 0)
        #expect(status.record.total == 1050)
        #expect(sender.totalAttempts == 1050)
        #expect(sender.attempts.withLock { $0.values.allSatisfy { $0 == 1 } })
        // Delivered-first-time entries leave no rows.
        let rows = try await f.store.deliveries(messageID: record.id, state: nil, cursor: nil, limit: 10)
        #expect(rows.items.isEmpty)
    }

    @Test func retriesInvalidationsHoldsAndFailuresAreRecorded() async throws {
        let f = try await EngineFixture.make()
        defer { f.cleanUp() }
        try await f.seed(40)
        let sender = ScriptedSender { token, attempt in
            let n = Int(token.suffix(4), radix: 16)!
            switch n % 5 {
            case 1: return attempt < 3 ? .retry(reason: "TooManyRequests", after: nil) : .delivered(apnsID: "a")
            case 2:
                return .invalidate(
                    reason: "Unregistered", since: Date(timeIntervalSince1970: 0).addingTimeInterval(4_000_000_000))
            case 3: return .failed(reason: "PayloadTooLarge")
            default: return .delivered(apnsID: nil)
            }
        }
        let engine = f.engine(sender)
        try await engine.start()
        let record = try await engine.submit(f.job(.all))
        let status = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        #expect(status.counts.delivered == 24)  // n%5 in {0,4} (16) + retried (8)
        #expect(status.counts.failed == 16)
        #expect(status.failures == ["Unregistered": 8, "PayloadTooLarge": 8])
        let retried = try await f.store.deliveries(messageID: record.id, state: .delivered, cursor: nil, limit: 100)
        #expect(retried.items.count == 8)
        #expect(retried.items.allSatisfy { $0.attempts == 3 })
        let invalidated = try await f.store.device(appID: f.appID, token: DeviceToken(token(2, prefix: "cd"))!)
        #expect(invalidated?.invalidatedAt != nil)
        #expect(invalidated?.invalidReason == "Unregistered")
    }

    @Test func pagesAreSentInBatchesOfOneEnvironmentAndAnsweredByIndex() async throws {
        let f = try await EngineFixture.make()
        defer { f.cleanUp() }
        try await f.seed(300)
        var sandbox: [DeviceRegistration] = []
        for n in 1...200 {
            sandbox.append(
                DeviceRegistration(
                    token: DeviceToken(token(n, prefix: "5a"))!, environment: .sandbox, tags: [TagName("all-users")!]))
        }
        _ = try await f.store.registerDevices(appID: f.appID, sandbox)
        let sender = BatchScriptedSender { token in
            token.hasPrefix("5a") && Int(token.suffix(4), radix: 16)! % 4 == 0
                ? .invalidate(reason: "Unregistered", since: nil) : .delivered(apnsID: nil)
        }
        let engine = f.engine(sender, pageSize: 100, workers: 64)
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("all-users")))
        let status = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        #expect(status.counts.delivered == 450)
        #expect(status.counts.failed == 50)
        #expect(status.failures == ["Unregistered": 50])
        let failed = try await f.store.deliveries(messageID: record.id, state: .failed, cursor: nil, limit: 100)
        #expect(failed.items.allSatisfy { $0.token.hasPrefix("5a") && Int($0.token.suffix(4), radix: 16)! % 4 == 0 })
        let batches = sender.batches.withLock { $0 }
        let sent = batches.flatMap(\.tokens)
        #expect(sent.count == 500 && Set(sent).count == 500, "each device handed over once")
        #expect(
            batches.allSatisfy { batch in
                batch.tokens.allSatisfy { $0.hasPrefix("5a") == (batch.environment == .sandbox) }
            })
        // Chunks, not devices: at least a quarter of the 64 permits per hand-over.
        #expect(batches.count <= 500 / 16, "\(batches.count) batches")
        #expect(sender.singles.load(ordering: .relaxed) == 0)
    }

    @Test func aRunStartsWithASmallPageSoTheFirstDevicesDoNotWaitForAWholeOne() async throws {
        for count in [250, MessageRun.firstPageSize] {
            let f = try await EngineFixture.make()
            defer { f.cleanUp() }
            try await f.seed(count)
            let sender = BatchScriptedSender { _ in .delivered(apnsID: nil) }
            let engine = f.engine(sender, pageSize: 1000, workers: 1000)
            try await engine.start()
            let record = try await engine.submit(f.job(.tag("all-users")))
            let status = try await f.waitUntilCompleted(engine, record.id)
            await engine.stop()
            #expect(status.counts.delivered == count)
            let batches = sender.batches.withLock { $0 }
            #expect(batches.first?.tokens.count == MessageRun.firstPageSize, "the first page, then full ones")
            let sent = batches.flatMap(\.tokens)
            #expect(sent.count == count && Set(sent).count == count, "each device handed over once")
        }
    }

    @Test func finishedPagesAreFlushedWithoutWaitingForTheFlushInterval() async throws {
        let f = try await EngineFixture.make()
        defer { f.cleanUp() }
        try await f.seed(300)
        // 30 pages through a window of 3: were pages flushed only every 30 s, this would take
        // minutes.
        let engine = f.engine(ScriptedSender(), pageSize: 10, flushInterval: .seconds(30))
        try await engine.start()
        let started = ContinuousClock.now
        let record = try await engine.submit(f.job(.tag("all-users")))
        let status = try await f.waitUntilCompleted(engine, record.id, timeout: .seconds(20))
        #expect(ContinuousClock.now - started < .seconds(20))
        await engine.stop()
        #expect(status.counts.delivered == 300)
        let stored = try #require(try await f.store.message(id: record.id))
        #expect(stored.state == .completed)
        #expect(stored.counts.delivered == 300)
    }

    @Test func reRegistrationAfterThe410TimestampWins() async throws {
        let f = try await EngineFixture.make()
        defer { f.cleanUp() }
        try await f.seed(2)
        // APNs says the token died long ago; the device registered since, so it stays valid.
        let sender = ScriptedSender { _, _ in
            .invalidate(reason: "Unregistered", since: Date(timeIntervalSince1970: 1_000_000))
        }
        let engine = f.engine(sender)
        try await engine.start()
        let record = try await engine.submit(f.job(.all))
        _ = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        let device = try await f.store.device(appID: f.appID, token: DeviceToken(token(1, prefix: "cd"))!)
        #expect(device?.invalidatedAt == nil)
    }

    @Test func heldDeliveriesAreKeptAndReleased() async throws {
        let f = try await EngineFixture.make()
        defer { f.cleanUp() }
        try await f.seed(10)
        let healthy = Atomic<Bool>(false)
        let sender = ScriptedSender { _, _ in
            healthy.load(ordering: .relaxed) ? .delivered(apnsID: nil) : .held(reason: "InvalidProviderToken")
        }
        let engine = f.engine(sender)
        try await engine.start()
        let record = try await engine.submit(f.job(.all))
        var status = try await f.waitUntilCompleted(engine, record.id)
        #expect(status.counts.held == 10)
        let held = try await f.store.deliveries(messageID: record.id, state: .held, cursor: nil, limit: 100)
        #expect(held.items.count == 10)
        #expect(held.items.allSatisfy { $0.reason == "InvalidProviderToken" })
        healthy.store(true, ordering: .relaxed)
        #expect(try await f.store.releaseHeldDeliveries(appID: f.appID, environment: .production, now: Date()) == 10)
        engine.wake()
        let deadline = ContinuousClock.now + .seconds(20)
        repeat {
            try await Task.sleep(for: .milliseconds(20))
            status = try #require(try await engine.status(messageID: record.id))
        } while status.counts.delivered < 10 && ContinuousClock.now < deadline
        await engine.stop()
        #expect(status.counts.delivered == 10)
        #expect(status.counts.held == 0)
    }

    @Test func anInterruptedMessageResumesWithoutLosingAnything() async throws {
        let f = try await EngineFixture.make()
        defer { f.cleanUp() }
        try await f.seed(2000)
        // First engine: slow sends, stopped mid-way (as a shutdown or crash would).
        let slow = ScriptedSender(delay: .milliseconds(5))
        let first = f.engine(slow, pageSize: 100, workers: 16)
        try await first.start()
        let record = try await first.submit(f.job(.tag("all-users")))
        try await Task.sleep(for: .milliseconds(300))
        await first.stop()
        let partial = try #require(try await f.store.message(id: record.id))
        #expect(partial.state == .sending)
        #expect(partial.counts.delivered < 2000)

        let fast = ScriptedSender()
        let second = f.engine(fast, pageSize: 100, workers: 16)
        try await second.start()
        let status = try await f.waitUntilCompleted(second, record.id)
        await second.stop()
        #expect(status.counts.delivered == 2000, "every device is accounted for exactly once")
        let firstRun = slow.attempts.withLock { $0 }
        let secondRun = fast.attempts.withLock { $0 }
        #expect(Set(firstRun.keys).union(secondRun.keys).count == 2000, "nothing lost")
        let duplicates = Set(firstRun.keys).intersection(secondRun.keys).count
        #expect(duplicates <= 3 * 100, "only the unflushed window is sent twice (got \(duplicates))")
    }

    @Test func scheduledMessagesWaitAndCanBeCancelled() async throws {
        let f = try await EngineFixture.make()
        defer { f.cleanUp() }
        try await f.seed(3)
        let sender = ScriptedSender()
        let engine = f.engine(sender)
        try await engine.start()
        var later = f.job(.all)
        later.sendAt = Date().addingTimeInterval(3600)
        let scheduled = try await engine.submit(later)
        #expect(scheduled.state == .scheduled)
        var soon = f.job(.all)
        soon.sendAt = Date().addingTimeInterval(0.3)
        let due = try await engine.submit(soon)
        _ = try await f.waitUntilCompleted(engine, due.id)
        #expect(try await engine.cancel(messageID: scheduled.id))
        #expect(try await engine.cancel(messageID: due.id) == false)
        try await Task.sleep(for: .milliseconds(100))
        await engine.stop()
        #expect(try await f.store.message(id: scheduled.id)?.state == .cancelled)
        #expect(sender.totalAttempts == 3)
    }

    @Test func payloadTooLargeIsRefusedBeforeAnythingIsStored() async throws {
        let f = try await EngineFixture.make()
        defer { f.cleanUp() }
        let engine = f.engine(ScriptedSender())
        var job = f.job(.all)
        job.notification.custom["blob"] = .string(String(repeating: "x", count: 5000))
        await #expect(throws: PayloadError.self) { try await engine.submit(job) }
        #expect(try await f.store.messages(appID: f.appID, limit: 10).isEmpty)
    }
}
