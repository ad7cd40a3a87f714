import Foundation
import Synchronization
import TuisongCore

/// SQLite's work queue: one dispatcher per database file. The process holding the file's
/// dispatcher lock (an exclusive `flock` on `<database>-dispatcher.lock`, which the kernel
/// drops when the process dies) sends every message whole, as one slice without a lease; a
/// second process on the same file (another `serve`, started by mistake or during a restart)
/// serves the APIs but claims nothing, and takes over when the first one exits.
extension SQLiteStore: WorkQueue {
    public func claimWork(now: Date, limit: Int, running: Set<MessageSliceKey>) async throws -> [WorkClaim] {
        guard limit > 0 else { return [] }
        let role = dispatcherLock.acquire()
        guard role.held else { return [] }
        if role.newlyAcquired { _ = try await requeueSending() }
        var claims: [WorkClaim] = []
        for id in try await dispatchableMessageIDs(now: now) {
            guard claims.count < limit, !running.contains(MessageSliceKey(messageID: id, slice: 0)) else { continue }
            // Read after the listing: a message that finished since is not started again from a
            // stale cursor.
            guard let record = try await message(id: id), record.isDispatchable(at: now) else { continue }
            claims.append(WorkClaim(record: record, slice: .whole(after: record.cursor)))
        }
        return claims
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

    func release() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
    }
}

extension SQLiteStore: GatewayStore {
    /// `PRAGMA optimize`: SQLite runs ANALYZE where its statistics would help.
    public func refreshStatistics() async throws {
        try await write { db in try db.execute(sql: "PRAGMA optimize") }
    }
}
