import Foundation
import Synchronization
import TuisongCore

/// The messages this node claimed as it stored them (`PostgresStore.createMessage`), waiting
/// for its dispatcher (`claimWork`).
///
/// A message sent whole (one slice: a chat line, a push to a few listed tokens, devices or
/// accounts) that is due at once is stored sending, with its one slice already claimed by the
/// node that accepts it, in the statement that inserts it: nothing has to plan it and nothing
/// has to claim it, which were two statements, a second write of the message row (sending)
/// and one of its slice (the claim) a message — on PostgreSQL a third of the server's work a
/// chat line (issue #47). The claim is durable as the message is: should the node die, its
/// lease ends and another node takes the slice over, as any claimed slice.
///
/// Only while a dispatcher claims on this store (`open`, at its first claim) and until it
/// stops (`close`): a store nobody claims from (a process that only accepts) leaves its
/// messages queued for the nodes that send. At most `limit` wait: beyond, a message is stored
/// queued and any node may claim it, so a node whose accepts outrun its sends shares them.
final class AcceptedClaims: Sendable {
    let limit: Int
    private struct State {
        var open = false
        /// Claims reserved by a `createMessage` whose insert has not answered yet.
        var reserved = 0
        /// In the order they were accepted.
        var waiting: [WorkClaim] = []
    }
    private let state = Mutex(State())

    init(limit: Int = 4_096) {
        self.limit = max(1, limit)
    }

    /// Opened at a dispatcher's first claim.
    func open() {
        state.withLock { $0.open = true }
    }

    /// Whether a message about to be stored may be claimed with it: true holds a place until
    /// `add` or `cancelReservation`.
    func reserve() -> Bool {
        state.withLock { state in
            guard state.open, state.reserved + state.waiting.count < limit else { return false }
            state.reserved += 1
            return true
        }
    }

    /// The insert failed: the place goes back.
    func cancelReservation() {
        state.withLock { $0.reserved = max(0, $0.reserved - 1) }
    }

    /// A claimed message, stored. False when the dispatcher stopped meanwhile: the caller gives
    /// the slice back.
    func add(_ claim: WorkClaim) -> Bool {
        state.withLock { state in
            state.reserved = max(0, state.reserved - 1)
            guard state.open else { return false }
            state.waiting.append(claim)
            return true
        }
    }

    var count: Int { state.withLock { $0.waiting.count } }

    /// Up to `limit` waiting claims, fairly across apps as the database's claim takes them: an
    /// app's n-th waiting message has turn n plus the app's messages running (`running`), the
    /// lowest turns go first, and among equal turns the oldest.
    func take(limit: Int, running: [Int64: Int64]) -> [WorkClaim] {
        guard limit > 0 else { return [] }
        return state.withLock { state in
            guard !state.waiting.isEmpty else { return [] }
            if state.waiting.count <= limit {
                defer { state.waiting.removeAll(keepingCapacity: true) }
                return state.waiting
            }
            var seen: [Int64: Int64] = [:]
            var turns: [(turn: Int64, index: Int)] = []
            turns.reserveCapacity(state.waiting.count)
            for (index, claim) in state.waiting.enumerated() {
                let app = claim.record.appID
                let nth = (seen[app] ?? 0) + 1
                seen[app] = nth
                turns.append(((running[app] ?? 0) + nth, index))
            }
            let picked = Set(turns.sorted { ($0.turn, $0.index) < ($1.turn, $1.index) }.prefix(limit).map(\.index))
            var taken: [WorkClaim] = []
            var left: [WorkClaim] = []
            taken.reserveCapacity(limit)
            for (index, claim) in state.waiting.enumerated() {
                if picked.contains(index) { taken.append(claim) } else { left.append(claim) }
            }
            state.waiting = left
            return taken
        }
    }

    /// The waiting claims' slices and fences, for the renewal of their leases.
    var fences: [MessageSliceKey: Int64] {
        state.withLock { state in
            Dictionary(
                state.waiting.map { (MessageSliceKey(messageID: $0.record.id, slice: $0.slice.id), $0.slice.fence) },
                uniquingKeysWith: { first, _ in first })
        }
    }

    /// After a renewal of `asked`: a waiting claim still held has its lease until `until`; one
    /// not held (taken over) is dropped. Claims added since the renewal began are left as they are.
    func renewed(asked: Set<MessageSliceKey>, held: Set<MessageSliceKey>, until: Date?) {
        state.withLock { state in
            state.waiting = state.waiting.compactMap { claim in
                let key = MessageSliceKey(messageID: claim.record.id, slice: claim.slice.id)
                guard asked.contains(key) else { return claim }
                guard held.contains(key) else { return nil }
                var claim = claim
                if let until { claim.slice.leaseUntil = until }
                return claim
            }
        }
    }

    /// The dispatcher stopped: no more claims at acceptance; the waiting ones, to give back.
    func close() -> [WorkClaim] {
        state.withLock { state in
            state.open = false
            defer { state.waiting.removeAll() }
            return state.waiting
        }
    }
}
