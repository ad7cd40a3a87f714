import Foundation
import Logging
import Synchronization
import TuisongCore

/// What happened when one device was tried.
enum SendOutcome: Sendable, Hashable {
    case delivered(apnsID: String?)
    /// APNs says the token is dead (410, BadDeviceToken); `since` is APNs's timestamp.
    case invalidate(reason: String, since: Date?)
    /// Try again later (429, 5xx, connection trouble), after `after` if APNs said.
    case retry(reason: String, after: Duration?)
    /// The app's credential is missing or failing: kept, visible, released when fixed.
    case held(reason: String)
    case failed(reason: String)
}

/// One device's outcome in a batch sent with `PushSender.send(app:message:environment:tokens:report:)`.
struct SendReport: Sendable {
    /// The device's position in `tokens`.
    var index: Int
    var outcome: SendOutcome
}

/// Sends pushes for the engine. The APNs implementation owns pools and credentials; tests
/// may swap a fake.
protocol PushSender: Sendable {
    func send(app: App, message: MessageRecord, token: String, environment: APNsEnvironment) async -> SendOutcome

    /// Sends `message` to every token (all of `environment`) and returns without waiting for
    /// the answers. `report` is called from any thread, possibly several times, with outcomes
    /// by position in `tokens`, until every token has had exactly one. It must be quick: the
    /// APNs sender calls it on its pool's event loop thread.
    func send(
        app: App, message: MessageRecord, environment: APNsEnvironment, tokens: [String],
        report: @escaping @Sendable ([SendReport]) -> Void) async

    /// One device with the credential its `selector` names (nil: the app's default one) and
    /// `payload` instead of the message's when given (a policy's per-device bytes, a retry).
    func send(
        app: App, message: MessageRecord, token: String, environment: APNsEnvironment, selector: String?,
        payload: [UInt8]?
    ) async -> SendOutcome

    /// The batch form of the above: `payloads`, when given, holds one entry per token (nil =
    /// the message's payload).
    func send(
        app: App, message: MessageRecord, environment: APNsEnvironment, selector: String?, tokens: [String],
        payloads: [[UInt8]?]?, report: @escaping @Sendable ([SendReport]) -> Void) async

    /// Gets ready to send the app's pushes of `environment` (nil: the default, production):
    /// opens the connections a first push would otherwise wait for. Returns without waiting
    /// for them.
    func prepare(app: App, environment: APNsEnvironment?) async
}

extension PushSender {
    /// Nothing to open (test fakes).
    func prepare(app: App, environment: APNsEnvironment?) async {}

    /// One task per token through `send(app:message:token:environment:)`, for senders with no
    /// cheaper way to send many (test fakes).
    func send(
        app: App, message: MessageRecord, environment: APNsEnvironment, tokens: [String],
        report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        for (index, token) in tokens.enumerated() {
            Task {
                let outcome = await send(app: app, message: message, token: token, environment: environment)
                report([SendReport(index: index, outcome: outcome)])
            }
        }
    }

    /// For senders that know no selectors (test fakes): the message with the device's payload.
    func send(
        app: App, message: MessageRecord, token: String, environment: APNsEnvironment, selector: String?,
        payload: [UInt8]?
    ) async -> SendOutcome {
        guard let payload else { return await send(app: app, message: message, token: token, environment: environment) }
        var own = message
        own.payload = payload
        return await send(app: app, message: own, token: token, environment: environment)
    }

    func send(
        app: App, message: MessageRecord, environment: APNsEnvironment, selector: String?, tokens: [String],
        payloads: [[UInt8]?]?, report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        guard let payloads else {
            await send(app: app, message: message, environment: environment, tokens: tokens, report: report)
            return
        }
        for (index, token) in tokens.enumerated() {
            Task {
                let outcome = await send(
                    app: app, message: message, token: token, environment: environment, selector: selector,
                    payload: payloads[index])
                report([SendReport(index: index, outcome: outcome)])
            }
        }
    }
}

public struct DeliverySettings: Sendable {
    public var workers: Int
    public var pageSize: Int
    public var maxAttempts: Int
    public var retryBase: TimeInterval
    public var retryMax: TimeInterval
    /// Retry window for messages without an explicit expiration.
    public var defaultExpiration: TimeInterval = 24 * 3600
    public var flushInterval: Duration = .milliseconds(100)
    public var pollInterval: Duration = .milliseconds(250)
    public var maxConcurrentMessages = 4
    /// Audience pages read ahead of the oldest unfinished one; bounds memory and the
    /// duplicates a crash can cause to about `windowPages × pageSize`.
    public var windowPages = 3

    public init(_ config: GatewayConfig.Delivery) {
        workers = config.workers
        pageSize = config.pageSize
        maxAttempts = config.maxAttempts
        retryBase = config.retryBaseSeconds
        retryMax = config.retryMaxSeconds
    }
}

/// Durable delivery: `submit` commits a message before it returns; a dispatcher expands
/// audiences page by page and sends through a bounded pool of in-flight pushes; failed,
/// retried and held deliveries get rows; everything survives a crash (at-least-once).
public final class DeliveryEngine: PushGateway {
    typealias Backend = MessageStore & AppStore

    let store: any Backend
    let sender: any PushSender
    let settings: DeliverySettings
    let clock: any Clock
    let logger: Logger
    let permits: AsyncSemaphore
    private let runs = Mutex<[Int64: MessageRun]>([:])
    /// Messages whose status was asked for, by id, for their parts that never change
    /// (audience, notification, options…); their counters are read from the store each time.
    private let messageHeads = Mutex<[Int64: MessageRecord]>([:])
    private static let messageHeadLimit = 256
    private let wakeSignal = WakeSignal()
    private let loops = Mutex<[Task<Void, Never>]>([])
    /// The running clean-up of badge grants, if any; at most one at a time.
    private let grantCleanup = Mutex<Task<Void, Never>?>(nil)
    private let stopping = Atomic<Bool>(false)
    /// Apps by id; every writer of an app calls `apps.changed(id:)`.
    let apps: AppCache
    /// Delivery policies by vendor (provider name), from the mounted providers.
    private let policies = Mutex<[String: any DeliveryPolicy]>([:])
    let metrics: GatewayMetrics

    init(
        store: any Backend, sender: any PushSender, settings: DeliverySettings, clock: any Clock, logger: Logger,
        apps: AppCache? = nil, metrics: GatewayMetrics = GatewayMetrics()
    ) {
        self.metrics = metrics
        self.store = store
        self.sender = sender
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.permits = AsyncSemaphore(permits: settings.workers)
        self.apps = apps ?? AppCache(store: store, clock: clock)
    }

    /// Sets the per-recipient policies (vendor name → policy). Messages of other vendors take
    /// the one-payload path.
    func setPolicies(_ policies: [String: any DeliveryPolicy]) {
        self.policies.withLock { $0 = policies }
    }

    func policy(forVendor vendor: String) -> (any DeliveryPolicy)? {
        policies.withLock { $0[vendor] }
    }

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Recovers what a crash left and starts the dispatch and retry loops.
    func start() async throws {
        let requeued = try await store.requeueInterruptedDeliveries()
        if requeued > 0 { logger.notice("requeued \(requeued) deliveries interrupted by the last stop") }
        let dispatch = Task { await self.dispatchLoop() }
        let retry = Task { await RetryWorker(engine: self).run() }
        loops.withLock { $0 = [dispatch, retry] }
        // What a crash left between a policy's message finishing and its clean-up.
        forgetFinishedBadgeGrants()
    }

    /// Deletes, in the background, the badge grants of messages that finished sending (each
    /// message with a policy ends by calling this). A call while one runs starts another after
    /// it, which then sees the message that just finished.
    func forgetFinishedBadgeGrants() {
        grantCleanup.withLock { running in
            let previous = running
            running = Task {
                await previous?.value
                if self.isStopping { return }
                do {
                    let forgotten = try await self.store.forgetFinishedBadgeGrants()
                    if forgotten > 0 { self.logger.debug("forgot \(forgotten) badge grants of finished messages") }
                } catch {
                    self.logger.warning("forgetting the badge grants of finished messages failed: \(error)")
                }
            }
        }
    }

    /// Stops launching sends, lets in-flight ones finish and flushes what finished. What was
    /// not flushed is sent again after the next start.
    func stop() async {
        stopping.store(true, ordering: .releasing)
        wakeSignal.signal()
        let tasks = loops.withLock { $0 }
        for task in tasks { await task.value }
        await grantCleanup.withLock { $0 }?.value
        let active = runs.withLock { Array($0.values) }
        for run in active { await run.finished() }
    }

    /// Validates, renders and commits the message; it is durable when this returns.
    public func submit(_ job: PushJob) async throws -> MessageRecord {
        let payload = try APNsPayload.build(job.notification, pushType: job.options.pushType)
        let state: MessageState = (job.sendAt.map { $0 > clock.now } ?? false) ? .scheduled : .queued
        let record = try await store.createMessage(job, payload: payload, state: state)
        metrics.messagesAccepted.increment([job.vendor])
        if state == .queued {
            wakeSignal.signal()
            // The first push after a start would otherwise wait for the APNs connections (TLS,
            // HTTP/2 settings): they open while the dispatcher starts the message.
            let sender = sender
            let apps = apps
            let environment = job.options.environment
            Task {
                guard let app = try? await apps.app(id: job.appID) else { return }
                await sender.prepare(app: app, environment: environment)
            }
        }
        return record
    }

    /// Wakes the dispatcher (a scheduled message came due, a held delivery was released).
    func wake() { wakeSignal.signal() }

    public func cancel(messageID: Int64) async throws -> Bool {
        try await store.cancelScheduledMessage(id: messageID, at: clock.now)
    }

    /// A message's status: its changing parts from one point read of the store (no JSON
    /// column decoded, no hop to a database queue), the rest from the running message or a
    /// small cache (it never changes), and a running message's outcomes not yet committed laid
    /// over the store's counts. Cheap enough to poll at 100 Hz during a push.
    public func status(messageID: Int64) async throws -> MessageStatus? {
        let run = runs.withLock { $0[messageID] }
        // Before the store read: `uncommitted(after:)` then leaves out whatever the read saw.
        let live = run?.liveCounts()
        guard let snapshot = try await store.messageProgress(id: messageID) else { return nil }
        let head: MessageRecord
        if let run {
            head = run.record
        } else if let cached = messageHeads.withLock({ $0[messageID] }) {
            head = cached
        } else {
            guard let full = try await store.message(id: messageID) else { return nil }
            messageHeads.withLock { heads in
                if heads.count >= Self.messageHeadLimit { heads.removeAll(keepingCapacity: true) }
                heads[messageID] = full
            }
            head = full
        }
        let record = head.updated(with: snapshot)
        var counts = record.counts
        var failures = record.failures
        var skips = record.skips
        if let live {
            let uncommitted = live.uncommitted(after: snapshot.cursor)
            for state in DeliveryState.allCases { counts[state] += uncommitted.counts[state] }
            counts.sending += live.inFlight
            for (reason, n) in uncommitted.failures { failures[reason, default: 0] += n }
            for (reason, n) in uncommitted.skips { skips[reason, default: 0] += n }
        }
        if let total = record.total, record.state == .queued || record.state == .sending || record.state == .scheduled {
            let accounted = counts.total
            if total > accounted { counts.queued += total - accounted }
        }
        return MessageStatus(record: record, counts: counts, failures: failures, skips: skips)
    }

    func app(id: Int64) async throws -> App? {
        try await apps.app(id: id)
    }

    /// When a retryable failure should be tried again, or nil when it should not.
    func nextAttempt(after attempts: Int, message: MessageRecord, hint: Duration?) -> Date? {
        guard attempts < settings.maxAttempts else { return nil }
        let exponential = min(settings.retryMax, settings.retryBase * pow(2, Double(attempts - 1)))
        // Full jitter halves synchronized retry storms against a recovering APNs.
        var delay = exponential / 2 + Double.random(in: 0...(exponential / 2))
        if let hint {
            let seconds = Double(hint.components.seconds) + Double(hint.components.attoseconds) / 1e18
            delay = max(delay, seconds)
        }
        let next = clock.now.addingTimeInterval(delay)
        let expiration = message.options.expiration ?? message.createdAt.addingTimeInterval(settings.defaultExpiration)
        return next <= expiration ? next : nil
    }

    // MARK: dispatch loop

    private func dispatchLoop() async {
        while !isStopping {
            do {
                let due = try await store.dispatchableMessages(now: clock.now)
                for record in due {
                    let canStart = runs.withLock { runs -> Bool in
                        guard runs[record.id] == nil, runs.count < settings.maxConcurrentMessages else { return false }
                        return true
                    }
                    guard canStart, !isStopping else { continue }
                    // The listing may predate a run that finished since: re-read, so a
                    // completed message is not started again from a stale cursor.
                    guard let record = try await store.message(id: record.id),
                        record.state == .queued || record.state == .sending
                            || (record.state == .scheduled && (record.sendAt ?? .distantPast) <= clock.now)
                    else { continue }
                    guard runs.withLock({ $0[record.id] == nil }) else { continue }
                    guard let app = try await app(id: record.appID) else {
                        try await store.setMessageState(id: record.id, .cancelled, at: clock.now)
                        continue
                    }
                    let run = MessageRun(engine: self, record: record, app: app)
                    runs.withLock { $0[record.id] = run }
                    Task {
                        await run.execute()
                        self.runs.withLock { _ = $0.removeValue(forKey: record.id) }
                        self.wakeSignal.signal()
                    }
                }
            } catch {
                logger.error("dispatcher: \(error)")
            }
            await wakeSignal.wait(timeout: settings.pollInterval)
        }
    }
}

/// A resettable wake-up: `signal()` before `wait` is remembered; `wait` also returns after a
/// timeout so time-based work (scheduled messages) is noticed.
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

    func wait(timeout: Duration) async {
        let timer = Task {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
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
