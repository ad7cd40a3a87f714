import Foundation
import Synchronization
import TuisongCore
import TuisongPostgres

/// The planner's statistics of the work-queue tables, kept current while a burst fills them.
///
/// Autovacuum analyzes a table once enough of it changed, but looks at most once per
/// `autovacuum_naptime` (a minute by default). Until then every plan is made from statistics of
/// the queue as it was — on a new database, or after a quiet night, an empty one — and some plans
/// outlive the burst's start: each connection keeps the generic plan it made for a prepared
/// statement after five uses, and the foreign-key checks of `INSERT INTO message_slices` theirs.
/// Measured (issue #47, `bench/messages.sh`, one node, 150 ms, 10,000 chat lines): the key
/// check read the whole `messages` table for each new slice (84 ms at 10,000 rows), the claim's
/// cached plan read every slice for each message; 278–400 messages/s, against 723/s with the
/// same build when the tables were analyzed every two seconds from outside.
///
/// So each node, at most once a second while it claims, analyzes the queue tables that changed
/// by more than their own size (plus 1,000 rows) since they were last analyzed: a few times
/// while a new database fills, every few minutes on a large one. `ANALYZE` invalidates every
/// connection's cached plans on the table, which are then made again from what is there. One
/// node at a time (an advisory lock); a table autovacuum is busy with is skipped (`SKIP_LOCKED`),
/// and a table this role does not own is left to autovacuum.
final class QueueStatisticsKeeper: Sendable {
    /// The tables a chat burst moves rows through fastest: messages and their slices, and the
    /// IM vendors' badge grants (one row per message and account, inserted and deleted at the
    /// chat rate as the messages are). Under a Tencent chat load the badge sweeper's seeks cost
    /// 2.3 ms before these three were analyzed, 0.58 ms after — which table's statistics did
    /// it was not measured apart; the rest was the seek's own `EXISTS`, since rewritten.
    static let tables = ["messages", "message_slices", "badge_grants"]
    /// Seconds between checks.
    static let interval: TimeInterval = 1
    /// Changes beyond the table's size after which it is analyzed again.
    static let slack = 1_000
    /// `pg_try_advisory_xact_lock`'s key: "tsqstats".
    static let lockKey: Int64 = 0x7473_7173_7461_7473

    private let state = Mutex<(next: Date?, running: Bool)>((nil, false))

    /// Starts `check` on its own task when a check is due at `now` and none is running.
    func startIfDue(now: Date, _ check: @escaping @Sendable () async -> Void) {
        let due = state.withLock { state -> Bool in
            if state.running { return false }
            if let next = state.next, next > now { return false }
            state = (now.addingTimeInterval(Self.interval), true)
            return true
        }
        guard due else { return }
        Task.detached(priority: .utility) { [self] in
            await check()
            state.withLock { $0.running = false }
        }
    }
}

extension PostgresStore {
    /// Analyzes the queue tables whose statistics are stale (`QueueStatisticsKeeper`); returns
    /// their names. Nothing when another node holds the lock.
    func analyzeStaleQueueTables() async throws -> [String] {
        do {
            return try await pool.transaction { conn -> [String] in
                let locked =
                    try conn.run(
                        "SELECT pg_try_advisory_xact_lock(\(QueueStatisticsKeeper.lockKey))"
                    ).rows.first?[0].bool ?? false
                guard locked else { return [] }
                let stale = Set(
                    try conn.run(
                        """
                        SELECT c.relname FROM pg_class c JOIN pg_stat_user_tables t ON t.relid = c.oid
                        WHERE c.oid = ANY(ARRAY[\(raw: QueueStatisticsKeeper.tables.map { "'\($0)'::regclass" }.joined(separator: ", "))])
                            AND t.n_mod_since_analyze > \(Int64(QueueStatisticsKeeper.slack)) + greatest(c.reltuples, 0)
                            AND pg_has_role(c.relowner, 'USAGE')
                        """
                    ).rows.map { $0.string(0) })
                let analyzed = QueueStatisticsKeeper.tables.filter(stale.contains)
                for table in analyzed {
                    try conn.run("ANALYZE (SKIP_LOCKED) \(raw: table)")
                }
                return analyzed
            }
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Runs `analyzeStaleQueueTables` in the background when a check is due.
    func keepQueueStatistics(now: Date) {
        queueStatistics.startIfDue(now: now) { [self] in
            do {
                let analyzed = try await analyzeStaleQueueTables()
                if !analyzed.isEmpty { logger.debug("analyzed \(analyzed.joined(separator: ", "))") }
            } catch {
                logger.debug("queue statistics not analyzed: \(error)")
            }
        }
    }
}
