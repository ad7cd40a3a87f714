import Dispatch
import Foundation
import GRDB
import Synchronization
import TuisongSQLStore

/// Copies the WAL back into the database file from a connection of its own, so that the
/// writer rarely has to.
///
/// SQLite checkpoints automatically at the end of a commit once the WAL holds
/// `wal_autocheckpoint` pages: the committing connection copies every frame into the database
/// file and syncs both files before its COMMIT returns. Under a stream of group commits
/// that stall lands on the single writer, and every caller waiting on the batch waits for
/// the disk too. Here a PASSIVE checkpoint (which never blocks readers or the writer) runs
/// on a separate connection and queue shortly after commits, so the bulk of the copying and
/// syncing overlaps with the writer's work. The writer's own automatic checkpoint stays on:
/// it then finds almost everything already copied, and only it (running between two of its
/// transactions) can let SQLite restart the WAL from the beginning.
final class WALCheckpointer: Sendable {
    private struct State {
        var running = false
        var stopped = false
        var lastFinished = ContinuousClock.now
    }

    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "tuisong.store.checkpoint", qos: .utility)
    private let minimumInterval: Duration
    private let state = Mutex(State())

    init(path: String, busyTimeout: TimeInterval, minimumInterval: Duration = .milliseconds(50))
        throws
    {
        var configuration = Configuration()
        configuration.label = "tuisong.store.checkpoint"
        configuration.busyMode = .timeout(busyTimeout)
        // The pool has already put the file in WAL mode; this connection leaves it alone.
        configuration.journalMode = .default
        connection = try DatabaseQueue(path: path, configuration: configuration)
        self.minimumInterval = minimumInterval
    }

    /// Called after each commit; schedules a checkpoint unless one is running or one
    /// finished less than `minimumInterval` ago.
    func noteCommit() {
        let mustRun = state.withLock { state in
            if state.running || state.stopped { return false }
            if ContinuousClock.now - state.lastFinished < minimumInterval { return false }
            state.running = true
            return true
        }
        guard mustRun else { return }
        queue.async {
            // A failure (busy, I/O) only means this round copied less; the next commit
            // schedules another, and the writer's automatic checkpoint remains.
            _ = try? self.connection.writeWithoutTransaction { try $0.checkpoint(.passive) }
            self.state.withLock { state in
                state.running = false
                state.lastFinished = .now
            }
        }
    }

    /// Stops scheduling, waits for a running checkpoint and closes the connection.
    func close() throws {
        state.withLock { $0.stopped = true }
        queue.sync {}
        try connection.close()
    }
}
