import Foundation
import Logging
import Synchronization
import TuisongCore

/// Sends one message: reads its audience page by page after the persisted cursor, hands the
/// sender chunks of a page as the engine's in-flight bound allows, and flushes finished pages in
/// order so the database always holds whole pages: counts, failure reasons, delivery rows for
/// everything not delivered first time, device invalidations, and the cursor, in one
/// transaction. A page is flushed as soon as it and every page before it are finished (or
/// after `flushInterval` at the latest), so the window of unflushed pages keeps moving.
final class MessageRun: Sendable {
    /// Outcomes of one audience page, kept until every entry of the page has one.
    struct PageResults {
        var lastPosition: Int64
        var pending: Int
        var counts = DeliveryCounts()
        var failures: [String: Int] = [:]
        var skips: [String: Int] = [:]
        var deliveries: [NewDelivery] = []
        var invalidations: [DeviceInvalidation] = []
    }

    struct State {
        var pages: [PageResults] = []
        /// Index in `pages` of the first page not yet flushed, as seen by senders.
        var flushedPages = 0
        var inFlight = 0
        var exhausted = false
        /// Outcomes taken out of `pages` but not yet committed, still shown as live.
        var flushing: Tally?
        var pageWaiter: CheckedContinuation<Void, Never>?
        /// Tells the flush loop to end; the run's last flush follows.
        var flusherStopped = false
        var done = false
        var doneWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Outcomes not known to be committed, with the audience position that commits them
    /// (a page's last position, or a flush's cursor).
    struct Tally {
        var lastPosition: Int64
        var counts = DeliveryCounts()
        var failures: [String: Int] = [:]
        var skips: [String: Int] = [:]
    }

    struct Live {
        /// In audience order: the flush being committed, then each unflushed page.
        var tallies: [Tally]
        var inFlight: Int

        /// What is not in a store snapshot whose cursor is `committedCursor`: a flush commits
        /// its counts and its cursor in one transaction, so a tally at or below the cursor is
        /// already counted there, whichever happened first, the poll's store read or the flush.
        func uncommitted(after committedCursor: Int64) -> (
            counts: DeliveryCounts, failures: [String: Int], skips: [String: Int]
        ) {
            var counts = DeliveryCounts()
            var failures: [String: Int] = [:]
            var skips: [String: Int] = [:]
            for tally in tallies where tally.lastPosition > committedCursor {
                for s in DeliveryState.allCases { counts[s] += tally.counts[s] }
                for (reason, n) in tally.failures { failures[reason, default: 0] += n }
                for (reason, n) in tally.skips { skips[reason, default: 0] += n }
            }
            return (counts, failures, skips)
        }
    }

    /// Devices of one page that go out through one credential: same environment and selector.
    struct SendGroup {
        var entries: [AudienceEntry] = []
        /// Per entry (only when the message has a policy), its own bytes when they differ from
        /// the message's payload.
        var payloads: [[UInt8]?] = []
        var hasOwnPayloads = false
    }

    struct SendRoute: Hashable {
        var environment: APNsEnvironment
        var selector: String?
    }

    let engine: DeliveryEngine
    let record: MessageRecord
    let app: App
    /// The vendor's per-recipient policy, or nil for the one-payload path.
    let policy: (any DeliveryPolicy)?
    private let state = Mutex(State())
    /// Raised when the oldest unflushed page finished.
    private let flushSignal = WakeSignal()

    init(engine: DeliveryEngine, record: MessageRecord, app: App) {
        self.engine = engine
        self.record = record
        self.app = app
        self.policy = engine.policy(forVendor: record.vendor)
    }

    var logger: Logger { engine.logger }

    /// Taken before the store is read for a status: see `Live.uncommitted(after:)`.
    func liveCounts() -> Live {
        state.withLock { state in
            var tallies: [Tally] = []
            tallies.reserveCapacity(state.pages.count - state.flushedPages + 1)
            if let flushing = state.flushing { tallies.append(flushing) }
            for page in state.pages[state.flushedPages...] {
                tallies.append(
                    Tally(
                        lastPosition: page.lastPosition, counts: page.counts, failures: page.failures,
                        skips: page.skips))
            }
            return Live(tallies: tallies, inFlight: state.inFlight)
        }
    }

    /// Returns once the run has stopped (finished, or interrupted by `stop`).
    func finished() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.done { return true }
                state.doneWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func execute() async {
        let store = engine.store
        let settings = engine.settings
        if record.state != .sending {
            var started = false
            await persistently("start") {
                started = try await store.startMessage(id: record.id, total: nil, at: engine.clock.now)
            }
            guard started else {
                // Cancelled between being listed and being started.
                finish()
                return
            }
        }
        // Counted beside the sending, not before it: a count walks the whole audience (hundreds
        // of milliseconds for a million-device tag) and the first device need not wait for it.
        // A restart after a crash counts again if the count had not been recorded.
        let counter = record.total == nil ? Task { await recordExpectedTotal() } : nil
        let flusher = Task { await flushLoop() }
        // Chunks below this wait for more permits, so a busy pool is fed in batches rather
        // than one device per returned permit.
        let chunkFloor = max(1, min(engine.permits.capacity / 4, 256))
        var cursor = record.cursor
        // With a policy, up to `decidedAhead` pages are read (in order) and decided (at once)
        // in their own tasks while this loop sends: a decision (the policy's reads and badge
        // writes) takes longer than sending a page, and reading inline let the requests in
        // flight drain. Without one, the loop mostly waits for the window and reads as it goes.
        var ahead: [PageAhead] = []
        // The run's first page is small, so the first devices need not wait for a whole page to
        // be read and decided (a thousand badges written, for a policy); the rest are full.
        var limit = min(settings.pageSize, Self.firstPageSize)
        reading: while !engine.isStopping {
            await waitForWindow()
            let prepared: PreparedPage?
            if policy != nil {
                while ahead.count < Self.decidedAhead {
                    ahead.append(pageAhead(after: ahead.last?.read, cursor: cursor, firstLimit: limit))
                }
                prepared = await ahead.removeFirst().prepared.value
            } else {
                prepared = await readPage(after: cursor, limit: limit).map {
                    PreparedPage(entries: $0.entries, limit: $0.limit)
                }
            }
            limit = settings.pageSize
            guard let prepared else { break }
            let entries = prepared.entries
            if entries.isEmpty {
                state.withLock { $0.exhausted = true }
                break
            }
            let pageIndex = state.withLock { state -> Int in
                state.pages.append(
                    PageResults(lastPosition: entries[entries.count - 1].position, pending: entries.count))
                if entries.count < prepared.limit { state.exhausted = true }
                return state.pages.count - 1
            }
            cursor = entries[entries.count - 1].position
            var unsent: [(entry: AudienceEntry, result: EntryResult)] = []
            // One decision per entry that is not already skipped, in order; nil = send the
            // message's payload to all (no policy).
            let decisions = prepared.decisions
            // Usually one group (one environment, no selector): found by comparing with the
            // previous entry's, not by hashing every entry.
            var groups: [(route: SendRoute, group: SendGroup)] = []
            var slot = -1
            var decisionIndex = 0
            let payloadLimit = record.options.pushType.payloadLimit
            for entry in entries {
                if let reason = entry.skipReason {
                    unsent.append((entry, .skipped(reason)))
                    continue
                }
                var own: [UInt8]?
                if let decisions {
                    let decision = decisions[decisionIndex]
                    decisionIndex += 1
                    switch decision {
                    case .send:
                        break
                    case .skip(let reason):
                        unsent.append((entry, .skipped(reason)))
                        continue
                    case .sendPayload(let bytes):
                        if bytes.count > payloadLimit {
                            unsent.append((entry, .outcome(.failed(reason: "PayloadTooLarge"))))
                            continue
                        }
                        // Kept only when it differs: the message's own bytes need no copy per row.
                        if bytes != record.payload { own = bytes }
                    }
                }
                let route = SendRoute(environment: entry.environment, selector: entry.credentialSelector)
                if slot < 0 || groups[slot].route != route {
                    if let found = groups.firstIndex(where: { $0.route == route }) {
                        slot = found
                    } else {
                        groups.append((route, SendGroup()))
                        slot = groups.count - 1
                    }
                }
                groups[slot].group.entries.append(entry)
                if decisions != nil {
                    groups[slot].group.payloads.append(own)
                    if own != nil { groups[slot].group.hasOwnPayloads = true }
                }
            }
            if !unsent.isEmpty { recordUnsent(unsent, page: pageIndex) }
            for (route, group) in groups {
                var start = 0
                while start < group.entries.count {
                    let wanted = group.entries.count - start
                    let granted = await engine.permits.acquire(atLeast: min(wanted, chunkFloor), upTo: wanted)
                    if engine.isStopping {
                        engine.permits.signal(count: granted)
                        break reading
                    }
                    let chunk = Array(group.entries[start..<(start + granted)])
                    let payloads = group.hasOwnPayloads ? Array(group.payloads[start..<(start + granted)]) : nil
                    start += granted
                    state.withLock { $0.inFlight += granted }
                    await engine.sender.send(
                        app: app, message: record, environment: route.environment, selector: route.selector,
                        tokens: chunk.map(\.token), payloads: payloads
                    ) { reports in
                        self.record(reports, of: chunk, payloads: payloads, page: pageIndex)
                    }
                }
            }
            if state.withLock({ $0.exhausted }) { break }
        }
        // Only when stopping: the prepared pages' store calls give up once the engine stops.
        for page in ahead { _ = await page.prepared.value }
        await waitForInFlight()
        // The count is only a progress estimate; the final flush records the real total.
        counter?.cancel()
        await counter?.value
        // Not task cancellation: a flush in progress must finish (the store refuses work from
        // a cancelled task).
        state.withLock { $0.flusherStopped = true }
        flushSignal.signal()
        await flusher.value
        await flush()
        // The grants are only needed while pages may be decided (again); a stop leaves the
        // message sending, and its grants with it.
        if policy != nil, !engine.isStopping { engine.forgetFinishedBadgeGrants() }
        finish()
    }

    /// An audience page and, with a policy, its decisions: one per entry not already skipped,
    /// in order (nil: send the message's payload to all).
    struct PreparedPage {
        var entries: [AudienceEntry]
        var decisions: [DeliveryDecision]?
        /// What the page was read with: fewer entries means the audience is exhausted.
        var limit: Int
    }

    /// An audience page as read, with the limit it was read with.
    struct PageRead {
        var entries: [AudienceEntry]
        var limit: Int
    }

    /// Pages of a message read and decided ahead of the one being sent, at most.
    static let decidedAhead = 2
    /// The size of a run's first page (at most the page size).
    static let firstPageSize = 100

    /// A page read in order after the one before it (or after `cursor` for the first), then
    /// decided, in tasks of its own: the sending loop never waits for a read, which would let
    /// the requests in flight drain meanwhile.
    struct PageAhead {
        var read: Task<PageRead?, Never>
        var prepared: Task<PreparedPage?, Never>
    }

    /// `firstLimit` is the limit of a page read after `cursor` (no page before it); pages read
    /// after another are full.
    private func pageAhead(after previous: Task<PageRead?, Never>?, cursor: Int64, firstLimit: Int) -> PageAhead {
        let pageSize = engine.settings.pageSize
        let read = Task { () -> PageRead? in
            guard let previous else { return await self.readPage(after: cursor, limit: firstLimit) }
            guard let before = await previous.value else { return nil }
            // The page before was the last: an empty page ends the loop.
            guard before.entries.count == before.limit, let last = before.entries.last else {
                return PageRead(entries: [], limit: pageSize)
            }
            return await self.readPage(after: last.position, limit: pageSize)
        }
        let prepared = Task { () -> PreparedPage? in
            guard let page = await read.value else { return nil }
            return await self.decide(page)
        }
        return PageAhead(read: read, prepared: prepared)
    }

    /// The audience page after `cursor`; nil when the engine stopped first.
    private func readPage(after cursor: Int64, limit: Int) async -> PageRead? {
        var entries: [AudienceEntry] = []
        let loaded = await persistently("read audience") {
            entries = try await engine.store.audiencePage(
                appID: record.appID, audience: record.audience, environment: record.options.environment,
                after: cursor, limit: limit, withRecipientDetails: policy != nil)
        }
        return loaded ? PageRead(entries: entries, limit: limit) : nil
    }

    /// Has the policy decide a page; nil when the engine stopped first. Pages of one message
    /// are decided concurrently (`DeliveryPolicy`'s contract allows it), and a page decided
    /// again after a crash gets the same badges (`AccountStore.grantBadges`), so deciding ahead
    /// of sending is safe.
    private func decide(_ page: PageRead) async -> PreparedPage? {
        let entries = page.entries
        guard let policy else { return PreparedPage(entries: entries, limit: page.limit) }
        let candidates = entries.filter { $0.skipReason == nil }
        guard !candidates.isEmpty else { return PreparedPage(entries: entries, limit: page.limit) }
        var decisions: [DeliveryDecision]?
        let decided = await persistently("decide") {
            decisions = try await policy.decide(candidates.map(\.recipient), message: record)
        }
        guard decided else { return nil }
        if decisions?.count != candidates.count {
            logger.error(
                "message \(record.id): the \(record.vendor) policy answered \(decisions?.count ?? 0) decisions for \(candidates.count) recipients; skipping them"
            )
            decisions = Array(repeating: .skip(reason: "PolicyError"), count: candidates.count)
        }
        return PreparedPage(entries: entries, decisions: decisions, limit: page.limit)
    }

    /// Counts the audience and records it as the expected total while the message is sending.
    private func recordExpectedTotal() async {
        do {
            let total = try await engine.store.audienceCount(
                appID: record.appID, audience: record.audience, environment: record.options.environment)
            try await engine.store.setExpectedTotal(id: record.id, total: total)
        } catch is CancellationError {
        } catch {
            // Only the estimate is missing (status shows no total until the message completes).
            if !Task.isCancelled { logger.warning("message \(record.id): counting the audience failed: \(error)") }
        }
    }

    private func finish() {
        state.withLock { state in
            state.done = true
            for waiter in state.doneWaiters { waiter.resume() }
            state.doneWaiters.removeAll()
        }
    }

    /// An entry's final result within this run.
    enum EntryResult {
        case outcome(SendOutcome)
        case skipped(String)
    }

    /// Records a chunk's outcomes with one lock, returns their permits, and wakes the flusher
    /// when the oldest unflushed page is done.
    private func record(_ reports: [SendReport], of chunk: [AudienceEntry], payloads: [[UInt8]?]?, page: Int) {
        let now = engine.clock.now
        // Retry dates are drawn outside the lock; most chunks have none.
        var retryDates: [Date?] = []
        for (position, report) in reports.enumerated() {
            guard case .retry(_, let hint) = report.outcome else { continue }
            if retryDates.isEmpty { retryDates = Array(repeating: nil, count: reports.count) }
            retryDates[position] = engine.nextAttempt(after: 1, message: record, hint: hint)
        }
        let (pageDone, drained) = state.withLock { state -> (Bool, Bool) in
            state.inFlight -= reports.count
            for (position, report) in reports.enumerated() {
                // This runs on the APNs pool's event loop thread, which also does the sending:
                // the common outcome touches neither the entry nor its payload.
                if case .delivered = report.outcome {
                    state.pages[page].pending -= 1
                    state.pages[page].counts.delivered += 1
                    continue
                }
                // In place (inout on the array element): a copy would duplicate the page's arrays.
                Self.apply(
                    .outcome(report.outcome), entry: chunk[report.index], payload: payloads?[report.index],
                    attempted: true, retryAt: retryDates.isEmpty ? nil : retryDates[position], now: now,
                    to: &state.pages[page])
            }
            return (page == state.flushedPages && state.pages[page].pending == 0, state.inFlight == 0)
        }
        engine.permits.signal(count: reports.count)
        if pageDone { flushSignal.signal() }
        if pageDone || drained { wakeWaiter() }
    }

    /// Records entries decided without sending: skipped (by the audience or the policy) or
    /// refused before sending (a policy's payload too large).
    private func recordUnsent(_ unsent: [(entry: AudienceEntry, result: EntryResult)], page: Int) {
        let now = engine.clock.now
        let skipReasons = unsent.compactMap { unsent -> [String]? in
            if case .skipped(let reason) = unsent.result { return [reason] }
            return nil
        }
        if !skipReasons.isEmpty {
            engine.metrics.skips.increment(Dictionary(skipReasons.map { ($0, UInt64(1)) }, uniquingKeysWith: +))
        }
        let pageDone = state.withLock { state -> Bool in
            for (entry, result) in unsent {
                Self.apply(
                    result, entry: entry, payload: nil, attempted: false, retryAt: nil, now: now,
                    to: &state.pages[page])
            }
            return page == state.flushedPages && state.pages[page].pending == 0
        }
        if pageDone {
            flushSignal.signal()
            wakeWaiter()
        }
    }

    private static func apply(
        _ result: EntryResult, entry: AudienceEntry, payload: [UInt8]?, attempted: Bool, retryAt: Date?, now: Date,
        to results: inout PageResults
    ) {
        results.pending -= 1
        func row(_ s: DeliveryState, _ reason: String?, apnsID: String? = nil, next: Date? = nil) {
            results.deliveries.append(
                NewDelivery(
                    deviceID: entry.deviceID, token: entry.token, environment: entry.environment, state: s,
                    reason: reason, apnsID: apnsID, attempts: attempted ? 1 : 0, nextAttemptAt: next,
                    payload: payload, credentialSelector: entry.credentialSelector))
        }
        switch result {
        case .skipped(let reason):
            results.counts.skipped += 1
            results.skips[reason, default: 0] += 1
            row(.skipped, reason)
        case .outcome(.delivered):
            results.counts.delivered += 1
        case .outcome(.invalidate(let reason, let since)):
            results.counts.failed += 1
            results.failures[reason, default: 0] += 1
            row(.failed, reason)
            if let deviceID = entry.deviceID {
                results.invalidations.append(DeviceInvalidation(deviceID: deviceID, reason: reason, at: since ?? now))
            }
        case .outcome(.retry(let reason, _)):
            if let retryAt {
                results.counts.queued += 1
                row(.queued, reason, next: retryAt)
            } else {
                results.counts.failed += 1
                results.failures[reason, default: 0] += 1
                row(.failed, reason)
            }
        case .outcome(.held(let reason)):
            results.counts.held += 1
            row(.held, reason)
        case .outcome(.failed(let reason)):
            results.counts.failed += 1
            results.failures[reason, default: 0] += 1
            row(.failed, reason)
        }
    }

    private func wakeWaiter() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.pageWaiter = nil }
            return state.pageWaiter
        }
        waiter?.resume()
    }

    /// Waits until fewer than `windowPages` pages are unflushed.
    private func waitForWindow() async {
        while true {
            let full = state.withLock { $0.pages.count - $0.flushedPages >= engine.settings.windowPages }
            if !full { return }
            await waitForChange()
        }
    }

    private func waitForInFlight() async {
        while state.withLock({ $0.inFlight > 0 }) { await waitForChange() }
    }

    /// Suspends until a page completes, in-flight drains, or a flush happens (bounded).
    private func waitForChange() async {
        let timer = Task {
            guard (try? await Task.sleep(for: .milliseconds(50))) != nil else { return }
            self.wakeWaiter()
        }
        await withCheckedContinuation { continuation in
            let previous = state.withLock { state -> CheckedContinuation<Void, Never>? in
                let previous = state.pageWaiter
                state.pageWaiter = continuation
                return previous
            }
            previous?.resume()
        }
        timer.cancel()
    }

    /// Flushes when the oldest unflushed page finishes, and every `flushInterval` regardless.
    private func flushLoop() async {
        while true {
            await flushSignal.wait(timeout: engine.settings.flushInterval)
            if state.withLock({ $0.flusherStopped }) { return }
            await flush()
        }
    }

    /// Commits every leading page whose entries all have outcomes.
    private func flush() async {
        let progress = state.withLock { state -> MessageProgress? in
            var end = state.flushedPages
            while end < state.pages.count, state.pages[end].pending == 0 { end += 1 }
            let finishing = state.exhausted && end == state.pages.count && state.inFlight == 0
            guard end > state.flushedPages || finishing else { return nil }
            var progress = MessageProgress(messageID: record.id, cursor: record.cursor)
            if state.flushedPages > 0 { progress.cursor = state.pages[state.flushedPages - 1].lastPosition }
            for index in state.flushedPages..<end {
                let page = state.pages[index]
                progress.cursor = page.lastPosition
                for s in DeliveryState.allCases { progress.counts[s] += page.counts[s] }
                for (reason, n) in page.failures { progress.failures[reason, default: 0] += n }
                for (reason, n) in page.skips { progress.skips[reason, default: 0] += n }
                progress.deliveries += page.deliveries
                progress.invalidations += page.invalidations
                state.pages[index] = PageResults(lastPosition: page.lastPosition, pending: 0)
            }
            state.flushedPages = end
            state.flushing = Tally(
                lastPosition: progress.cursor, counts: progress.counts, failures: progress.failures,
                skips: progress.skips)
            if finishing { progress.finalState = .completed }
            return progress
        }
        guard let progress else { return }
        await persistently("record progress") {
            try await engine.store.recordProgress(progress, at: engine.clock.now)
        }
        state.withLock { $0.flushing = nil }
        if progress.counts.queued > 0 { engine.wake() }
        wakeWaiter()
    }

    /// Retries a store operation until it succeeds or the engine stops; `false` if it stopped.
    @discardableResult
    private func persistently(_ what: String, _ operation: () async throws -> Void) async -> Bool {
        var delay: Duration = .milliseconds(50)
        while true {
            do {
                try await operation()
                return true
            } catch {
                logger.error("message \(record.id): \(what) failed: \(error); retrying")
                if engine.isStopping { return false }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}

extension SendOutcome {
    var asResult: MessageRun.EntryResult { .outcome(self) }
}
