import Foundation
import Logging
import Synchronization
import TuisongCore

/// How the engine paces a message (`delivery.*` of the config, plus what tests tune).
public struct DeliverySettings: Sendable {
    /// Pushes in flight at once, across messages and retries.
    public var workers: Int
    public var pageSize: Int
    public var maxAttempts: Int
    public var retryBase: TimeInterval
    public var retryMax: TimeInterval
    /// Retry window for messages without an explicit expiration.
    public var defaultExpiration: TimeInterval = 24 * 3600
    /// A run commits its outcomes whenever `flushOutcomes` consecutive ones are in, or every
    /// `flushInterval`, whichever comes first (a commit gathers whatever finished while the one
    /// before it was committed).
    public var flushInterval: Duration = .milliseconds(50)
    /// Outcomes per flush segment: audience entries whose outcomes are committed together, so
    /// a crash repeats what was in flight plus about this many per run (issue #40 item 4).
    public var flushOutcomes = 256
    /// Finished outcomes of a run waiting for a commit (the flush being committed and the
    /// finished segments behind it) past which it launches no more sends until a commit lands:
    /// bounds what a crash repeats when commits are slow. Also, no send is launched while a
    /// flush fails (the database is away).
    public var flushBacklog = 512
    /// The longest wait between two attempts of a flush that failed: it is retried until the
    /// database takes it, so it lands soon after the database is back.
    public var flushRetryMax: Duration = .seconds(1)
    public var pollInterval: Duration = .milliseconds(250)
    /// Messages (or slices) claimed from the store in one round trip. How many are sending at
    /// once is bounded by `workers` alone: a message in flight holds at least one push.
    public var claimBatch = 256
    /// Flushes (of any messages) committed in one transaction, at most.
    public var flushBatch = 512
    /// Fresh slices of fan-outs cut into several (PostgreSQL) a node sends at once: a slice
    /// can use every push in flight by itself, so a node holding more would only keep them from
    /// the other nodes. Messages sent whole (every small one) are not counted here.
    public var slicesPerNode = 4
    /// Audience pages read and not flushed, at most; bounds memory, and what a crash can repeat
    /// when an early push's answer is late (the outcomes after it cannot be committed before it).
    public var windowPages = 3
    /// How often the leases of the slices this node sends are renewed (and its heartbeat
    /// written): a third of the store's lease, so two renewals may fail before one ends.
    public var leaseRenewInterval: Duration = .seconds(10)
    /// A slice stops launching sends this long before its lease ends unless it was renewed:
    /// what is in flight then lands before another node may take the slice over.
    public var leaseMargin: Duration = .seconds(2)
    /// An app's backlog (messages queued or sending) at which its pushes are refused
    /// (`PushGateway.admit`, `delivery.max_backlog_per_app`); 0: no bound.
    public var maxBacklogPerApp = 0
    /// How long an app's counted backlog is trusted (with this node's accepts added) before it
    /// is read again.
    public var backlogRecount: Duration = .seconds(1)
    /// How soon a renewal that failed is tried again.
    public var leaseRetry: Duration = .milliseconds(500)
    /// The channels whose accepted requests are kept by the service's request id
    /// (`MessageProgress.serviceRequests`): those whose receipts may name a request instead of
    /// Tuisong's tag. Empty: none kept.
    public var serviceRequestChannels: Set<PushChannel> = []

    public init(workers: Int, pageSize: Int, maxAttempts: Int, retryBase: TimeInterval, retryMax: TimeInterval) {
        self.workers = workers
        self.pageSize = pageSize
        self.maxAttempts = maxAttempts
        self.retryBase = retryBase
        self.retryMax = retryMax
    }
}

/// What the engine tells whoever counts (the gateway's metrics). Sent outcomes are not
/// here: a counting `PushTransport` wrapped around the real one sees those.
public protocol DeliveryObserver: Sendable {
    /// A message was committed by `submit`.
    func accepted(vendor: String)
    /// Audience devices were not sent to, by reason.
    func skipped(_ reasons: [String: UInt64])
}

/// Counts nothing.
public struct NoDeliveryObserver: DeliveryObserver {
    public init() {}
    public func accepted(vendor: String) {}
    public func skipped(_ reasons: [String: UInt64]) {}
}

/// Durable delivery: `submit` commits a message before it returns; a dispatcher expands
/// audiences page by page and sends through a bounded pool of in-flight pushes; failed,
/// retried and held deliveries get rows; everything survives a crash (at-least-once).
public final class DeliveryEngine: PushGateway {
    public typealias Backend = MessageStore & AppStore & WorkQueue

    public let store: any Backend
    let transport: any PushTransport
    let settings: DeliverySettings
    let clock: any Clock
    let logger: Logger
    let permits: AsyncSemaphore
    /// Messages sending now, by id.
    let runs = RunningMessages()
    private let statusReader: MessageStatusReader
    /// Every run's flushes go through here: those that come while a transaction is being
    /// committed are committed together in the next (group commit).
    let progressCommits: StoreBatcher<MessageProgress, Void>
    /// Audience pages of every run: pages asked for while a read is at the store are read
    /// together in the next (the first pages of many small messages in one snapshot).
    let pageReads: StoreBatcher<AudiencePageRequest, [AudienceEntry]>
    /// Pages to decide, of every run: pages ready while a policy is deciding others go to it
    /// together next (`DeliveryPolicy.decide(pages:)`: many chat messages' badges granted in
    /// one store call, not one each). A batch weighs at most a page's worth of recipients, so
    /// a large message's page goes alone, as before.
    let policyDecisions: StoreBatcher<PolicyDecisionRequest, [DeliveryDecision]>
    private let badgeGrants: BadgeGrantJanitor
    /// When each app's connections were last asked to open by `submit`.
    let preparations = PreparationTimes()
    private let wakeSignal = WakeSignal()
    /// Ends the retry worker's wait between polls (`idle()` asks it for a pass at once).
    let retryWake = WakeSignal()
    /// The dispatcher found as many runs as `workers` allows and waits for one to end.
    private let waitingForRoom = Atomic<Bool>(false)
    /// Ends the lease loop's wait at once when the engine stops.
    private let leaseWake = WakeSignal()
    private let loops = Mutex<[Task<Void, Never>]>([])
    private let stopping = Atomic<Bool>(false)
    /// The dispatcher's and the retry worker's passes, for `idle()`.
    let passes = LoopPasses()
    /// Apps by id; every writer of an app calls `apps.changed(id:)`.
    public let apps: AppCache
    /// Delivery policies by vendor (provider name), from the mounted providers.
    private let policies = Mutex<[String: any DeliveryPolicy]>([:])
    /// Told of committed holds (`setHoldWatcher`).
    let holdWatcher = Mutex<(any HoldWatcher)?>(nil)
    let observer: any DeliveryObserver
    /// Refuses an app's pushes while its backlog is at `settings.maxBacklogPerApp`.
    let admission: BacklogAdmission

    public init(
        store: any Backend, transport: any PushTransport, settings: DeliverySettings, clock: any Clock, logger: Logger,
        apps: AppCache? = nil, observer: any DeliveryObserver = NoDeliveryObserver()
    ) {
        self.observer = observer
        self.store = store
        self.transport = transport
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.permits = AsyncSemaphore(permits: settings.workers)
        self.apps = apps ?? AppCache(store: store, clock: clock)
        self.statusReader = MessageStatusReader(store: store, runs: runs)
        let clock = clock
        self.progressCommits = StoreBatcher(concurrency: 1, maxBatch: settings.flushBatch) { batch in
            let errors = try await store.recordProgress(batch, at: clock.now)
            return errors.map { error in error.map { .failure($0) } ?? .success(()) }
        }
        self.pageReads = StoreBatcher(concurrency: 2, maxBatch: settings.claimBatch) { requests in
            try await store.audiencePages(requests).map { .success($0) }
        }
        self.policyDecisions = StoreBatcher(
            concurrency: 2, maxBatch: settings.claimBatch, maxWeight: settings.pageSize,
            weight: { $0.page.recipients.count }
        ) { requests in await PolicyDecisionRequest.decide(requests) }
        self.badgeGrants = BadgeGrantJanitor(logger: logger, clock: clock) { scope in
            switch scope {
            case .everyMessage: try await store.forgetFinishedBadgeGrants()
            case .messages(let messages): try await store.forgetBadgeGrants(ofMessages: messages)
            }
        }
        self.admission = BacklogAdmission(
            bound: settings.maxBacklogPerApp, recount: settings.backlogRecount, store: store)
    }

    /// Sets the per-recipient policies (vendor name → policy). Messages of other vendors take
    /// the one-payload path.
    public func setPolicies(_ policies: [String: any DeliveryPolicy]) {
        self.policies.withLock { $0 = policies }
    }

    func policy(forVendor vendor: String) -> (any DeliveryPolicy)? {
        policies.withLock { $0[vendor] }
    }

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Recovers what a crash left and starts the dispatch and retry loops.
    public func start() async throws {
        let requeued = try await store.requeueInterruptedDeliveries()
        if requeued > 0 {
            logger.notice("requeued deliveries interrupted by the last stop", metadata: ["deliveries": "\(requeued)"])
        }
        let dispatch = Task { await self.dispatchLoop() }
        let retry = Task { await RetryWorker(engine: self).run() }
        let leases = Task { await self.leaseLoop() }
        loops.withLock { $0 = [dispatch, retry, leases] }
        // What a crash left between a policy's message finishing and its clean-up.
        badgeGrants.forgetFinished(nil, unlessStopping: { self.isStopping })
    }

    /// A message with a policy finished sending: its badge grants can go.
    func messageWithPolicyFinished(_ messageID: Int64) {
        badgeGrants.forgetFinished(messageID, unlessStopping: { self.isStopping })
    }

    /// Stops launching sends, lets in-flight ones finish and flushes what finished. What was
    /// not flushed is sent again after the next start.
    public func stop() async {
        stopping.store(true, ordering: .releasing)
        wakeSignal.signal()
        retryWake.signal()
        leaseWake.signal()
        let tasks = loops.withLock { $0 }
        for task in tasks { await task.value }
        passes.stopped()
        await badgeGrants.finished()
        for run in runs.all() { await run.finished() }
    }

    /// Returns once the engine has nothing left to do at its clock's `now`: no run is sending,
    /// and the dispatcher and the retry worker have each finished a pass begun after the last
    /// run ended, none of which found work. A test waits for this, with a manual clock, to say
    /// that something did not happen (a cancelled message, or one not due yet, was not sent)
    /// instead of sleeping — as NIO's embedded event loop runs until nothing is left. Returns
    /// at once when the engine is not running.
    public func idle() async {
        while !isStopping, !loops.withLock({ $0.isEmpty }) {
            let before = passes.counts
            for run in runs.all() { await run.finished() }
            // A pass under way now may have looked before the last run ended: the one after it.
            // Each loop is woken for each of the two passes, so neither waits for its poll (nor
            // for a manual clock to move).
            var seen = passes.counts
            for _ in 0..<2 {
                wakeSignal.signal()
                retryWake.signal()
                let reached = seen
                await passes.wait { $0.dispatch > reached.dispatch && $0.retry > reached.retry }
                seen = passes.counts
            }
            let end = passes.counts
            if end.stopped || (end.busy == before.busy && runs.count == 0) { return }
        }
    }

    /// Throws `BacklogFull` while the app's backlog is at `settings.maxBacklogPerApp`.
    public func admit(appID: Int64) async throws {
        try await admission.admit(appID: appID)
    }

    /// What `submit` would refuse of the content: what a service could not carry.
    public func check(_ content: PushContent, options: PushOptions) throws {
        try transport.check(content, options: options)
    }

    /// Validates, renders and commits the message; it is durable when this returns.
    public func submit(_ job: PushJob) async throws -> MessageRecord {
        // Refused before anything is stored: content a service could not carry (the transports
        // check their own limits again when they render it).
        try check(job.content, options: job.options)
        let state: MessageState = (job.sendAt.map { $0 > clock.now } ?? false) ? .scheduled : .queued
        let record = try await store.createMessage(job, state: state)
        observer.accepted(vendor: job.vendor)
        if state == .queued {
            admission.accepted(appID: job.appID)
            wakeSignal.signal()
            // The first push after a start would otherwise wait for the transports' connections
            // (TLS, HTTP/2 settings): they open while the dispatcher starts the message.
            guard preparations.due(appID: job.appID, environment: job.options.environment) else { return record }
            let transport = transport
            let apps = apps
            let environment = job.options.environment
            Task {
                guard let app = try? await apps.app(id: job.appID) else { return }
                await transport.prepare(app: app, environment: environment)
            }
        }
        return record
    }

    /// Wakes the dispatcher (a scheduled message came due, a held delivery was released).
    public func wake() { wakeSignal.signal() }

    /// Messages (or slices of one) this node is sending now.
    public var sendingMessages: Int { runs.count }

    public func cancel(messageID: Int64) async throws -> Bool {
        try await store.cancelScheduledMessage(id: messageID, at: clock.now)
    }

    /// A message's status with what its run has not committed yet (see `MessageStatusReader`).
    public func status(messageID: Int64) async throws -> MessageStatus? {
        try await statusReader.status(messageID: messageID)
    }

    func app(id: Int64) async throws -> App? {
        try await apps.app(id: id)
    }

    /// When a retryable failure should be tried again, or nil when it should not.
    func nextAttempt(after attempts: Int, message: MessageRecord, hint: Duration?) -> Date? {
        guard attempts < settings.maxAttempts else { return nil }
        let exponential = min(settings.retryMax, settings.retryBase * pow(2, Double(attempts - 1)))
        // Full jitter halves synchronized retry storms against a recovering service.
        var delay = exponential / 2 + Double.random(in: 0...(exponential / 2))
        if let hint {
            let seconds = Double(hint.components.seconds) + Double(hint.components.attoseconds) / 1e18
            delay = max(delay, seconds)
        }
        let next = clock.now.addingTimeInterval(delay)
        return next <= expiry(of: message) ? next : nil
    }

    /// When the message's deliveries stop being tried: its expiration, else the default window.
    /// A held delivery waits until then (stored as its `next_attempt_at`) and then fails.
    func expiry(of message: MessageRecord) -> Date {
        message.options.expiration ?? message.createdAt.addingTimeInterval(settings.defaultExpiration)
    }

    // MARK: dispatch loop

    /// Claims work in batches and starts a run for each claim. How many runs there are is
    /// bounded by the pushes in flight (`workers`: each run that sends holds at least one), so a
    /// thousand one-device messages are sent side by side, while a million-device push is one
    /// run that takes whatever permits are free; the permits are handed out in arrival order,
    /// so neither starves the other.
    private func dispatchLoop() async {
        // Claimed but not started yet (an app could not be read): started before claiming more.
        // A claim marks the message sending, so nobody else would start it.
        var unstarted: [WorkClaim] = []
        while !isStopping {
            let free = min(settings.claimBatch, settings.workers - runs.count)
            if free <= 0 {
                // Announced before looking again, so a run ending in between is not missed.
                waitingForRoom.store(true, ordering: .releasing)
                if runs.count >= settings.workers {
                    await wakeSignal.wait(until: clock.now + settings.pollInterval.timeInterval, on: clock)
                }
                waitingForRoom.store(false, ordering: .releasing)
                continue
            }
            var claimedFullBatch = false
            // Whether this pass found work (for `idle()`).
            var busy = !unstarted.isEmpty
            // The moment this pass looked for due work; the next look is due a poll after it.
            let lookedAt = clock.now
            let passStarted = ContinuousClock.now
            do {
                if unstarted.isEmpty {
                    let running = runs.claimView()
                    unstarted = try await store.claimWork(
                        now: lookedAt, limit: free,
                        sliceLimit: min(free, max(0, settings.slicesPerNode - running.sliceRuns)),
                        running: running.keys)
                    claimedFullBatch = unstarted.count { $0.slice.isWholeMessage } == free
                    busy = !unstarted.isEmpty
                }
                while let claim = unstarted.first, !isStopping {
                    let app = try await app(id: claim.record.appID)
                    unstarted.removeFirst()
                    guard let app else {
                        try await store.setMessageState(id: claim.record.id, .cancelled, at: clock.now)
                        continue
                    }
                    start(MessageRun(engine: self, record: claim.record, app: app, slice: claim.slice))
                }
            } catch {
                busy = true
                logger.error("dispatcher failed; trying again", metadata: ["error": "\(error)"])
            }
            passes.completed(.dispatch, busy: busy)
            // More may be waiting behind a full batch: claim again at once.
            if claimedFullBatch && unstarted.isEmpty { continue }
            // Paced while claims find work (`WorkQueue.claimPace`), on real time: the pace is
            // for the database's work, which a test's clock does not stand for.
            let pace = store.claimPace
            if busy, pace > .zero, !isStopping {
                try? await Task.sleep(until: passStarted + pace, clock: .continuous)
            }
            await wakeSignal.wait(until: lookedAt + settings.pollInterval.timeInterval, on: clock)
        }
        // Stopping: slices claimed under a lease and never started go back at once (SQLite's
        // claimed messages stay sending and are claimed again by the next dispatcher).
        for claim in unstarted where claim.slice.leaseUntil != nil {
            try? await store.releaseSlice(
                MessageSliceKey(messageID: claim.record.id, slice: claim.slice.id), fence: claim.slice.fence)
        }
        await store.dispatcherStopped()
    }

    private func start(_ run: MessageRun) {
        guard runs.insert(run) else { return }
        Task {
            await run.execute()
            self.runs.remove(run.key)
            // Only a dispatcher held back by the bound needs to hear of it; waking it for every
            // finished chat message would cost a claim each.
            if self.waitingForRoom.load(ordering: .acquiring) { self.wakeSignal.signal() }
        }
    }

    /// Renews the leases of the slices this node sends, and its heartbeat, every
    /// `leaseRenewInterval`. A slice the store no longer lets this node hold stops sending; when
    /// renewing fails, each run stops launching sends `leaseMargin` before its lease ends.
    private func leaseLoop() async {
        while !isStopping {
            let running = runs.all()
            var fences: [MessageSliceKey: Int64] = [:]
            for run in running where run.slice.leaseUntil != nil { fences[run.key] = run.slice.fence }
            var renewedAll = true
            let renewedAt = clock.now
            do {
                let renewed = try await store.renewLeases(fences, now: renewedAt)
                for run in running where run.slice.leaseUntil != nil {
                    if renewed.held.contains(run.key) {
                        if let until = renewed.until { run.extendLease(until: until) }
                    } else {
                        run.loseLease()
                    }
                }
            } catch {
                renewedAll = false
                logger.warning("renewing leases failed", metadata: ["error": "\(error)"])
            }
            // After a failure, tried again soon: the leases are taken up again as soon as the
            // database is back (even past their end, if no other node claimed the slices since),
            // before the runs stop sending or another node takes their slices.
            let pause = renewedAll ? settings.leaseRenewInterval : min(settings.leaseRenewInterval, settings.leaseRetry)
            await leaseWake.wait(until: renewedAt + pause.timeInterval, on: clock)
        }
    }
}

/// The slices this node sends now: at most one run per slice.
final class RunningMessages: Sendable {
    private struct State {
        var runs: [MessageSliceKey: MessageRun] = [:]
        /// `runs`' keys, kept as runs come and go: each claim pass hands the store the keys of
        /// every run (hundreds at chat rate), and building the set per pass — every key hashed,
        /// every run copied out first — was ~2 % of the CPU of a SQLite chat line (perf).
        var keys: Set<MessageSliceKey> = []
        /// Runs of a part of a message (PostgreSQL's slices), bounded per node.
        var sliceRuns = 0
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.runs.count } }

    /// What a claim needs of the runs: their keys (a copy of the kept set, shared until either
    /// changes) and how many send a slice.
    func claimView() -> (keys: Set<MessageSliceKey>, sliceRuns: Int) {
        state.withLock { ($0.keys, $0.sliceRuns) }
    }

    /// Registers `run`; false when its slice already has one.
    func insert(_ run: MessageRun) -> Bool {
        state.withLock { state in
            guard state.runs[run.key] == nil else { return false }
            state.runs[run.key] = run
            state.keys.insert(run.key)
            if !run.slice.isWholeMessage { state.sliceRuns += 1 }
            return true
        }
    }

    func remove(_ key: MessageSliceKey) {
        state.withLock { state in
            guard let run = state.runs.removeValue(forKey: key) else { return }
            state.keys.remove(key)
            if !run.slice.isWholeMessage { state.sliceRuns -= 1 }
        }
    }

    /// The runs of one message's slices (one, for SQLite).
    func runs(messageID: Int64) -> [MessageRun] {
        state.withLock { state in state.runs.values.filter { $0.record.id == messageID } }
    }

    func all() -> [MessageRun] {
        state.withLock { Array($0.runs.values) }
    }
}

/// When `submit` last asked the transport to open an app's connections, per environment. A
/// stream of chat messages asks once every `interval` instead of once per message: each ask is
/// a task, a credential lookup and a wake-up of the transport's threads, for connections that
/// are open already (and a send opens any that are not).
final class PreparationTimes: Sendable {
    private struct Key: Hashable {
        let appID: Int64
        let environment: PushEnvironment?
    }

    static let interval: Duration = .seconds(10)
    /// Past this many apps the table starts over: an ask too many costs a wake-up, not more.
    private static let limit = 10_000
    private let asked = Mutex<[Key: ContinuousClock.Instant]>([:])

    /// Whether to ask now (and remember that it was asked).
    func due(appID: Int64, environment: PushEnvironment?, now: ContinuousClock.Instant = .now) -> Bool {
        asked.withLock { asked in
            let key = Key(appID: appID, environment: environment)
            if let last = asked[key], now < last + Self.interval { return false }
            if asked.count >= Self.limit { asked.removeAll(keepingCapacity: true) }
            asked[key] = now
            return true
        }
    }
}

/// A resettable wake-up: `signal()` before `wait` is remembered; `wait` also returns when the
/// engine's clock reaches a deadline, so time-based work (scheduled messages, retries) is noticed.
///
/// The deadline is the caller's, counted from the moment it last looked at the clock (the `now`
/// its query used), not from when the wait begins: time that passed between the look and the
/// wait — a manual clock advanced by a test the moment the engine reported idle, or a slow
/// pass in production — then ends the wait at once instead of being lost.
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    func wait(until deadline: Date, on clock: any Clock) async {
        let timer = Task {
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            self.signal()
        }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        timer.cancel()
    }
}
