import Foundation
import Synchronization
import TuisongCore
import TuisongSQLStore

/// SQLite's work queue: one dispatcher per database file. The process holding the file's
/// dispatcher lock (an exclusive `flock` on `<database>-dispatcher.lock`, which the kernel
/// drops when the process dies) sends every message whole, as one slice without a lease; a
/// second process on the same file (another `serve`, started by mistake or during a restart)
/// serves the APIs but claims nothing, and takes over when the first one exits.
extension SQLiteStore: WorkQueue {
    /// Claims up to `limit` messages in as few statements as there are kinds of work: first
    /// those an earlier dispatcher left `sending` (a crash, a stop, another process), walked in
    /// id order once after this process becomes the dispatcher; then due ones, marked `sending`
    /// and read back by one `UPDATE … RETURNING`, so a thousand chat messages are claimed in one
    /// write, and a message this process runs is never listed again.
    /// SQLite sends every message whole: `sliceLimit` has nothing to bound.
    public func claimWork(now: Date, limit: Int, sliceLimit: Int, running: Set<MessageSliceKey>) async throws
        -> [WorkClaim]
    {
        guard limit > 0 else { return [] }
        let role = dispatcherLock.acquire()
        guard role.held else { return [] }
        if role.newlyAcquired {
            _ = try await requeueSendingDeliveries()
            sendingRecovery.withLock { $0 = 0 }
        }
        var records: [MessageRecord] = []
        if let after = sendingRecovery.withLock({ $0 }) {
            let left = try await sendingMessages(after: after, limit: limit)
            sendingRecovery.withLock { $0 = left.count < limit ? nil : left.last?.id }
            records += left.filter { !running.contains(MessageSliceKey(messageID: $0.id, slice: 0)) }
        }
        if records.count < limit {
            records += try await claimDueMessages(now: now, limit: limit - records.count)
        }
        return records.map { WorkClaim(record: $0, slice: .whole(after: $0.cursor)) }
    }

    public func renewLeases(_ slices: [MessageSliceKey: Int64], now: Date) async throws -> (
        held: Set<MessageSliceKey>, until: Date?
    ) {
        (Set(slices.keys), nil)
    }

    public func releaseSlice(_ key: MessageSliceKey, fence: Int64) async throws {}

    public func liveNodeCount() async throws -> Int { 1 }

    /// Whether this process is the file's dispatcher (taking the role if it is free).
    public var isDispatcher: Bool { dispatcherLock.acquire().held }
}

extension MessageRecord {
    /// Whether a dispatcher may (re)start it now.
    public func isDispatchable(at now: Date) -> Bool {
        state == .queued || state == .sending || (state == .scheduled && (sendAt ?? .distantPast) <= now)
    }
}

/// An exclusive, non-blocking `flock` on a file beside the database, taken on first success
/// and held until `release` (or the process's end).
final class DispatcherLock: Sendable {
    let path: String
    private let descriptor = Mutex<Int32>(-1)

    init(databasePath: String) {
        path = databasePath + "-dispatcher.lock"
    }

    /// `held`: this store is the dispatcher; `newlyAcquired`: it became so on this call.
    func acquire() -> (held: Bool, newlyAcquired: Bool) {
        descriptor.withLock { fd in
            if fd >= 0 { return (true, false) }
            let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard opened >= 0 else { return (false, false) }
            guard flock(opened, LOCK_EX | LOCK_NB) == 0 else {
                close(opened)
                return (false, false)
            }
            fd = opened
            return (true, true)
        }
    }

    /// Whether this process holds the role now (without trying to take it).
    var isHeld: Bool { descriptor.withLock { $0 >= 0 } }

    func release() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
    }
}

extension SQLiteStore: GatewayStore {}
