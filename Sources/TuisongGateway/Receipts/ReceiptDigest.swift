import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongTransportKit

/// When the digest records receipts: at once while nothing is sending and no POST is coming in;
/// while pushes are being sent it waits, so receipts do not take the CPU and the database's
/// writer from the pushes they report on, and while POSTs keep coming (one kept within
/// `quiet`) it waits too, so a POST's write is not held behind a digest transaction at the
/// database's one writer (SQLite: a transaction of 1,000 receipts held a Push Kit POST of the
/// same burst to 74 ms on a loaded machine); until the oldest waiting POST is `maxLag` old: from
/// then on it digests whatever else goes on, so the counts follow the receipts by about `maxLag`
/// at most (plus the time the digest needs at its lower priority).
struct ReceiptDigestPacing: Sendable, Hashable {
    enum Step: Sendable, Hashable {
        case digest
        /// Look again after this long (or when a POST comes).
        case wait(Duration)
    }

    /// How old the oldest waiting POST may grow while pushes are sending.
    var maxLag: Duration = .seconds(10)
    /// How often the digest looks again while it waits for sending to end.
    var recheck: Duration = .milliseconds(100)
    /// How long after the last POST was kept the intake counts as quiet.
    var quiet: Duration = .milliseconds(100)

    /// - Parameter sinceLastPost: how long ago the last POST was kept (nil: none since start).
    func next(sending: Bool, sinceLastPost: Duration? = nil, oldestWaiting age: Duration) -> Step {
        let receiving = sinceLastPost.map { $0 < quiet } ?? false
        guard sending || receiving, age < maxLag else { return .digest }
        var wait = min(recheck, maxLag - age)
        if !sending, let sinceLastPost { wait = min(wait, quiet - sinceLastPost) }
        return .wait(wait)
    }
}

/// Records the receipt inbox's POSTs (`ReceiptStore.digestReceiptPosts`): reads the oldest,
/// parses their bodies on a thread of lower priority, resolves their tags as the routes do,
/// and records each with its row's deletion in one transaction, about
/// `maxStatusesPerDigest` statuses a transaction. Any node digests any row (PostgreSQL: a row
/// another node holds is skipped); a kill at any point leaves each POST waiting or recorded.
final class ReceiptDigest: Sendable {
    private let store: any ReceiptStore
    private let declarations: [PushChannel: ReceiptDeclaration]
    private let keys: ReceiptKeys
    private let metrics: GatewayMetrics
    private let clock: any Clock
    private let logger: Logger
    private let pacing: ReceiptDigestPacing
    /// Whether pushes are being sent now.
    private let sending: @Sendable () -> Bool
    private let parser = LowPriorityThread(name: "tuisong-receipt-digest", nice: 10)

    /// Statuses one digest transaction records at most (one POST however large).
    static let maxStatusesPerDigest = 1000
    /// POSTs read at a time, at most.
    static let readLimit = 32

    /// How many POSTs the next pass reads: about one transaction's worth
    /// (`maxStatusesPerDigest`) at the size of the POSTs the last pass saw, between 1 and
    /// `readLimit`. The rows carry their bodies (a POST of 1,000 statuses is some 250 KB), and a
    /// transaction takes one POST of 1,000: reading 32 of them to record one read 8 MB a pass
    /// (2.6 % of the gateway's samples in a push with a receipt per device).
    static func readCount(statusesPerPost: Int?) -> Int {
        guard let statusesPerPost else { return readLimit }
        return min(readLimit, max(1, maxStatusesPerDigest / max(1, statusesPerPost)))
    }
    /// How often the inbox is looked at without being told of a POST (another node's, or kept
    /// before a restart).
    static let poll: Duration = .seconds(1)

    private struct State {
        var wakePending = false
        var waiter: CheckedContinuation<Void, Never>?
        var stopped = false
        /// Passes that found the inbox empty, for `drained()`.
        var emptyPasses: UInt64 = 0
        var drainWaiters: [(after: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        /// Rows whose write failed, not tried again before the time given.
        var failed: [Int64: ContinuousClock.Instant] = [:]
        /// When the oldest POST the last pass saw came, while the digest waits for sending to
        /// end: the next passes decide from it without reading the inbox again (its rows carry
        /// their bodies; reading them ten times a second was a tenth of the gateway's CPU
        /// during a push with a receipt per device).
        var oldestWaiting: Date?
        /// The statuses of the POSTs the last pass read, on average (nil before any).
        var statusesPerPost: Int?
        /// When this node last kept a POST (`kept()`).
        var lastPostAt: Date?
        /// The digest sleeps because the pacing said wait: a POST kept meanwhile does not wake
        /// it (a POST only makes the pacing wait longer, never less), so a burst of POSTs costs
        /// no pass, timer and task switch each (`kept()`).
        var pacingWait = false
    }
    private let state = Mutex(State())
    private let loop = Mutex<Task<Void, Never>?>(nil)

    init(
        store: any ReceiptStore, registry: TransportRegistry, keys: ReceiptKeys, metrics: GatewayMetrics,
        clock: any Clock, logger: Logger, pacing: ReceiptDigestPacing = ReceiptDigestPacing(),
        sending: @escaping @Sendable () -> Bool
    ) {
        self.store = store
        var declarations: [PushChannel: ReceiptDeclaration] = [:]
        for declaration in registry.declarations {
            if let receipts = declaration.receipts { declarations[declaration.channel.channel] = receipts }
        }
        self.declarations = declarations
        self.keys = keys
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
        self.pacing = pacing
        self.sending = sending
    }

    func start() {
        loop.withLock { loop in
            guard loop == nil else { return }
            loop = Task { await self.run() }
        }
    }

    func stop() async {
        let task = loop.withLock { $0 }
        let (waiter, drains) = state.withLock { state in
            state.stopped = true
            defer {
                state.waiter = nil
                state.drainWaiters = []
            }
            return (state.waiter, state.drainWaiters.map(\.continuation))
        }
        waiter?.resume()
        for drain in drains { drain.resume() }
        await task?.value
        parser.stop()
    }

    /// This node kept a POST: the digest looks at the inbox once the POSTs stop coming
    /// (`ReceiptDigestPacing.quiet`). Woken only when it is not already waiting on the pacing,
    /// which looks again when its wait ends and then sees this POST.
    func kept() {
        let now = clock.now
        let pacing = state.withLock { state in
            state.lastPostAt = now
            return state.pacingWait
        }
        if !pacing { wake() }
    }

    /// Look at the inbox now.
    func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.waiter = nil }
            if state.waiter == nil { state.wakePending = true }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns once a pass that began after the call found the inbox empty: every POST kept
    /// before the call is recorded and counted (or the digest stopped).
    func drained() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.stopped { return true }
                // The pass under way may have read before the call: the one after it did not.
                state.drainWaiters.append((state.emptyPasses + 2, continuation))
                return false
            }
            if now { continuation.resume() }
        }
        wake()
    }

    private var stopped: Bool { state.withLock { $0.stopped } }

    /// Whether a wake came that no pass has answered yet (tests).
    var wakeIsPending: Bool { state.withLock { $0.wakePending } }

    private func sleep(_ duration: Duration) async {
        let timer = Task {
            guard (try? await clock.sleep(for: duration)) != nil else { return }
            self.wake()
        }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.wakePending || state.stopped {
                    state.wakePending = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
    }

    private func run() async {
        while !stopped {
            let next: Duration?
            do {
                next = try await pass()
            } catch {
                logger.error("receipt digest failed", metadata: ["error": "\(error)"])
                next = Self.poll
            }
            guard let next else { continue }
            await sleep(next)
        }
    }

    /// Digests one transaction's worth of POSTs; returns how long to wait before the next pass,
    /// nil to go on at once.
    func pass() async throws -> Duration? {
        let (waitingSince, lastPost) = state.withLock { state in
            // This pass is the look a wake before it asked for.
            state.wakePending = false
            state.pacingWait = false
            return (state.oldestWaiting, state.lastPostAt)
        }
        let sinceLastPost = lastPost.map(age(of:))
        if let oldest = waitingSince {
            if case .wait(let wait) = pacing.next(
                sending: sending(), sinceLastPost: sinceLastPost, oldestWaiting: age(of: oldest))
            {
                state.withLock { $0.pacingWait = true }
                return wait
            }
            state.withLock { $0.oldestWaiting = nil }
        }
        let now = ContinuousClock.now
        let (skipping, statusesPerPost) = state.withLock { state in
            state.failed = state.failed.filter { $0.value > now }
            return (Set(state.failed.keys), state.statusesPerPost)
        }
        let read = try await store.receiptInbox(
            limit: Self.readCount(statusesPerPost: statusesPerPost) + skipping.count)
        let waiting = read.filter { !skipping.contains($0.id) }
        if !read.isEmpty {
            let average = read.reduce(0) { $0 + $1.statuses } / read.count
            state.withLock { $0.statusesPerPost = average }
        }
        guard let oldest = waiting.first else {
            let drained = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.emptyPasses += 1
                let passes = state.emptyPasses
                var ready: [CheckedContinuation<Void, Never>] = []
                state.drainWaiters.removeAll { waiter in
                    guard waiter.after <= passes else { return false }
                    ready.append(waiter.continuation)
                    return true
                }
                return ready
            }
            for waiter in drained { waiter.resume() }
            return Self.poll
        }
        if case .wait(let wait) = pacing.next(
            sending: sending(), sinceLastPost: sinceLastPost, oldestWaiting: age(of: oldest.receivedAt))
        {
            state.withLock { state in
                state.oldestWaiting = oldest.receivedAt
                state.pacingWait = true
            }
            return wait
        }
        var batch: [ReceiptInboxPost] = []
        var statuses = 0
        for post in waiting {
            if !batch.isEmpty && statuses + post.statuses > Self.maxStatusesPerDigest { break }
            batch.append(post)
            statuses += post.statuses
        }
        // The parse is most of a POST's CPU: at the thread's lower priority.
        let declarations = self.declarations
        let posts = batch
        let parsed = await parser.run { () -> [Result<[ServiceReceipt], ReceiptFormatError>] in
            posts.map { post in
                guard let declaration = declarations[post.channel] else {
                    return .failure(ReceiptFormatError("no receipts are read for \(post.channel.rawValue)"))
                }
                do throws(ReceiptFormatError) {
                    return .success(
                        try declaration.parse(
                            ReceiptPost(headers: [:], body: post.body, appID: post.appID, now: post.receivedAt)))
                } catch {
                    return .failure(error)
                }
            }
        }
        var digested: [DigestedReceiptPost] = []
        var resolutions: [ReceiptResolution?] = []
        for (post, statuses) in zip(batch, parsed) {
            switch statuses {
            case .success(let statuses):
                let resolution = try await ReceiptResolution(
                    statuses, channel: post.channel, appID: post.appID,
                    signed: declarations[post.channel]?.verifySignature != nil, receivedAt: post.receivedAt,
                    keys: keys, sends: store)
                digested.append(DigestedReceiptPost(inboxID: post.id, appID: post.appID, receipts: resolution.receipts))
                resolutions.append(resolution)
            case .failure(let error):
                // A signed POST's body was only checked for its structure when it came (its
                // statuses are read here), so a status without what the service always sends gets
                // here, as does a body a later build reads differently. It was answered 2xx and
                // is not sent again: dropped with its row, so it holds up nothing, logged and
                // counted (`unreadable`, per status) rather than lost silently.
                logger.error(
                    "receipt POST unreadable, dropped",
                    metadata: [
                        "channel": "\(post.channel.rawValue)", "app": "\(post.appID)", "error": "\(error.message)",
                    ])
                metrics.receipts.increment([post.channel.rawValue, "unreadable"], by: UInt64(post.statuses))
                digested.append(DigestedReceiptPost(inboxID: post.id, appID: post.appID, receipts: []))
                resolutions.append(nil)
            }
        }
        let results = try await store.digestReceiptPosts(digested)
        for ((post, resolution), result) in zip(zip(batch, resolutions), results) {
            switch result {
            case nil:
                continue  // another node's
            case .failure(let error)?:
                logger.error(
                    "receipt POST not recorded, tried again in a minute",
                    metadata: ["channel": "\(post.channel.rawValue)", "app": "\(post.appID)", "error": "\(error)"])
                state.withLock { $0.failed[post.id] = ContinuousClock.now.advanced(by: .seconds(60)) }
            case .success(let recording)?:
                count(recording, resolution: resolution, channel: post.channel)
            }
        }
        return nil
    }

    private func age(of date: Date) -> Duration {
        max(.zero, Duration.milliseconds(Int64(clock.now.timeIntervalSince(date) * 1000)))
    }

    private func count(_ recording: ReceiptRecording, resolution: ReceiptResolution?, channel: PushChannel) {
        // By runs of one channel and outcome first (a POST's receipts are mostly of one), then by
        // outcome: no label array made per receipt.
        var amounts: [[String]: UInt64] = [:]
        var run: (outcome: String, channel: PushChannel, count: UInt64)?
        for receipt in recording.recorded {
            if let last = run, last.channel == receipt.channel, last.outcome == receipt.outcome.name {
                run?.count += 1
                continue
            }
            if let last = run { amounts[[last.channel.rawValue, last.outcome], default: 0] += last.count }
            run = (receipt.outcome.name, receipt.channel, 1)
        }
        if let last = run { amounts[[last.channel.rawValue, last.outcome], default: 0] += last.count }
        if recording.repeated > 0 { amounts[[channel.rawValue, "repeated"], default: 0] += UInt64(recording.repeated) }
        let unknown = recording.unknown + (resolution.map { $0.untagged + $0.unknownSends } ?? 0)
        if unknown > 0 { amounts[[channel.rawValue, "unknown"], default: 0] += UInt64(unknown) }
        if let notOfSend = resolution?.notOfSend, notOfSend > 0 {
            logger.warning(
                "receipt targets not of their send ignored",
                metadata: ["channel": "\(channel.rawValue)", "count": "\(notOfSend)"])
            amounts[[channel.rawValue, "not_of_send"], default: 0] += UInt64(notOfSend)
        }
        if !amounts.isEmpty { metrics.receipts.increment(amounts) }
    }
}
