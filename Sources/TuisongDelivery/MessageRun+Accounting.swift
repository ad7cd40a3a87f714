import Foundation
import TuisongCore

/// The accounting half of a run: outcomes recorded per segment as they come (from the
/// transport's thread, under one lock per chunk) and committed segment by segment, in order, by
/// the flush loop.
extension MessageRun {
    /// Records a chunk's outcomes with one lock, returns their permits, and wakes the flusher
    /// when the oldest unflushed segment is done. `segments` holds each chunk entry's segment
    /// (run-wide index); `channel` is the chunk's one channel, nil when its devices' differ.
    func record(
        _ reports: [SendReport], of chunk: [AudienceEntry], channel: PushChannel?, segments: [Int],
        contents: [SharedContent?]?
    ) {
        let now = engine.clock.now
        let heldUntil = engine.expiry(of: record)
        // Retry dates are drawn outside the lock; most chunks have none.
        var retryDates: [Date?] = []
        for (position, report) in reports.enumerated() {
            guard case .retry(_, let hint) = report.outcome else { continue }
            if retryDates.isEmpty { retryDates = Array(repeating: nil, count: reports.count) }
            retryDates[position] = engine.nextAttempt(after: 1, message: record, hint: hint)
        }
        // A chunk of one channel (the usual case) counts its delivered pushes per segment, not
        // per push; a chunk of several counts each under its own device's.
        let requestChannels = engine.settings.serviceRequestChannels
        let keepsChunkRequests = channel.map(requestChannels.contains) ?? !requestChannels.isEmpty
        let (segmentDone, drained) = state.withLock { state -> (Bool, Bool) in
            state.inFlight -= reports.count
            let base = state.flushedSegments
            var deliveredSegment = -1
            var delivered = 0
            for (position, report) in reports.enumerated() {
                let segment = segments[report.index] - base
                // This may run on a transport's event loop thread, which also does the sending:
                // the common outcome touches neither the entry nor its content.
                if case .delivered(let requestID) = report.outcome {
                    state.segments[segment].pending -= 1
                    state.segments[segment].counts.delivered += 1
                    if keepsChunkRequests, let requestID {
                        let requestChannel = channel ?? chunk[report.index].channel
                        if requestChannels.contains(requestChannel) {
                            state.segments[segment].note(ServiceRequest(channel: requestChannel, requestID: requestID))
                        }
                    }
                    guard let channel else {
                        state.segments[segment].deliveredByChannel[chunk[report.index].channel, default: 0] += 1
                        continue
                    }
                    if segment != deliveredSegment {
                        if delivered > 0 {
                            state.segments[deliveredSegment].deliveredByChannel[channel, default: 0] += delivered
                        }
                        deliveredSegment = segment
                        delivered = 0
                    }
                    delivered += 1
                    continue
                }
                // In place (inout on the array element): a copy would duplicate the segment's arrays.
                Self.apply(
                    .outcome(report.outcome), entry: chunk[report.index], content: contents?[report.index]?.content,
                    attempted: true, retryAt: retryDates.isEmpty ? nil : retryDates[position], now: now,
                    heldUntil: heldUntil, to: &state.segments[segment])
            }
            if delivered > 0, let channel {
                state.segments[deliveredSegment].deliveredByChannel[channel, default: 0] += delivered
            }
            return (state.segments.first?.pending == 0, state.inFlight == 0)
        }
        engine.permits.signal(count: reports.count)
        if segmentDone { flushSignal.signal() }
        if segmentDone || drained { wakeWaiter() }
    }

    /// Records entries decided without sending: skipped (by the audience or the policy) or
    /// refused before sending.
    func recordUnsent(_ unsent: ArraySlice<(entry: AudienceEntry, result: EntryResult)>, segments: PageSegments) {
        let now = engine.clock.now
        let heldUntil = engine.expiry(of: record)
        let skipReasons = unsent.compactMap { unsent -> String? in
            if case .skipped(let reason) = unsent.result { return reason }
            return nil
        }
        if !skipReasons.isEmpty {
            engine.observer.skipped(Dictionary(skipReasons.map { ($0, UInt64(1)) }, uniquingKeysWith: +))
        }
        let indexes = unsent.map { segments.index(of: $0.entry.position) }
        let segmentDone = state.withLock { state -> Bool in
            let base = state.flushedSegments
            for ((entry, result), segment) in zip(unsent, indexes) {
                Self.apply(
                    result, entry: entry, content: nil, attempted: false, retryAt: nil, now: now,
                    heldUntil: heldUntil, to: &state.segments[segment - base])
            }
            return state.segments.first?.pending == 0
        }
        if segmentDone {
            flushSignal.signal()
            wakeWaiter()
        }
    }

    private static func apply(
        _ result: EntryResult, entry: AudienceEntry, content: PushContent?, attempted: Bool, retryAt: Date?, now: Date,
        heldUntil: Date, to results: inout Segment
    ) {
        results.pending -= 1
        func row(_ s: DeliveryState, _ reason: String?, serviceMessageID: String? = nil, next: Date? = nil) {
            results.deliveries.append(
                NewDelivery(
                    deviceID: entry.deviceID, token: entry.token, environment: entry.environment, state: s,
                    reason: reason, serviceMessageID: serviceMessageID, attempts: attempted ? 1 : 0,
                    nextAttemptAt: next,
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

    /// Flushes when the oldest unflushed segment finishes, and every `flushInterval` regardless:
    /// whichever comes first, `flushOutcomes` outcomes or `flushInterval`. A flush takes every
    /// finished segment at the front, so while one commits the next gathers what comes meanwhile
    /// (flushes stay batched however fast outcomes come).
    func flushLoop() async {
        while true {
            await flushSignal.wait(
                until: engine.clock.now + engine.settings.flushInterval.timeInterval, on: engine.clock)
            if state.withLock({ $0.flusherStopped }) { return }
            await flush()
        }
    }

    /// Commits every leading segment whose entries all have outcomes.
    func flush() async {
        let progress = state.withLock { state -> MessageProgress? in
            var end = 0
            while end < state.segments.count, state.segments[end].pending == 0 { end += 1 }
            let finishing =
                !state.completionFlushed && state.exhausted && end == state.segments.count && state.inFlight == 0
            guard end > 0 || finishing else { return nil }
            var progress = MessageProgress(messageID: record.id, cursor: state.flushedCursor, slice: slice)
            var entries = 0
            for segment in state.segments[..<end] {
                progress.cursor = segment.lastPosition
                entries += segment.size
                for s in DeliveryState.allCases { progress.counts[s] += segment.counts[s] }
                for (reason, n) in segment.failures { progress.failures[reason, default: 0] += n }
                for (reason, n) in segment.skips { progress.skips[reason, default: 0] += n }
                progress.deliveries += segment.deliveries
                progress.invalidations += segment.invalidations
                for (channel, n) in segment.deliveredByChannel {
                    progress.deliveredByChannel[channel, default: 0] += n
                }
                progress.serviceRequests += segment.serviceRequests
            }
            state.segments.removeFirst(end)
            state.flushedSegments += end
            state.flushedCursor = progress.cursor
            state.unflushedEntries -= entries
            state.committingEntries = entries
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
        let committed = await commit(progress)
        state.withLock { state in
            state.flushing = nil
            state.committingEntries = 0
            state.flushFailing = false
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

extension MessageRun {
    /// Commits a flush (with whatever other runs flush meanwhile, in one transaction), retrying
    /// while the database cannot take it, backing off from 50 ms to `flushRetryMax`, until it
    /// lands, the slice is found taken over (`leaseLost`: another node sends it now, its outcomes
    /// are not this node's to count) or the engine stops. Meanwhile the run launches no sends
    /// (`flushFailing`), so what a crash in the outage would repeat stays this flush and what was
    /// in flight. A lease that ended meanwhile does not stop the retries: the store still takes
    /// the flush if no other node claimed the slice since.
    func commit(_ progress: MessageProgress) async -> Bool {
        var delay: Duration = .milliseconds(50)
        var failures = 0
        while true {
            do {
                try await engine.progressCommits.submit(progress)
                if failures > 0 {
                    logger.notice(
                        "a flush went through after failing",
                        metadata: ["message": "\(record.id)", "slice": "\(slice.id)", "attempts": "\(failures + 1)"])
                }
                return true
            } catch let error as StoreError where error.code == .leaseLost {
                loseLease()
                return false
            } catch {
                failures += 1
                state.withLock { $0.flushFailing = true }
                logger.error(
                    "recording progress failed; retrying, and sending nothing more meanwhile",
                    metadata: ["message": "\(record.id)", "slice": "\(slice.id)", "error": "\(error)"])
                if engine.isStopping || hasLostLease { return false }
                try? await engine.clock.sleep(for: delay)
                delay = min(delay * 2, engine.settings.flushRetryMax)
            }
        }
    }
}
