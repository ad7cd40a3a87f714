import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongPostgres

@testable import TuisongPostgresStore

/// The queue tables' statistics kept current while a burst fills them
/// (`QueueStatisticsKeeper`), on a real PostgreSQL: what the server's own statistics views say.
@Suite("PostgreSQL queue statistics")
struct QueueStatisticsTests {
    /// One message through the store, then `copies` more like it straight into the table from a
    /// connection of the test's own, closed at once so the server counts its changes.
    static func burst(_ store: PostgresStore, copies: Int) async throws {
        let message = try await WorkQueueTests.tokenMessage(store, tokens: 1)
        do {
            let connection = try PostgresConnection(url: store.url)  // closed at the end of the scope
            _ = try connection.execute(
                """
                INSERT INTO messages (app_id, vendor, audience, content, options, labels, state, created_at)
                SELECT app_id, vendor, audience, content, options, labels, 'completed', created_at
                FROM messages, generate_series(1, $2) WHERE id = $1
                """, [.int(message.id), .int(Int64(copies))])
            _ = try connection.execute("SELECT pg_stat_force_next_flush()")
        }
        try await waitUntil("the server counted the burst's rows") {
            try await changesSinceAnalyze(store, "messages") >= copies
        }
    }

    static func changesSinceAnalyze(_ store: PostgresStore, _ table: String) async throws -> Int {
        try await store.read { conn in
            try conn.execute(
                "SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = $1", [.text(table)]
            ).rows.first?[0].int ?? 0
        }
    }

    static func analyzeCount(_ store: PostgresStore, _ table: String) async throws -> Int {
        try await store.read { conn in
            try conn.execute(
                "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = $1", [.text(table)]
            ).rows.first?[0].int ?? 0
        }
    }

    @Test("A queue table that changed by more than its size is analyzed, once")
    func aTableThatOutgrewItsStatisticsIsAnalyzedOnce() async throws {
        try await withStore(.postgresql) { any in
            let store = try #require(any as? PostgresStore)
            #expect(try await store.analyzeStaleQueueTables() == [], "nothing changed yet")
            try await Self.burst(store, copies: 3_000)
            #expect(try await store.analyzeStaleQueueTables() == ["messages"])
            #expect(try await Self.analyzeCount(store, "messages") == 1)
            #expect(try await Self.changesSinceAnalyze(store, "messages") == 0)
            // Now 3,001 rows: as many changes again (plus 1,000) before the next.
            #expect(try await store.analyzeStaleQueueTables() == [])
            #expect(try await Self.analyzeCount(store, "messages") == 1)
        }
    }

    @Test("While another node holds the lock, this one leaves the tables alone")
    func oneNodeAtATime() async throws {
        try await withStore(.postgresql) { any in
            let store = try #require(any as? PostgresStore)
            try await Self.burst(store, copies: 3_000)
            let other = try PostgresConnection(url: store.url)
            _ = try other.execute("BEGIN")
            _ = try other.execute("SELECT pg_advisory_xact_lock($1)", [.int(QueueStatisticsKeeper.lockKey)])
            #expect(try await store.analyzeStaleQueueTables() == [])
            #expect(try await Self.analyzeCount(store, "messages") == 0)
            _ = try other.execute("COMMIT")
            #expect(try await store.analyzeStaleQueueTables() == ["messages"])
        }
    }

    @Test("A claim starts the check on its own task")
    func aClaimStartsTheCheck() async throws {
        try await withStore(.postgresql) { any in
            let store = try #require(any as? PostgresStore)
            try await Self.burst(store, copies: 3_000)
            _ = try await store.claimWork(now: Date(), limit: 10, running: [])
            try await waitUntil("the claim's check analyzed messages") {
                try await Self.analyzeCount(store, "messages") == 1
            }
        }
    }

    @Test("Checks are started at most once a second, and never two at once")
    func checksAreSpacedAndNeverOverlap() async throws {
        let keeper = QueueStatisticsKeeper()
        let started = Mutex(0)
        let release = AsyncStream<Void>.makeStream()
        let start = Date(timeIntervalSince1970: 1_000_000)
        keeper.startIfDue(now: start) {
            started.withLock { $0 += 1 }
            for await _ in release.stream { break }
        }
        try await waitUntil("the first check started") { started.withLock { $0 } == 1 }
        keeper.startIfDue(now: start.addingTimeInterval(5)) { started.withLock { $0 += 1 } }
        #expect(started.withLock { $0 } == 1, "one is still running")
        release.continuation.yield()
        keeper.startIfDue(now: start.addingTimeInterval(0.5)) { started.withLock { $0 += 1 } }
        try await Task.sleep(for: .milliseconds(50))
        #expect(started.withLock { $0 } == 1, "not a second later yet")
        try await waitUntil("the second check started") {
            keeper.startIfDue(now: start.addingTimeInterval(1)) { started.withLock { $0 += 1 } }
            return started.withLock { $0 } == 2
        }
    }
}
