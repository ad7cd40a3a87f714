import Foundation
import Synchronization
import TuisongCore

/// Admission: an app whose backlog — messages accepted and not yet sent through (queued, or
/// sending) — reached `bound` has its pushes refused (`BacklogFull`, which each API answers
/// with 429 or its vendor's frequency-limit code and `Retry-After`) until the backlog drains,
/// rather than queueing minutes of work nobody waits for.
///
/// Known cheaply on every accept: the store's count (`WorkQueue.backlog`, an index of pending
/// messages by app, read up to `bound`) is kept per app for `recount`, and what this node accepts
/// meanwhile is added to it. So one node is refused at the bound at once; with several nodes on
/// one PostgreSQL database each adds only its own accepts between recounts, and the app may
/// pass the bound by what the other nodes accept in one `recount`. Messages sent in the
/// meantime are seen at the next recount (an app just under the bound may wait that long).
final class BacklogAdmission: Sendable {
    private struct Count {
        /// The store's count when last read, plus this node's accepts since.
        var backlog: Int
        var countedAt: ContinuousClock.Instant
        var recounting = false
    }

    /// 0: no bound.
    let bound: Int
    let recount: Duration
    /// What a refused client is told to wait: the backlog is recounted by then.
    var retryAfterSeconds: Int {
        max(1, Int(recount.components.seconds) + (recount.components.attoseconds > 0 ? 1 : 0))
    }
    private let store: any WorkQueue
    private let counts = Mutex<[Int64: Count]>([:])

    init(bound: Int, recount: Duration, store: any WorkQueue) {
        self.bound = bound
        self.recount = recount
        self.store = store
    }

    /// Throws `BacklogFull` when the app's backlog is at the bound. One caller at a time reads
    /// the store for an app whose count is stale; the others go by the stale count meanwhile.
    func admit(appID: Int64) async throws {
        guard bound > 0 else { return }
        let now = ContinuousClock.now
        let recount = self.recount
        let (known, mustRecount) = counts.withLock { counts -> (Int?, Bool) in
            guard var count = counts[appID] else {
                counts[appID] = Count(backlog: 0, countedAt: now, recounting: true)
                return (nil, true)
            }
            guard now >= count.countedAt + recount, !count.recounting else { return (count.backlog, false) }
            count.recounting = true
            counts[appID] = count
            return (count.backlog, true)
        }
        var backlog = known ?? 0
        if mustRecount {
            do {
                let counted = try await store.backlog(appID: appID, upTo: bound)
                backlog = counted
                counts.withLock { counts in
                    // Accepts that landed while the count was read are in it, or will be in the
                    // next one: the count read is the better figure either way.
                    counts[appID] = Count(backlog: counted, countedAt: now)
                }
            } catch {
                counts.withLock { counts in
                    if known == nil { counts[appID] = nil } else { counts[appID]?.recounting = false }
                }
                // Not knowing the backlog refuses nothing: the accept that follows meets the
                // store's own trouble, if any, and says so.
                if known == nil { return }
            }
        }
        guard backlog >= bound else { return }
        throw BacklogFull(appID: appID, backlog: backlog, bound: bound, retryAfterSeconds: retryAfterSeconds)
    }

    /// A message of the app was accepted on this node.
    func accepted(appID: Int64) {
        guard bound > 0 else { return }
        counts.withLock { counts in
            if counts[appID] != nil { counts[appID]?.backlog += 1 }
        }
    }
}
