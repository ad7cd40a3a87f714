import Foundation
import Logging
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// What a subscriber received, in order (`nil` = resynchronise).
final class ReceivedChanges: Sendable {
    private let changes = Mutex<[StoreChange?]>([])

    func append(_ change: StoreChange?) { changes.withLock { $0.append(change) } }
    var all: [StoreChange?] { changes.withLock { $0 } }
    /// The changes, resynchronisations left out.
    var published: [StoreChange] { all.compactMap { $0 } }

    /// Waits up to `timeout` for `condition`.
    func wait(timeout: Duration = .seconds(10), until condition: ([StoreChange?]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(all) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition(all)
    }
}

@Suite struct StoreChangeFeedTests {
    static let every: [StoreChange] = [
        .app(7), .credentials(appID: 8), .channelCredentials(appID: 9), .settings, .wake, .webhooks(appID: 10),
        .receiptCallbackCredentials(appID: 11),
    ]

    @Test func payloadsRoundTrip() {
        for change in Self.every { #expect(StoreChange(payload: change.payload) == change) }
        for unknown in ["", "app", "app:", "app:x", "apps:1", "credentials:1:2", "later:5", "sleep"] {
            #expect(StoreChange(payload: unknown) == nil, "\(unknown)")
        }
    }

    @Test(arguments: Backend.allCases)
    func aSubscriberReceivesWhatItsStorePublishes(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let received = ReceivedChanges()
            store.subscribe { received.append($0) }
            for change in Self.every { await store.publish(change) }
            #expect(await received.wait { $0.compactMap { $0 }.count >= Self.every.count })
            #expect(received.published == Self.every)
        }
    }

    @Test func sqliteTellsOnlyItsOwnProcessSubscribers() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let one = try SQLiteStore(path: database.path)
        let other = try SQLiteStore(path: database.path)
        defer {
            try? one.close()
            try? other.close()
        }
        let received = ReceivedChanges()
        other.subscribe { received.append($0) }
        await one.publish(.wake)
        await other.publish(.app(1))
        #expect(received.all == [.app(1)])
    }

    /// Two nodes on one database: what one publishes reaches the other's subscribers (after the
    /// resynchronisation its listener's connection asks for), and a closed store hears nothing.
    @Test func postgresNodesHearEachOther() async throws {
        try await withTwoNodes { one, other in
            let heardByOther = ReceivedChanges()
            other.subscribe { heardByOther.append($0) }
            #expect(heardByOther.all.first == .some(nil), "connecting asks to resynchronise")

            for change in Self.every { await one.publish(change) }
            #expect(await heardByOther.wait { $0.compactMap { $0 }.count >= Self.every.count })
            #expect(heardByOther.published == Self.every)

            // Its own publications come back to a node too (its caches were cleared by the caller).
            let heardByOne = ReceivedChanges()
            one.subscribe { heardByOne.append($0) }
            await other.publish(.app(42))
            #expect(await heardByOne.wait { $0.contains(.app(42)) })
            #expect(await heardByOther.wait { $0.contains(.app(42)) })

            // A payload of a newer build is ignored, not mistaken for a change.
            try await one.read { conn in
                _ = try conn.execute("SELECT pg_notify('tuisong_changes', 'later:5')")
            }
            await one.publish(.settings)
            #expect(await heardByOther.wait { $0.filter { $0 == .settings }.count == 2 })

            // close() joins the listener's thread, so nothing reaches its subscribers after it;
            // and its LISTEN connection leaves the server (seen from `one`), so a notification
            // published now has nowhere to go but `one`'s listener.
            try other.close()
            let before = heardByOther.all.count
            let listening =
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'"
            var stillListening = 2
            for _ in 0..<2000 where stillListening > 1 {
                stillListening = try await one.read { conn in try conn.execute(listening).rows.first?[0].int ?? 0 }
                if stillListening > 1 { try await Task.sleep(for: .milliseconds(5)) }
            }
            #expect(stillListening == 1, "the closed store's LISTEN connection left the server")
            await one.publish(.wake)
            #expect(await heardByOne.wait { $0.filter { $0 == .wake }.count == 1 })
            #expect(heardByOther.all.count == before, "a closed store's listener is stopped")
        }
    }

    /// Two PostgreSQL nodes (stores) on one new database, closed after `body`; `one` with
    /// `poolSize` connections, `other` with one.
    func withTwoNodes(
        poolSize: Int = 1, _ body: (_ one: PostgresStore, _ other: PostgresStore) async throws -> Void
    ) async throws {
        try await withTestDatabase { url in
            let one = try PostgresStore(url: url, configuration: .init(poolSize: poolSize))
            let other = try PostgresStore(url: url, configuration: .init(poolSize: 1))
            defer {
                try? one.close()
                try? other.close()
            }
            try await body(one, other)
        }
    }

    /// On PostgreSQL a queued message wakes every node with the commit that stores it, whether
    /// it came in a batch of accepts, alone or with an idempotency key; a scheduled one does not.
    /// (The APIs then publish nothing: `announcesQueuedMessages`.)
    @Test func postgresAnnouncesAQueuedMessageWithItsInsert() async throws {
        try await withTwoNodes(poolSize: 2) { one, other in
            #expect(one.announcesQueuedMessages)
            #expect(!(try withSQLiteStoreForAnnouncing { $0.announcesQueuedMessages }))
            let heard = ReceivedChanges()
            other.subscribe { heard.append($0) }
            #expect(await heard.wait { $0.first == .some(nil) })
            let appID = try await one.createApp(name: "w", bundleID: "com.example.w", apiKeyHash: UUID().uuidString).id
            func job(_ n: Int, at sendAt: Date? = nil, key: String? = nil) -> PushJob {
                var job = PushJob(
                    appID: appID, vendor: "native", audience: .tokens([String(format: "%064x", n)]),
                    content: PushContent(title: "\(n)"), options: PushOptions(), sendAt: sendAt)
                job.idempotencyKey = key
                return job
            }
            func wakes() -> Int { heard.published.filter { $0 == .wake }.count }

            _ = try await one.createMessage(job(1, at: Date().addingTimeInterval(3600)), state: .scheduled)
            try await Task.sleep(for: .milliseconds(300))
            #expect(wakes() == 0, "a scheduled message wakes nobody")
            _ = try await one.createMessage(job(2), state: .queued)
            #expect(await heard.wait { _ in wakes() == 1 }, "alone")
            _ = try await one.createMessage(job(3, key: "k-3"), state: .queued)
            #expect(await heard.wait { _ in wakes() == 2 }, "with an idempotency key")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 4..<40 { group.addTask { _ = try await one.createMessage(job(n), state: .queued) } }
                try await group.waitForAll()
            }
            #expect(await heard.wait { _ in wakes() >= 3 }, "in batches")
        }
    }

    /// A change published while the same change is being sent is left to the send in flight,
    /// which sends it once more when done: the later publisher's change committed before it
    /// published, so the second send covers it. Other changes go their own way meanwhile.
    @Test func aChangeAskedForWhileItIsBeingSentIsSentOnceMoreAfterIt() {
        let outgoing = OutgoingChanges()
        #expect(outgoing.begin("wake"))
        #expect(!outgoing.begin("wake"), "in flight: left to the send in flight")
        #expect(!outgoing.begin("wake"), "asked twice meanwhile: still one more send")
        #expect(outgoing.begin("app:7"), "another change is not held back")
        #expect(outgoing.end("wake"), "asked for meanwhile: sent once more")
        #expect(!outgoing.begin("wake"), "the second send is in flight")
        #expect(outgoing.end("wake"), "asked for during the second send")
        #expect(!outgoing.end("wake"), "done")
        #expect(!outgoing.end("app:7"))
        #expect(outgoing.begin("wake"), "nothing in flight: sent at once")
        #expect(!outgoing.end("wake"))
    }

    /// Many wake-ups published at once reach the other node, in no more notifications than
    /// publications (fewer when they overlap, as a chat load's accepts do).
    @Test func wakeUpsPublishedTogetherAllReachTheOtherNode() async throws {
        try await withTwoNodes(poolSize: 2) { one, other in
            let heard = ReceivedChanges()
            other.subscribe { heard.append($0) }
            #expect(await heard.wait { $0.first == .some(nil) })
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<50 { group.addTask { await one.publish(.wake) } }
            }
            #expect(await heard.wait { $0.contains(.wake) })
            // Whatever is still in flight finishes with one last send: wait for it, then nothing
            // more comes.
            var count = heard.all.count
            for _ in 0..<100 {
                try await Task.sleep(for: .milliseconds(20))
                let now = heard.all.count
                if now == count { break }
                count = now
            }
            let wakes = heard.published.filter { $0 == .wake }.count
            #expect(wakes >= 1 && wakes <= 50)
        }
    }

    /// A listener that loses its connection reconnects and asks its subscribers to resynchronise.
    @Test func aReconnectedListenerAsksToResynchronise() async throws {
        try await withTestDatabase { url in
            let store = try PostgresStore(url: url, configuration: .init(poolSize: 1))
            defer { try? store.close() }
            let received = ReceivedChanges()
            store.subscribe { received.append($0) }
            #expect(received.all == [nil])
            try await store.read { conn in
                _ = try conn.execute(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND pid <> pg_backend_pid()
                      AND query LIKE 'LISTEN%'
                    """)
            }
            #expect(await received.wait { $0.filter { $0 == nil }.count >= 2 }, "resynchronise after reconnecting")
            await store.publish(.wake)
            #expect(await received.wait { $0.contains(.wake) }, "listening again")
        }
    }

    /// A listener that cannot start (its database is not there yet) tries again after 2 s of the
    /// store's clock, not of the wall clock: here the test moves the clock once the database exists.
    @Test func aListenerThatCannotStartTriesAgainOnTheStoresClock() async throws {
        let base = try TestCluster.url.get()
        let name = "t_\(getpid())_listener_retry"
        let admin = try PostgresConnection(url: base)
        _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        defer { _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
        let changes = PostgresChanges()
        defer { changes.stop() }
        let received = ReceivedChanges()
        changes.local.subscribe { received.append($0) }
        let clock = ManualClock()
        changes.startListening(
            url: TestCluster.url(base, database: name), clock: clock, logger: Logger(label: "test"))
        try await clock.waitForSleepers(1)
        #expect(received.all.isEmpty, "no listener without its database")

        try admin.execute("CREATE DATABASE \(name)")
        clock.advance(by: 2)
        #expect(await received.wait { $0 == [nil] }, "listening once the clock has moved 2 s")
    }
}

/// `body` on a new SQLite store, closed and removed after.
private func withSQLiteStoreForAnnouncing<T>(_ body: (SQLiteStore) throws -> T) throws -> T {
    let database = try TemporaryDatabase()
    defer { database.remove() }
    let store = try SQLiteStore(path: database.path)
    defer { try? store.close() }
    return try body(store)
}
