import Foundation
import TuisongCore

/// The accounting half of a run: outcomes recorded per page as they come (from the transport's
/// thread, under one lock per chunk) and committed page by page, in order, by the flush loop.
extension MessageRun {
    /// Records a chunk's outcomes with one lock, returns their permits, and wakes the flusher
    /// when the oldest unflushed page is done.
    func record(_ reports: [SendReport], of chunk: [AudienceEntry], contents: [SharedContent?]?, page: Int) {
        let now = engine.clock.now
        let heldUntil = engine.expiry(of: record)
        // Retry dates are drawn outside the lock; most chunks have none.
        var retryDates: [Date?] = []
        for (position, report) in reports.enumerated() {
            guard case .retry(_, let hint) = report.outcome else { continue }
            if retryDates.isEmpty { retryDates = Array(repeating: nil, count: reports.count) }
            retryDates[position] = engine.nextAttempt(after: 1, message: record, hint: hint)
        }
        let (pageDone, drained) = state.withLock { state -> (Bool, Bool) in
            state.inFlight -= reports.count
            var delivered = 0
            for (position, report) in reports.enumerated() {
                // This runs on the APNs pool's event loop thread, which also does the sending:
                // the common outcome touches neither the entry nor its content.
                if case .delivered = report.outcome {
                    state.pages[page].pending -= 1
                    state.pages[page].counts.delivered += 1
                    delivered += 1
                    continue
                }
                // In place (inout on the array element): a copy would duplicate the page's arrays.
                Self.apply(
                    .outcome(report.outcome), entry: chunk[report.index], content: contents?[report.index]?.content,
                    attempted: true, retryAt: retryDates.isEmpty ? nil : retryDates[position], now: now,
                    heldUntil: heldUntil, to: &state.pages[page])
            }
            // A chunk is one plan group, so one channel: counted once, not per push.
            if delivered > 0, let channel = chunk.first?.channel {
                state.pages[page].deliveredByChannel[channel, default: 0] += delivered
            }
            return (page == state.flushedPages && state.pages[page].pending == 0, state.inFlight == 0)
        }
        engine.permits.signal(count: reports.count)
        if pageDone { flushSignal.signal() }
        if pageDone || drained { wakeWaiter() }
    }

    /// Records entries decided without sending: skipped (by the audience or the policy) or
    /// refused before sending.
    func recordUnsent(_ unsent: [(entry: AudienceEntry, result: EntryResult)], page: Int) {
        let now = engine.clock.now
        let heldUntil = engine.expiry(of: record)
        let skipReasons = unsent.compactMap { unsent -> String? in
            if case .skipped(let reason) = unsent.result { return reason }
            return nil
        }
        if !skipReasons.isEmpty {
            engine.observer.skipped(Dictionary(skipReasons.map { ($0, UInt64(1)) }, uniquingKeysWith: +))
        }
        let pageDone = state.withLock { state -> Bool in
            for (entry, result) in unsent {
                Self.apply(
                    result, entry: entry, content: nil, attempted: false, retryAt: nil, now: now,
                    heldUntil: heldUntil, to: &state.pages[page])
            }
            return page == state.flushedPages && state.pages[page].pending == 0
        }
        if pageDone {
            flushSignal.signal()
            wakeWaiter()
        }
    }

    private static func apply(
        _ result: EntryResult, entry: AudienceEntry, content: PushContent?, attempted: Bool, retryAt: Date?, now: Date,
        heldUntil: Date, to results: inout PageResults
    ) {
        results.pending -= 1
        func row(_ s: DeliveryState, _ reason: String?, apnsID: String? = nil, next: Date? = nil) {
            results.deliveries.append(
                NewDelivery(
                    deviceID: entry.deviceID, token: entry.token, environment: entry.environment, state: s,
                    reason: reason, apnsID: apnsID, attempts: attempted ? 1 : 0, nextAttemptAt: next,
                    content: content, credentialSelector: entry.credentialSelector, channel: entry.channel))
        }
        switch result {
        case .skipped(let reason):
            results.counts.skipped += 1
            results.skips[reason, default: 0] += 1
            row(.skipped, reason)
        case .outcome(.delivered):
            results.counts.delivered += 1
            results.deliveredByChannel[entry.channel, default: 0] += 1
        case .outcome(.invalidate(let typed, let since)):
            let reason = typed.description
            results.counts.failed += 1
            results.failures[reason, default: 0] += 1
            row(.failed, reason)
            if let deviceID = entry.deviceID {
                results.invalidations.append(DeviceInvalidation(deviceID: deviceID, reason: reason, at: since ?? now))
            }
        case .outcome(.retry(let typed, _)):
            let reason = typed.description
            if let retryAt {
                results.counts.queued += 1
                row(.queued, reason, next: retryAt)
            } else {
                results.counts.failed += 1
                results.failures[reason, default: 0] += 1
                row(.failed, reason)
            }
        case .outcome(.held(let typed)):
            // Held until the message expires; a credential added before then releases it.
            results.counts.held += 1
            row(.held, typed.description, next: heldUntil)
        case .outcome(.skipped(let typed)):
            let reason = typed.description
            results.counts.skipped += 1
            results.skips[reason, default: 0] += 1
            row(.skipped, reason)
        case .outcome(.failed(let typed)):
            let reason = typed.description
            results.counts.failed += 1
            results.failures[reason, default: 0] += 1
            row(.failed, reason)
        }
    }

    /// Flushes when the oldest unflushed page finishes, and every `flushInterval` regardless.
    func flushLoop() async {
        while true {
            await flushSignal.wait(timeout: engine.settings.flushInterval)
            if state.withLock({ $0.flusherStopped }) { return }
            await flush()
        }
    }

    /// Commits every leading page whose entries all have outcomes.
    func flush() async {
        let progress = state.withLock { state -> MessageProgress? in
            var end = state.flushedPages
            while end < state.pages.count, state.pages[end].pending == 0 { end += 1 }
            let finishing =
                !state.completionFlushed && state.exhausted && end == state.pages.count && state.inFlight == 0
            guard end > state.flushedPages || finishing else { return nil }
            var progress = MessageProgress(messageID: record.id, cursor: slice.after, slice: slice)
            if state.flushedPages > 0 { progress.cursor = state.pages[state.flushedPages - 1].lastPosition }
            for index in state.flushedPages..<end {
                let page = state.pages[index]
                progress.cursor = page.lastPosition
                for s in DeliveryState.allCases { progress.counts[s] += page.counts[s] }
                for (reason, n) in page.failures { progress.failures[reason, default: 0] += n }
                for (reason, n) in page.skips { progress.skips[reason, default: 0] += n }
                progress.deliveries += page.deliveries
                progress.invalidations += page.invalidations
                for (channel, n) in page.deliveredByChannel { progress.deliveredByChannel[channel, default: 0] += n }
                state.pages[index] = PageResults(lastPosition: page.lastPosition, pending: 0)
            }
            state.flushedPages = end
            state.flushing = Tally(
                lastPosition: progress.cursor, counts: progress.counts, failures: progress.failures,
                skips: progress.skips)
            if finishing {
                progress.finalState = .completed
                state.completionFlushed = true
            }
            return progress
        }
        guard let progress else { return }
        // Committed with whatever other runs flush meanwhile, in one transaction.
        let committed = await persistently("record progress") {
            try await engine.progressCommits.submit(progress)
        }
        state.withLock { state in
            state.flushing = nil
            if committed, progress.finalState != nil { state.completionCommitted = true }
        }
        if progress.counts.queued > 0 { engine.wake() }
        if committed, progress.counts.held > 0 {
            let appID = record.appID
            engine.heldCommitted(
                Set(
                    progress.deliveries.lazy.filter { $0.state == .held }.compactMap {
                        HeldRoute.of(
                            appID: appID, channel: $0.channel, environment: $0.environment,
                            selector: $0.credentialSelector, reason: $0.reason)
                    }))
        }
        wakeWaiter()
    }
}
