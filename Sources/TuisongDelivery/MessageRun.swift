import Foundation
import Logging
import Synchronization
import TuisongCore

/// Sends one message, or one slice of it (`WorkSlice`, when several nodes share the work):
/// reads its audience page by page after the persisted cursor, hands the
/// transport chunks of a page as the engine's in-flight bound allows, and records outcomes as
/// they come in segments of `flushOutcomes` consecutive audience entries, flushed in order so the
/// database always holds whole segments: counts, failure reasons, delivery rows for everything
/// not delivered first time, device invalidations, and the cursor, in one transaction. A segment
/// is flushed as soon as it and every segment before it are finished (or after `flushInterval`
/// at the latest): what a crash sends again is what was in flight and what was not committed
/// yet, a flush or two (issue #40 item 4).
final class MessageRun: Sendable {
    /// Outcomes of one flush segment: up to `flushOutcomes` consecutive audience entries of one
    /// page, kept until every one of them has an outcome.
    struct Segment {
        var lastPosition: Int64
        /// Its audience entries.
        var size: Int
        var pending: Int
        var counts = DeliveryCounts()
        var failures: [String: Int] = [:]
        var skips: [String: Int] = [:]
        var deliveries: [NewDelivery] = []
        var invalidations: [DeviceInvalidation] = []
        var deliveredByChannel: [PushChannel: Int] = [:]
        var serviceRequests: [ServiceRequest] = []

        /// Notes a request the service accepted: its tokens' outcomes come together, so
        /// comparing with the last one noted keeps one per request.
        mutating func note(_ request: ServiceRequest) {
            if serviceRequests.last != request { serviceRequests.append(request) }
        }
    }

    /// Where a page's entries are accounted: its segments, by the audience position each ends at.
    struct PageSegments: Sendable {
        /// The run-wide index of the page's first segment.
        var first: Int
        var lastPositions: [Int64]

        /// The run-wide index of the segment holding the entry at `position` (of this page).
        func index(of position: Int64) -> Int {
            var low = 0
            var high = lastPositions.count - 1
            while low < high {
                let middle = (low + high) / 2
                if lastPositions[middle] < position { low = middle + 1 } else { high = middle }
            }
            return first + low
        }
    }

    struct State {
        /// The segments not flushed yet, in audience order; the first has run-wide index
        /// `flushedSegments`.
        var segments: [Segment] = []
        /// Segments taken out for a flush so far (the run-wide index of `segments.first`).
        var flushedSegments = 0
        /// The cursor the last flush taken out commits (the slice's start before any).
        var flushedCursor: Int64 = 0
        /// Entries read and not yet taken out for a flush: bounds the pages read ahead.
        var unflushedEntries = 0
        /// Entries of the flush being committed.
        var committingEntries = 0
        /// The flush being committed failed and is being retried: no sends are launched until it
        /// lands (the database is away; what a crash would repeat stays what is in flight now).
        var flushFailing = false
        /// The flush loop runs (from the second page on): only then do sends wait for commits.
        var flushLoopRunning = false
        var inFlight = 0
        var exhausted = false
        /// Outcomes taken out of `segments` but not yet committed, still shown as live.
        var flushing: Tally?
        var pageWaiter: CheckedContinuation<Void, Never>?
        /// Tells the flush loop to end; the run's last flush follows.
        var flusherStopped = false
        /// The completion has been handed to the store: the run's last flush does not repeat it.
        var completionFlushed = false
        /// The store committed the completion: the slice is done, and a renewal that no longer
        /// finds it open is not a lost lease.
        var completionCommitted = false
        var done = false
        var doneWaiters: [CheckedContinuation<Void, Never>] = []

        /// Outcomes in that are not committed and need nothing more to be: the flush being
        /// committed and the finished segments at the front.
        var finishedUncommitted: Int {
            var entries = committingEntries
            for segment in segments {
                guard segment.pending == 0 else { break }
                entries += segment.size
            }
            return entries
        }
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

    let engine: DeliveryEngine
    let record: MessageRecord
    let app: App
    /// The part of the audience this run sends, and the claim it holds it under.
    let slice: WorkSlice
    /// When the slice's lease ends as last renewed (nil: no lease).
    private let leaseUntil: Mutex<Date?>
    /// The store refused a flush, or a renewal, of this slice: another node took it over.
    private let lost = Atomic<Bool>(false)
    /// The vendor's per-recipient policy, or nil for the one-payload path.
    let policy: (any DeliveryPolicy)?
    /// The message's request headers, the same for every device.
    let headers: PushHeaders
    /// The message's content, shared by its pushes: each transport renders it once.
    let content: SharedContent
    let state: Mutex<State>
    /// Raised when the oldest unflushed segment finished.
    let flushSignal = WakeSignal()

    init(engine: DeliveryEngine, record: MessageRecord, app: App, slice: WorkSlice) {
        self.engine = engine
        self.record = record
        self.app = app
        self.slice = slice
        self.leaseUntil = Mutex(slice.leaseUntil)
        self.state = Mutex(State(flushedCursor: slice.after))
        self.policy = engine.policy(forVendor: record.vendor)
        self.headers = PushHeaders(record.options, messageID: record.id, appID: record.appID)
        self.content = SharedContent(record.content)
    }

    var logger: Logger { engine.logger }

    var key: MessageSliceKey { MessageSliceKey(messageID: record.id, slice: slice.id) }

    /// The lease was renewed until `until`.
    func extendLease(until: Date) {
        leaseUntil.withLock { $0 = until }
    }

    /// Another node holds the slice now: stop sending it; what was not flushed is its to send.
    func loseLease() {
        if state.withLock({ $0.completionCommitted }) { return }
        if !lost.exchange(true, ordering: .acquiringAndReleasing) {
            logger.warning(
                "lost the lease of a slice; another node sends it now",
                metadata: ["message": "\(record.id)", "slice": "\(slice.id)"])
        }
        wakeWaiter()
    }

    var hasLostLease: Bool { lost.load(ordering: .acquiring) }

    /// Whether the run must stop launching sends: the engine is stopping, the slice was lost,
    /// or its lease ends within `leaseMargin` without having been renewed.
    var isHalted: Bool {
        if engine.isStopping || hasLostLease { return true }
        guard let until = leaseUntil.withLock({ $0 }) else { return false }
        let margin = engine.settings.leaseMargin
        let marginSeconds = Double(margin.components.seconds) + Double(margin.components.attoseconds) / 1e18
        return engine.clock.now >= until.addingTimeInterval(-marginSeconds)
    }

    /// Taken before the store is read for a status: see `Live.uncommitted(after:)`.
    func liveCounts() -> Live {
        state.withLock { state in
            var tallies: [Tally] = []
            tallies.reserveCapacity(state.segments.count + 1)
            if let flushing = state.flushing { tallies.append(flushing) }
            for segment in state.segments {
                tallies.append(
                    Tally(
                        lastPosition: segment.lastPosition, counts: segment.counts, failures: segment.failures,
                        skips: segment.skips))
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

    /// Reads and decides pages, sends them, and leaves the accounting to `record` (as answers
    /// come) and the flush loop (as segments finish).
    func execute() async {
        guard await markStarted() else {
            // Cancelled between being listed and being started.
            finish()
            return
        }
        // A message of one page (a chat line: one recipient, or a few) needs neither a flush loop
        // nor a count: its one flush, after its answers, records its outcomes, its total and its
        // completion together. Both start once a second page is to be read.
        var counter: Task<Void, Never>?
        var flusher: Task<Void, Never>?
        var pages = PageSource(run: self, cursor: slice.after)
        while !isHalted {
            if flusher == nil, state.withLock({ $0.flushedSegments + $0.segments.count > 0 }) {
                state.withLock { $0.flushLoopRunning = true }
                flusher = Task { await flushLoop() }
                // Counted beside the sending, not before it: a count walks the whole audience
                // (hundreds of milliseconds for a million-device tag) and the devices need not wait
                // for it. A restart after a crash counts again if the count had not been
                // recorded. A message sent in slices is counted by the run of its first slice only.
                if record.total == nil && slice.id == 0 { counter = Task { await recordExpectedTotal() } }
            }
            await waitForWindow()
            guard let page = await pages.next() else { break }
            let entries = page.entries
            if entries.isEmpty {
                state.withLock { $0.exhausted = true }
                break
            }
            let segments = state.withLock { state -> PageSegments in
                let segments = Self.appendSegments(
                    of: entries, size: engine.settings.flushOutcomes, to: &state)
                if entries.count < page.limit { state.exhausted = true }
                return segments
            }
            let plan = SendPlan.make(
                entries: entries, decisions: page.decisions, messageContent: record.content)
            guard await send(plan, segments: segments) else { break }
            if state.withLock({ $0.exhausted }) { break }
        }
        // Only when stopping: the prepared pages' store calls give up once the engine stops.
        await pages.drain()
        await waitForInFlight()
        // The count is only a progress estimate; the final flush records the real total.
        counter?.cancel()
        await counter?.value
        // Not task cancellation: a flush in progress must finish (the store refuses work from
        // a cancelled task).
        state.withLock { state in
            state.flusherStopped = true
            state.flushLoopRunning = false
        }
        flushSignal.signal()
        await flusher?.value
        if !hasLostLease { await flush() }
        let completed = state.withLock { $0.completionFlushed }
        if !completed, !hasLostLease, slice.leaseUntil != nil {
            // Stopping (or the lease ran out): give the slice back so another node need not wait
            // for the lease to end. Refused harmlessly when it was taken over meanwhile.
            try? await engine.store.releaseSlice(key, fence: slice.fence)
        }
        // The grants are only needed while pages may be decided (again); a stop leaves the
        // message sending, and its grants with it.
        if policy != nil, completed { engine.messageWithPolicyFinished(record.id) }
        finish()
    }

    /// Marks the message sending unless it already is; false when it was cancelled meanwhile.
    private func markStarted() async -> Bool {
        if record.state == .sending { return true }
        var started = false
        await persistently("start") {
            started = try await engine.store.startMessage(id: record.id, total: nil, at: engine.clock.now)
        }
        return started
    }

    /// Cuts a page's entries (in audience order) into segments of at most `size`.
    static func appendSegments(of entries: [AudienceEntry], size: Int, to state: inout State) -> PageSegments {
        let size = max(1, size)
        var segments = PageSegments(first: state.flushedSegments + state.segments.count, lastPositions: [])
        var start = 0
        while start < entries.count {
            let end = min(start + size, entries.count)
            let last = entries[end - 1].position
            segments.lastPositions.append(last)
            state.segments.append(Segment(lastPosition: last, size: end - start, pending: end - start))
            start = end
        }
        state.unflushedEntries += entries.count
        return segments
    }

    /// Hands a planned page to the transport in chunks as permits (requests in flight) allow, in
    /// audience order, accounting the unsent entries as the sending passes them; false when the
    /// engine began stopping.
    private func send(_ plan: SendPlan, segments: PageSegments) async -> Bool {
        // Chunks below this wait for more permits, so a busy pool is fed in batches rather
        // than one device per returned permit.
        let chunkFloor = max(1, min(engine.permits.capacity / 4, 256))
        let entries = plan.entries
        var start = 0
        var unsentAccounted = 0
        while start < entries.count {
            // Outcomes are committed as they come: while a flush fails (the database is away)
            // or commits fall behind, no more is sent, so a crash repeats little.
            await wait(for: .commitsKeepingUp(engine.settings.flushBacklog))
            let wanted = entries.count - start
            let granted = await engine.permits.acquire(atLeast: min(wanted, chunkFloor), upTo: wanted)
            if isHalted {
                engine.permits.signal(count: granted)
                keepWhatWasLaunched(plan, launched: start, unsentAccounted: unsentAccounted, segments: segments)
                return false
            }
            let end = start + granted
            // The unsent entries before the next device to launch: what the run accounted stays a
            // prefix of the page.
            let unsentEnd = end < entries.count ? plan.unsentCount(before: entries[end].position) : plan.unsent.count
            if unsentEnd > unsentAccounted {
                recordUnsent(plan.unsent[unsentAccounted..<unsentEnd], segments: segments)
                unsentAccounted = unsentEnd
            }
            let chunk = Array(entries[start..<end])
            let contents = plan.hasOwnContents ? Array(plan.contents[start..<end]) : nil
            let chunkSegments = chunk.map { segments.index(of: $0.position) }
            let channel = chunk[0].channel
            let chunkChannel = chunk.allSatisfy { $0.channel == channel } ? channel : nil
            start = end
            state.withLock { $0.inFlight += granted }
            var pushes: [OutgoingPush] = []
            pushes.reserveCapacity(granted)
            for (index, entry) in chunk.enumerated() {
                pushes.append(
                    OutgoingPush(
                        token: entry.token, environment: entry.environment, selector: entry.credentialSelector,
                        content: contents?[index] ?? content, headers: headers, channel: entry.channel,
                        deviceID: entry.deviceID))
            }
            await engine.transport.send(PushBatch(app: app, pushes: pushes)) { reports in
                self.record(reports, of: chunk, channel: chunkChannel, segments: chunkSegments, contents: contents)
            }
        }
        // A page of only unsent entries, or its unsent entries after the last device.
        if unsentAccounted < plan.unsent.count {
            recordUnsent(plan.unsent[unsentAccounted...], segments: segments)
        }
        return true
    }

    /// A run halted in the middle of a page (stopping, or its lease about to end): what it
    /// launched or accounted is a prefix of the page (`send` goes in audience order), so the
    /// segment it halted in ends after the last entry accounted and the final flush commits
    /// exactly what was sent. Left whole, that segment never finished, its launched entries'
    /// outcomes were dropped, and the next claim of the slice sent them again. The page's later
    /// segments hold nothing accounted; they stay unfinished and are not committed.
    private func keepWhatWasLaunched(_ plan: SendPlan, launched: Int, unsentAccounted: Int, segments: PageSegments) {
        let entries = plan.entries
        var unaccounted = entries[launched...].map(\.position)
        unaccounted += plan.unsent[unsentAccounted...].map(\.entry.position)
        guard let firstUnaccounted = unaccounted.min() else { return }
        let segment = segments.index(of: firstUnaccounted)
        let segmentEnd = segments.lastPositions[segment - segments.first]
        let segmentStart = segment > segments.first ? segments.lastPositions[segment - segments.first - 1] : Int64.min
        // The last entry accounted: the later of the last launched and the last unsent accounted.
        let lastLaunched = launched > 0 ? entries[launched - 1].position : Int64.min
        let lastUnsent = unsentAccounted > 0 ? plan.unsent[unsentAccounted - 1].entry.position : Int64.min
        let cut = max(lastLaunched, lastUnsent)
        let unaccountedInSegment = unaccounted.count { $0 <= segmentEnd }
        state.withLock { state in
            // The rest of the audience is not this run's to finish.
            state.exhausted = false
            // Nothing accounted in the segment: it stays whole and unfinished.
            guard cut > segmentStart else { return }
            let index = segment - state.flushedSegments
            guard state.segments.indices.contains(index) else { return }
            state.segments[index].lastPosition = cut
            state.segments[index].size -= unaccountedInSegment
            state.segments[index].pending -= unaccountedInSegment
            state.unflushedEntries -= unaccountedInSegment
        }
        flushSignal.signal()
    }

    /// Pages in audience order. With a policy, up to `decidedAhead` pages are read (in order)
    /// and decided (at once) in their own tasks while the run sends: a decision (the policy's
    /// reads and badge writes) takes longer than sending a page, and reading inline let the
    /// requests in flight drain. Without one, pages are read as the run asks for them.
    struct PageSource {
        let run: MessageRun
        var cursor: Int64
        var ahead: [PageAhead] = []
        /// The run's first page is small, so the first devices need not wait for a whole page
        /// to be read and decided (a thousand badges written, for a policy); the rest are full.
        var limit: Int

        init(run: MessageRun, cursor: Int64) {
            self.run = run
            self.cursor = cursor
            self.limit = min(run.engine.settings.pageSize, MessageRun.firstPageSize)
        }

        /// The next page, decided; nil when the engine stopped first.
        mutating func next() async -> PreparedPage? {
            let prepared: PreparedPage?
            if run.policy != nil {
                while ahead.count < MessageRun.decidedAhead {
                    ahead.append(run.pageAhead(after: ahead.last?.read, cursor: cursor, firstLimit: limit))
                }
                prepared = await ahead.removeFirst().prepared.value
            } else {
                prepared = await run.readPage(after: cursor, limit: limit).map {
                    PreparedPage(entries: $0.entries, limit: $0.limit)
                }
            }
            limit = run.engine.settings.pageSize
            if let last = prepared?.entries.last { cursor = last.position }
            return prepared
        }

        /// Waits for the pages read ahead (their store calls give up once the engine stops).
        func drain() async {
            for page in ahead { _ = await page.prepared.value }
        }
    }

    /// An audience page and, with a policy, its decisions: one per entry not already skipped,
    /// in order (nil: send the message's content to all).
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
    fileprivate func pageAhead(after previous: Task<PageRead?, Never>?, cursor: Int64, firstLimit: Int) -> PageAhead {
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

    /// The audience page after `cursor`, within the slice; nil when the run halted first. A
    /// page reaching past the slice's end is cut there and reads as the last (short) page.
    fileprivate func readPage(after cursor: Int64, limit: Int) async -> PageRead? {
        var entries: [AudienceEntry] = []
        let request = AudiencePageRequest(
            appID: record.appID, audience: record.audience, environment: record.options.environment, after: cursor,
            limit: limit, withRecipientDetails: policy != nil)
        let loaded = await persistently("read audience") {
            entries = try await engine.pageReads.submit(request)
        }
        guard loaded else { return nil }
        if let through = slice.through, let last = entries.last, last.position > through {
            entries.removeAll { $0.position > through }
            return PageRead(entries: entries, limit: entries.count + 1)
        }
        return PageRead(entries: entries, limit: limit)
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
            decisions = try await engine.policyDecisions.submit(
                PolicyDecisionRequest(
                    vendor: record.vendor, policy: policy,
                    page: PolicyPage(recipients: candidates.map(\.recipient), message: record)))
        }
        guard decided else { return nil }
        if decisions?.count != candidates.count {
            logger.error(
                "a policy answered the wrong number of decisions; skipping the page's recipients",
                metadata: [
                    "message": "\(record.id)", "vendor": "\(record.vendor)",
                    "decisions": "\(decisions?.count ?? 0)", "recipients": "\(candidates.count)",
                ])
            decisions = Array(repeating: .skip(reason: "PolicyError"), count: candidates.count)
        }
        return PreparedPage(entries: entries, decisions: decisions, limit: page.limit)
    }

    /// Counts the audience and records it as the expected total while the message is sending.
    private func recordExpectedTotal() async {
        do {
            // Every entry the run walks, those it skips `other_environment` included.
            let total = try await engine.store.audienceCount(appID: record.appID, audience: record.audience)
            try await engine.store.setExpectedTotal(id: record.id, total: total)
        } catch is CancellationError {
        } catch {
            // Only the estimate is missing (status shows no total until the message completes).
            if !Task.isCancelled {
                logger.warning(
                    "counting the audience failed", metadata: ["message": "\(record.id)", "error": "\(error)"])
            }
        }
    }

    private func finish() {
        state.withLock { state in
            state.done = true
            for waiter in state.doneWaiters { waiter.resume() }
            state.doneWaiters.removeAll()
        }
    }

    func wakeWaiter() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.pageWaiter = nil }
            return state.pageWaiter
        }
        waiter?.resume()
    }

    /// Waits until fewer than `windowPages - 1` pages' worth of entries are unflushed (so at most
    /// `windowPages` pages are once the next is read).
    private func waitForWindow() async {
        await wait(for: .window(entries: max(0, engine.settings.windowPages - 1) * engine.settings.pageSize))
    }

    private func waitForInFlight() async {
        await wait(for: .drained)
    }

    /// What a run waits for.
    enum Awaited: Sendable {
        /// At most this many entries read and not flushed.
        case window(entries: Int)
        /// Nothing in flight.
        case drained
        /// No flush failing, and fewer finished outcomes than this waiting for a commit (the
        /// flush being committed and the finished segments behind it); always, before the flush
        /// loop runs.
        case commitsKeepingUp(Int)

        func holds(in state: State) -> Bool {
            switch self {
            case .window(let entries): state.unflushedEntries <= entries
            case .drained: state.inFlight == 0
            case .commitsKeepingUp(let backlog):
                !state.flushLoopRunning || (!state.flushFailing && state.finishedUncommitted < backlog)
            }
        }
    }

    /// Suspends until `awaited` holds. It is checked and the waiter installed under the lock
    /// every change is made under, and each change wakes the waiter after it (`wakeWaiter`):
    /// no wake-up is lost, so no timer is needed — a thousand runs waiting for their answers
    /// cost no timers.
    private func wait(for awaited: Awaited) async {
        while !state.withLock({ awaited.holds(in: $0) }) {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let (resumeNow, previous) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                    if awaited.holds(in: state) { return (true, nil) }
                    let previous = state.pageWaiter
                    state.pageWaiter = continuation
                    return (false, previous)
                }
                previous?.resume()
                if resumeNow { continuation.resume() }
            }
        }
    }

    /// Retries a store operation until it succeeds or the run halts; `false` if it halted. A
    /// store that says the slice's lease was lost halts the run at once.
    @discardableResult
    func persistently(_ what: String, _ operation: () async throws -> Void) async -> Bool {
        var delay: Duration = .milliseconds(50)
        while true {
            do {
                try await operation()
                return true
            } catch let error as StoreError where error.code == .leaseLost {
                loseLease()
                return false
            } catch {
                logger.error(
                    "a store operation failed; retrying",
                    metadata: ["message": "\(record.id)", "operation": "\(what)", "error": "\(error)"])
                if engine.isStopping || hasLostLease { return false }
                try? await engine.clock.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}
