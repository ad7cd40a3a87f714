import Foundation
import Logging
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongDelivery
@testable import TuisongPostgresStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// How many deliveries the database going away, and a node dying meanwhile, can make the
/// gateway send twice (issue #40 item 4): outcomes are recorded as they come, in small flushes;
/// a flush that fails is retried until the database is back (the run sends nothing more
/// meanwhile), so a crash repeats what was in flight and at most a flush window or two.
@Suite(.serialized) struct FlushWindowTests {
    static let devices = 6_000
    /// Pages larger than a flush window, so that one page's uncommitted outcomes (what a crash
    /// repeated before, issue #40 item 4) and a flush window's are told apart.
    static let pageSize = 2_000
    static let workers = 32

    @Test(arguments: PluginStoreBackend.allCases)
    func aNodeDyingWhileTheDatabaseIsAwayRepeatsOnlyWhatWasInFlight(_ backend: PluginStoreBackend) async throws {
        let setup = try await OutageSetup.make(backend, devices: Self.devices)
        defer { setup.cleanUp() }
        let away = OutageStore(setup.store)
        let first = ScriptedTransport(answering: .after(.milliseconds(2)))
        let dying = setup.engine(away, first)
        try await dying.start()
        let record = try await dying.submit(setup.job)
        try await waitUntil("the first 1,500 sends", within: .seconds(30)) { first.totalAttempts >= 1_500 }
        // The database goes away; the node retries its flush a few times, then dies (nothing it
        // does reaches the database any more; `stop` lets what is in flight land, as a kill
        // would not, and what lands is not recorded either way).
        away.isAway.store(true, ordering: .releasing)
        try await waitUntil("three failed flush attempts", within: .seconds(30)) {
            away.failedFlushes.load(ordering: .acquiring) >= 3
        }
        await dying.stop()

        let second = ScriptedTransport()
        let survivor = setup.engine(setup.store, second)
        try await survivor.start()
        let status = try await DeliveryWait.completed(survivor, record.id, timeout: .seconds(60))
        await survivor.stop()

        #expect(status.counts.delivered == Self.devices, "every device counted once")
        let firstTokens = Set(first.attempts.withLock { $0.keys })
        let secondTokens = Set(second.attempts.withLock { $0.keys })
        #expect(firstTokens.union(secondTokens).count == Self.devices, "nothing lost")
        let repeated = firstTokens.intersection(secondTokens).count
        // In flight when the flush failed, plus what may wait for a commit (the failing flush and
        // what finished behind it).
        let settings = setup.settings
        let bound = Self.workers + settings.flushBacklog + settings.flushOutcomes
        print(
            "flush-window: \(backend): sent \(firstTokens.count) before dying, \(repeated) sent again (bound \(bound))")
        #expect(repeated <= bound, "sent again: \(repeated), more than \(bound)")
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func aFlushFailingWhileTheDatabaseIsAwayIsRetriedAndNothingIsSentTwice(_ backend: PluginStoreBackend)
        async throws
    {
        let setup = try await OutageSetup.make(backend, devices: Self.devices)
        defer { setup.cleanUp() }
        let away = OutageStore(setup.store)
        let transport = ScriptedTransport(answering: .after(.milliseconds(2)))
        let engine = setup.engine(away, transport)
        try await engine.start()
        let record = try await engine.submit(setup.job)
        try await waitUntil("the first 1,500 sends", within: .seconds(30)) { transport.totalAttempts >= 1_500 }
        away.isAway.store(true, ordering: .releasing)
        try await waitUntil("three failed flush attempts", within: .seconds(30)) {
            away.failedFlushes.load(ordering: .acquiring) >= 3
        }
        // Away past the slice's lease: nobody else claimed it, so the flush still lands.
        try await setup.waitUntilLeasesEnded(record.id)
        away.isAway.store(false, ordering: .releasing)
        let status = try await DeliveryWait.completed(engine, record.id, timeout: .seconds(60))
        await engine.stop()

        #expect(status.counts.delivered == Self.devices)
        let attempts = transport.attempts.withLock { $0 }
        #expect(attempts.count == Self.devices, "nothing lost")
        let repeated = attempts.values.reduce(0) { $0 + $1 - 1 }
        print("flush-window: \(backend): outage past the lease, \(repeated) sent again")
        #expect(repeated == 0, "sent again: \(repeated)")
    }
}

/// A store (SQLite, or PostgreSQL with a 2 s lease so that a dead node's slice is taken over
/// within the test) with one app and `devices` tagged devices.
struct OutageSetup {
    static let lease: Duration = .seconds(2)

    let store: any GatewayStore
    let appID: Int64
    let directory: URL
    let database: TestDatabase?

    static func make(_ backend: PluginStoreBackend, devices: Int) async throws -> OutageSetup {
        // Bare hex tokens parse once APNs is declared; alone, this suite runs before anything else does.
        StandardChannels.declare()
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-outage-\(UUID().uuidString)")
        let store: any GatewayStore
        var database: TestDatabase?
        switch backend {
        case .sqlite:
            store = try SQLiteStore(path: directory.appending(path: "t.db").path)
        case .postgresql:
            let created = try TestDatabase(template: migratedTemplate())
            database = created
            store = try PostgresStore(url: created.url, configuration: .init(poolSize: 4, leaseDuration: lease))
        }
        let app = try await store.createApp(name: "o", bundleID: "com.example.outage", apiKeyHash: UUID().uuidString)
        var batch: [DeviceRegistration] = []
        for n in 1...devices {
            batch.append(
                DeviceRegistration(
                    token: DeviceToken(testToken(n))!, environment: .production, tags: [TagName("all")!],
                    channel: .apns))
        }
        _ = try await store.registerDevices(appID: app.id, batch)
        return OutageSetup(store: store, appID: app.id, directory: directory, database: database)
    }

    var job: PushJob {
        PushJob(
            appID: appID, vendor: "native", audience: .tag("all"), content: PushContent(body: "hi"),
            options: PushOptions())
    }

    var settings: DeliverySettings {
        var settings = EngineFixture.settings(
            pageSize: FlushWindowTests.pageSize, workers: FlushWindowTests.workers)
        // As the gateway derives them from the lease (DeliveryConfig).
        settings.leaseRenewInterval = Self.lease / 3
        settings.leaseMargin = Self.lease / 6
        return settings
    }

    func engine(_ backend: any DeliveryEngine.Backend, _ transport: any PushTransport) -> DeliveryEngine {
        var logger = Logger(label: "flush-window-test")
        logger.logLevel = .critical
        return DeliveryEngine(
            store: backend, transport: transport, settings: settings, clock: SystemClock(), logger: logger)
    }

    /// On PostgreSQL, until no slice of the message has a running lease (by the database's
    /// clock); SQLite has no leases.
    func waitUntilLeasesEnded(_ messageID: Int64) async throws {
        guard let database else { return }
        let connection = try PostgresConnection(url: database.url)
        try await waitUntil("the slices' leases ended", within: .seconds(30), every: .milliseconds(50)) {
            let running = try connection.execute(
                """
                SELECT count(*) AS n FROM message_slices WHERE message_id = \(messageID) AND state = 'open'
                    AND lease_until > \(PostgresStore.databaseNow)
                """
            ).rows.first?["n"]?.int64
            return running == 0
        }
    }

    func cleanUp() {
        try? store.close()
        try? FileManager.default.removeItem(at: directory)
        database?.drop()
    }
}

/// The engine's store, through which the database can go away: while `isAway`, every call fails
/// as an unreachable database does. Counts the flushes that failed so.
final class OutageStore: DeliveryEngine.Backend {
    let base: any GatewayStore
    let isAway = Atomic<Bool>(false)
    let failedFlushes = Atomic<Int>(0)
    /// The pace the engine is told instead of the base store's (`WorkQueue.claimPace`).
    let pace = Mutex<Duration?>(nil)
    /// When each claim began, and how much it claimed.
    let claims = Mutex<[(began: ContinuousClock.Instant, claimed: Int)]>([])

    init(_ base: any GatewayStore) { self.base = base }

    private func reachable() throws {
        if isAway.load(ordering: .acquiring) {
            throw StoreError(.unavailable, "the database is away (test)", unavailability: .databaseDown)
        }
    }

    private func flushReachable() throws {
        if isAway.load(ordering: .acquiring) {
            failedFlushes.add(1, ordering: .acquiringAndReleasing)
            throw StoreError(.unavailable, "the database is away (test)", unavailability: .databaseDown)
        }
    }

    // MARK: AppStore

    func createApp(name: String, bundleID: String, apiKeyHash: String) async throws -> App {
        try reachable()
        return try await base.createApp(name: name, bundleID: bundleID, apiKeyHash: apiKeyHash)
    }
    func app(id: Int64) async throws -> App? {
        try reachable()
        return try await base.app(id: id)
    }
    func app(apiKeyHash: String) async throws -> App? {
        try reachable()
        return try await base.app(apiKeyHash: apiKeyHash)
    }
    func apps() async throws -> [App] {
        try reachable()
        return try await base.apps()
    }
    func app(vendor: String, setting: String, value: String) async throws -> App? {
        try reachable()
        return try await base.app(vendor: vendor, setting: setting, value: value)
    }
    func updateApp(_ app: App) async throws {
        try reachable()
        try await base.updateApp(app)
    }
    func deleteApp(id: Int64) async throws -> Bool {
        try reachable()
        return try await base.deleteApp(id: id)
    }

    // MARK: WorkQueue

    func backlog(appID: Int64, upTo limit: Int) async throws -> Int {
        try reachable()
        return try await base.backlog(appID: appID, upTo: limit)
    }
    func claimWork(now: Date, limit: Int, sliceLimit: Int, running: Set<MessageSliceKey>) async throws
        -> [WorkClaim]
    {
        let began = ContinuousClock.now
        try reachable()
        let claimed = try await base.claimWork(now: now, limit: limit, sliceLimit: sliceLimit, running: running)
        claims.withLock { $0.append((began, claimed.count)) }
        return claimed
    }
    var claimPace: Duration { pace.withLock { $0 } ?? base.claimPace }
    func renewLeases(_ slices: [MessageSliceKey: Int64], now: Date) async throws -> (
        held: Set<MessageSliceKey>, until: Date?
    ) {
        try reachable()
        return try await base.renewLeases(slices, now: now)
    }
    func releaseSlice(_ key: MessageSliceKey, fence: Int64) async throws {
        try reachable()
        try await base.releaseSlice(key, fence: fence)
    }
    /// Passed on even while the database is away (the base store gives back what it can).
    func dispatcherStopped() async {
        await base.dispatcherStopped()
    }
    func liveNodeCount() async throws -> Int {
        try reachable()
        return try await base.liveNodeCount()
    }

    // MARK: MessageStore

    func createMessage(_ job: PushJob, state: MessageState) async throws -> MessageRecord {
        try reachable()
        return try await base.createMessage(job, state: state)
    }
    func forgetIdempotencyKeys(before: Date, limit: Int) async throws -> Int {
        try reachable()
        return try await base.forgetIdempotencyKeys(before: before, limit: limit)
    }
    func message(appID: Int64, idempotencyKey: String) async throws -> MessageRecord? {
        try reachable()
        return try await base.message(appID: appID, idempotencyKey: idempotencyKey)
    }
    func message(id: Int64) async throws -> MessageRecord? {
        try reachable()
        return try await base.message(id: id)
    }
    func messageProgress(id: Int64) async throws -> MessageProgressSnapshot? {
        try reachable()
        return try await base.messageProgress(id: id)
    }
    func channelCounts(messageID: Int64) async throws -> [PushChannel: DeliveryCounts] {
        try reachable()
        return try await base.channelCounts(messageID: messageID)
    }
    func message(appID: Int64, vendorMessageID: String) async throws -> MessageRecord? {
        try reachable()
        return try await base.message(appID: appID, vendorMessageID: vendorMessageID)
    }
    func messages(appID: Int64?, limit: Int) async throws -> [MessageRecord] {
        try reachable()
        return try await base.messages(appID: appID, limit: limit)
    }
    func dispatchableMessageIDs(now: Date) async throws -> [Int64] {
        try reachable()
        return try await base.dispatchableMessageIDs(now: now)
    }
    func startMessage(id: Int64, total: Int?, at: Date) async throws -> Bool {
        try reachable()
        return try await base.startMessage(id: id, total: total, at: at)
    }
    func setExpectedTotal(id: Int64, total: Int) async throws {
        try reachable()
        try await base.setExpectedTotal(id: id, total: total)
    }
    func setMessageState(id: Int64, _ state: MessageState, at: Date) async throws {
        try reachable()
        try await base.setMessageState(id: id, state, at: at)
    }
    func cancelScheduledMessage(id: Int64, at: Date) async throws -> Bool {
        try reachable()
        return try await base.cancelScheduledMessage(id: id, at: at)
    }
    func recordProgress(_ progress: MessageProgress, at: Date) async throws {
        try flushReachable()
        try await base.recordProgress(progress, at: at)
    }
    func recordProgress(_ batch: [MessageProgress], at: Date) async throws -> [(any Error)?] {
        try flushReachable()
        return try await base.recordProgress(batch, at: at)
    }
    func forgetFinishedBadgeGrants() async throws -> Int {
        try reachable()
        return try await base.forgetFinishedBadgeGrants()
    }
    func forgetBadgeGrants(ofMessages messages: [Int64]) async throws -> Int {
        try reachable()
        return try await base.forgetBadgeGrants(ofMessages: messages)
    }
    func audiencePage(
        appID: Int64, audience: Audience, environment: PushEnvironment?, after cursor: Int64, limit: Int,
        withRecipientDetails: Bool
    ) async throws -> [AudienceEntry] {
        try reachable()
        return try await base.audiencePage(
            appID: appID, audience: audience, environment: environment, after: cursor, limit: limit,
            withRecipientDetails: withRecipientDetails)
    }
    func audiencePages(_ requests: [AudiencePageRequest]) async throws -> [[AudienceEntry]] {
        try reachable()
        return try await base.audiencePages(requests)
    }
    func audienceCount(appID: Int64, audience: Audience, environment: PushEnvironment?, upTo limit: Int?)
        async throws -> Int
    {
        try reachable()
        return try await base.audienceCount(appID: appID, audience: audience, environment: environment, upTo: limit)
    }
    func claimDueDeliveries(now: Date, limit: Int) async throws -> [DeliveryRecord] {
        try reachable()
        return try await base.claimDueDeliveries(now: now, limit: limit)
    }
    func requeueInterruptedDeliveries() async throws -> Int {
        try reachable()
        return try await base.requeueInterruptedDeliveries()
    }
    func applyDeliveryUpdates(_ updates: [DeliveryUpdate], at: Date) async throws {
        try reachable()
        try await base.applyDeliveryUpdates(updates, at: at)
    }
    func releaseHeldDeliveries(appID: Int64, environment: PushEnvironment, now: Date) async throws -> Int {
        try reachable()
        return try await base.releaseHeldDeliveries(appID: appID, environment: environment, now: now)
    }
    func releaseHeldDeliveries(appID: Int64, channel: PushChannel, now: Date) async throws -> Int {
        try reachable()
        return try await base.releaseHeldDeliveries(appID: appID, channel: channel, now: now)
    }
    func expireHeldDeliveries(now: Date, limit: Int) async throws -> Int {
        try reachable()
        return try await base.expireHeldDeliveries(now: now, limit: limit)
    }
    func pendingDeliveries(messageID: Int64) async throws -> [PendingDeliveries] {
        try reachable()
        return try await base.pendingDeliveries(messageID: messageID)
    }
    func releaseHeldDeliveries(appID: Int64, selector: String, now: Date) async throws -> Int {
        try reachable()
        return try await base.releaseHeldDeliveries(appID: appID, selector: selector, now: now)
    }
    func deliveries(messageID: Int64, state: DeliveryState?, cursor: String?, limit: Int) async throws
        -> Page<DeliveryRecord>
    {
        try reachable()
        return try await base.deliveries(messageID: messageID, state: state, cursor: cursor, limit: limit)
    }
}
