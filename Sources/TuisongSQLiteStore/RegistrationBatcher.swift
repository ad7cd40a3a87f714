import GRDB
import Synchronization
import TuisongCore
import TuisongSQLStore

/// Group commit for device registrations.
///
/// A commit costs far more than one upsert, so a transaction per registration caps the
/// gateway at a few thousand registrations per second. Instead, concurrent `submit` calls
/// queue their registration here; one flush at a time runs on GRDB's writer queue and
/// commits everything queued (up to `maximumBatchSize`) in a single transaction, then
/// resumes every caller with its own result. While a flush runs, new registrations pile up
/// and go into the next one, so batches grow exactly as much as the load requires and a
/// lone registration is committed at once.
///
/// Each registration runs inside its own savepoint: one that fails (an unknown app, a
/// value the schema refuses) is rolled back alone and its caller gets its own error, while
/// the others commit. Only a failure of the transaction itself (commit, I/O, busy) fails
/// the whole batch — and then none of it was committed, so every caller is told so.
final class RegistrationBatcher: Sendable {
    typealias Outcome = (device: Device, created: Bool)

    /// One registration, applied inside the open transaction on the writer connection.
    typealias Apply =
        @Sendable (_ db: Database, _ appID: Int64, _ registration: DeviceRegistration, _ now: Int64)
        throws -> Outcome

    private struct Request {
        let appID: Int64
        let registration: DeviceRegistration
        let continuation: CheckedContinuation<Outcome, any Error>
    }

    private struct State {
        var pending: [Request] = []
        /// True from the moment a flush is handed to the writer queue until a flush finds
        /// nothing left to do. At most one flush is ever queued or running.
        var flushScheduled = false
    }

    private let writer: DatabasePool
    private let maximumBatchSize: Int
    private let clock: any TuisongCore.Clock
    private let apply: Apply
    /// Runs on the writer queue after each committed batch (the store nudges its
    /// background checkpointer there).
    private let afterCommit: @Sendable () -> Void
    /// Told every batch's outcome, so a full disk met by registrations shows on `/healthz`.
    private let health: StoreHealth
    private let state = Mutex(State())

    init(
        writer: DatabasePool, maximumBatchSize: Int, clock: any TuisongCore.Clock,
        apply: @escaping Apply, health: StoreHealth, afterCommit: @escaping @Sendable () -> Void
    ) {
        self.afterCommit = afterCommit
        self.health = health
        self.writer = writer
        self.maximumBatchSize = max(1, maximumBatchSize)
        self.clock = clock
        self.apply = apply
    }

    /// Queues one registration and returns once the transaction holding it has committed.
    func submit(appID: Int64, _ registration: DeviceRegistration) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            let request = Request(
                appID: appID, registration: registration, continuation: continuation)
            let mustSchedule = state.withLock { state in
                state.pending.append(request)
                if state.flushScheduled { return false }
                state.flushScheduled = true
                return true
            }
            if mustSchedule { scheduleFlush() }
        }
    }

    private func scheduleFlush() {
        // Going through the writer queue (rather than looping here) lets other writes,
        // queued meanwhile, run between two batches.
        writer.asyncWriteWithoutTransaction { db in self.flush(db) }
    }

    private func flush(_ db: Database) {
        let batch = state.withLock { state -> [Request] in
            if state.pending.count <= maximumBatchSize {
                defer { state.pending = [] }
                return state.pending
            }
            let head = Array(state.pending.prefix(maximumBatchSize))
            state.pending.removeFirst(maximumBatchSize)
            return head
        }

        var outcomes = [Result<Outcome, any Error>]()
        outcomes.reserveCapacity(batch.count)
        do {
            let now = SQLTime.milliseconds(clock.now)
            try db.inTransaction(.immediate) {
                // Prepared once per connection: `db.inSavepoint` would parse its SQL for
                // every item, a noticeable share of the cost of one registration.
                let begin = try db.cachedStatement(sql: "SAVEPOINT registration")
                let release = try db.cachedStatement(sql: "RELEASE registration")
                let rollback = try db.cachedStatement(sql: "ROLLBACK TO registration")
                for request in batch {
                    try begin.execute()
                    do {
                        let outcome = try apply(db, request.appID, request.registration, now)
                        try release.execute()
                        outcomes.append(.success(outcome))
                    } catch {
                        // Some errors (I/O, full disk) make SQLite roll back the whole
                        // transaction; then nothing of this batch survives.
                        guard db.isInsideTransaction else { throw error }
                        try rollback.execute()
                        try release.execute()
                        let mapped = ErrorMapping.storeError(error)
                        health.noteFailure(mapped)
                        outcomes.append(.failure(mapped))
                    }
                }
                return .commit
            }
            afterCommit()
            health.noteSuccess()
        } catch {
            let failure = ErrorMapping.storeError(error)
            health.noteFailure(failure)
            outcomes = batch.map { _ in .failure(failure) }
        }

        for (request, outcome) in zip(batch, outcomes) {
            request.continuation.resume(with: outcome)
        }

        let mustSchedule = state.withLock { state in
            if state.pending.isEmpty {
                state.flushScheduled = false
                return false
            }
            return true
        }
        if mustSchedule { scheduleFlush() }
    }
}
