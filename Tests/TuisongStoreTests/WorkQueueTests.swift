import Dispatch
import Foundation
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// The work queue several nodes share on PostgreSQL (slices, leases, fencing), and SQLite's
/// one dispatcher per file.
@Suite struct WorkQueueTests {
    /// Nodes on one test database, each a store with its own identity. The database's queue is
    /// under test here: messages are not claimed as they are stored unless `claimsAtAccept`
    /// (`AcceptedClaimsTests`).
    static func withNodes<T>(
        _ count: Int, lease: Duration = .seconds(30), sliceSize: Int = 10, claimsAtAccept: Bool = false,
        _ body: ([PostgresStore]) async throws -> T
    ) async throws -> T {
        try await withTestDatabase { url in
            var nodes: [PostgresStore] = []
            for index in 0..<count {
                nodes.append(
                    try PostgresStore(
                        url: url,
                        configuration: .init(
                            poolSize: 2, leaseDuration: lease, sliceSize: sliceSize, claimsAtAccept: claimsAtAccept,
                            nodeID: "node-\(index)")))
            }
            defer { for node in nodes { try? node.close() } }
            return try await body(nodes)
        }
    }

    /// Ends every lease and ages every heartbeat now, as if a lease's time had passed (a
    /// sleeping test would measure the machine's load instead).
    static func expireLeases(_ store: PostgresStore) async throws {
        try await store.write { conn in
            try conn.execute("UPDATE message_slices SET lease_until = 0 WHERE lease_until IS NOT NULL")
            try conn.execute("UPDATE deliveries SET lease_until = 0 WHERE lease_until IS NOT NULL")
            try conn.execute("UPDATE nodes SET heartbeat_at = 0")
        }
    }

    static func tokenMessage(_ store: PostgresStore, tokens: Int) async throws -> MessageRecord {
        // Straight into the table: the work queue is under test here, not the app store.
        let appID = try await store.write { conn in
            try conn.run(
                """
                INSERT INTO apps (name, bundle_id, api_key_hash, created_at, updated_at)
                VALUES ('q', 'com.example.q', $1, 0, 0) RETURNING id
                """, [.text(UUID().uuidString)]
            ).rows[0].int64("id")
        }
        let list = (0..<tokens).map { String(repeating: "a", count: 48) + String(format: "%016x", $0) }
        return try await store.createMessage(
            PushJob(
                appID: appID, vendor: "native", audience: .tokens(list), content: PushContent(),
                options: PushOptions()), state: .queued)
    }

    /// A claim rewrites its slice row in place (a HOT update: no new index entries): no index
    /// of `message_slices` names a column a claim, a renewal or a flush before the last changes,
    /// and its pages keep room for the new version (`pg22-slice-claims-in-place`, issue #47).
    /// Read from the page itself (`pageinspect`): the claimed version is marked HOT-updated, the
    /// claim's version heap-only.
    @Test func aClaimRewritesItsSliceInPlace() async throws {
        try await Self.withNodes(1) { nodes in
            let store = nodes[0]
            let message = try await Self.tokenMessage(store, tokens: 1)
            let claims = try await store.claimWork(now: Date(), limit: 10, sliceLimit: 4, running: [])
            #expect(claims.map(\.record.id) == [message.id])
            let versions = try await store.write { conn in
                try conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
                return try conn.execute(
                    """
                    SELECT (t_infomask2::int & 16384) <> 0, (t_infomask2::int & 32768) <> 0
                    FROM heap_page_items(get_raw_page('message_slices', 0)) WHERE t_infomask2 IS NOT NULL
                    ORDER BY lp
                    """
                ).rows.map { ($0[0].bool ?? false, $0[1].bool ?? false) }
            }
            #expect(versions.count == 2, "the planned slice and its claimed version: \(versions)")
            #expect(versions.first.map { $0.0 && !$0.1 } == true, "the planned version is HOT-updated")
            #expect(versions.last.map { !$0.0 && $0.1 } == true, "the claimed version is heap-only")
            let options = try await store.read { conn in
                try conn.execute(
                    "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE relname = 'message_slices'"
                )
                .rows.first?[0].string
            }
            #expect(options?.split(separator: ",").contains("fillfactor=50") == true, "\(options ?? "")")
        }
    }

    /// A message's first claim of its one slice takes the record this node kept when it created
    /// the message instead of reading the row back (`claimedRecords`): equal to what a read
    /// gives, and not read (a row changed behind the store's back shows the kept record). A
    /// message of several slices, one another node claimed first, and one claimed again after
    /// its lease ended are read.
    @Test func aFirstClaimOfAMessageCreatedHereTakesItsKeptRecord() async throws {
        try await Self.withNodes(2, sliceSize: 10) { nodes in
            let (a, b) = (nodes[0], nodes[1])
            let appID = try await Self.tokenMessage(a, tokens: 1).appID
            func create(_ audience: Audience, on store: PostgresStore, key: String? = nil) async throws -> MessageRecord
            {
                var content = PushContent(title: "t", body: "b \(audience)")
                content.badge = 3
                var options = PushOptions()
                options.collapseID = "c"
                var job = PushJob(
                    appID: appID, vendor: "native", audience: audience, content: content, options: options)
                job.labels = ["source": "test"]
                job.vendorContext = .object(["k": .string("v")])
                job.idempotencyKey = key
                return try await store.createMessage(job, state: .queued)
            }
            let tokens = try await create(.tokens(["t1", "t2", "t2"]), on: a, key: "once")
            let devices = try await create(.devices([7, 9, 9]), on: a)
            let accounts = try await create(.accounts(["x", "y"]), on: a)
            let sliced = try await create(.tokens((0..<25).map { "s\($0)" }), on: a)
            _ = try await a.claimWork(now: Date(), limit: 1, sliceLimit: 0, running: [])  // the first message
            let claims = try await a.claimWork(now: Date(), limit: 10, sliceLimit: 10, running: [])
            let read = try await a.messages(ids: [tokens.id, devices.id, accounts.id, sliced.id])
            for message in [tokens, devices, accounts] {
                let claimed = try #require(claims.first { $0.record.id == message.id })
                #expect(claimed.record == read[message.id], "\(message.audience)")
                #expect(claimed.record.total == read[message.id]?.total)
            }
            #expect(claims.filter { $0.record.id == sliced.id }.map(\.slice.id).sorted() == [0, 1, 2])
            for claim in claims where claim.record.id == sliced.id { #expect(claim.record == read[sliced.id]) }
            #expect(a.createdRecords.count == 0, "each claimed message's record was taken")

            // Changed behind the store's back: a first claim still shows the record kept here…
            func relabel(_ id: Int64) async throws {
                try await a.write { conn in
                    try conn.execute("UPDATE messages SET labels = '{\"source\":\"changed\"}' WHERE id = \(id)")
                }
            }
            let kept = try await create(.tokens(["k"]), on: a)
            try await relabel(kept.id)
            let keptClaim = try await a.claimWork(now: Date(), limit: 10, sliceLimit: 0, running: [])
            #expect(keptClaim.map(\.record.labels) == [["source": "test"]])
            // …but another node reads it, and this one reads it when it takes it over.
            let elsewhere = try await create(.tokens(["e"]), on: a)
            try await relabel(elsewhere.id)
            #expect(
                try await b.claimWork(now: Date(), limit: 10, sliceLimit: 0, running: []).map(\.record.labels) == [
                    ["source": "changed"]
                ])
            #expect(a.createdRecords.count == 1)
            try await Self.expireLeases(a)
            let takenOver = try await a.claimWork(now: Date(), limit: 10, sliceLimit: 0, running: [])
            let again = try #require(takenOver.first { $0.record.id == elsewhere.id })
            #expect(again.slice.fence == 2 && again.record.labels == ["source": "changed"])
            #expect(a.createdRecords.count == 0)
        }
    }

    /// The claim runs its generic plan, made once per connection, never planned again for its
    /// values (`runWithGenericPlan`): PostgreSQL's own choice planned it again on every other
    /// call, which cost as much as running it at 1,500 chat lines a second (issue #47).
    @Test func theClaimIsPlannedOncePerConnection() async throws {
        try await withTestDatabase { url in
            let store = try PostgresStore(
                url: url, configuration: .init(poolSize: 1, claimsAtAccept: false, nodeID: "planned"))
            defer { try? store.close() }
            for _ in 0..<7 {
                _ = try await Self.tokenMessage(store, tokens: 1)
                #expect(try await store.claimWork(now: Date(), limit: 10, sliceLimit: 4, running: []).count == 1)
            }
            let plans = try await store.read { conn in
                try conn.execute(
                    "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%running_by_app%'"
                ).rows.map { ($0[0].int64 ?? -1, $0[1].int64 ?? -1) }
            }
            #expect(plans.count == 1 && plans.first?.0 == 7 && plans.first?.1 == 0, "\(plans)")
        }
    }

    /// A claim counts this node's runs per app (the fair turns) from the apps of what it claimed,
    /// and reads back only the running messages it did not claim itself: with one chat line of
    /// an app running, that app's next line waits behind another app's first, whichever node
    /// claimed the running one.
    @Test func aClaimCountsItsRunsPerAppWithoutReadingThemBack() async throws {
        try await Self.withNodes(2) { nodes in
            let (a, b) = (nodes[0], nodes[1])
            let first = try await Self.tokenMessage(a, tokens: 1)
            func line(_ appID: Int64) async throws -> MessageRecord {
                try await a.createMessage(
                    PushJob(
                        appID: appID, vendor: "native", audience: .tokens([String(repeating: "c", count: 64)]),
                        content: PushContent(), options: PushOptions()),
                    state: .queued)
            }
            let chat = [first, try await line(first.appID), try await line(first.appID)]
            let news = try await Self.tokenMessage(a, tokens: 1)
            let oldest = try await a.claimWork(now: Date(), limit: 1, sliceLimit: 0, running: [])
            #expect(oldest.map(\.record.id) == [chat[0].id])
            let running: Set<MessageSliceKey> = [MessageSliceKey(messageID: chat[0].id, slice: 0)]
            let known = a.claimedMessageApps.running([chat[0].id])
            #expect(known.apps == [first.appID] && known.counts == [1] && known.unknown.isEmpty)
            let next = try await a.claimWork(now: Date(), limit: 1, sliceLimit: 0, running: running)
            #expect(next.map(\.record.id) == [news.id], "the chat app has a run going: the news line's turn is first")

            // Another node given the same run reads its app back.
            let later = try await line(news.appID)
            #expect(b.claimedMessageApps.running([chat[0].id]).unknown == [chat[0].id])
            let fromB = try await b.claimWork(now: Date(), limit: 1, sliceLimit: 0, running: running)
            #expect(fromB.map(\.record.id) == [later.id])
            // Finished runs are forgotten.
            #expect(a.claimedMessageApps.running([]).apps.isEmpty)
            #expect(a.claimedMessageApps.running([chat[0].id]).unknown == [chat[0].id])
        }
    }

    /// The store's sessions run with JIT off, readers and writers alike: on a database whose
    /// `apps` was never analyzed the claim's estimated cost passed `jit_above_cost`, and
    /// compiling it took 0.3–8.8 s a claim in the cluster test (its chat backlog filled and a
    /// push stalled), where the claim itself runs in milliseconds.
    @Test func theStoresSessionsNeverCompileStatements() async throws {
        try await Self.withNodes(1) { nodes in
            let store = nodes[0]
            let query = "SELECT current_setting('jit')"
            #expect(try await store.read { try $0.execute(query).rows.first?[0].string } == "off")
            #expect(try await store.write { try $0.execute(query).rows.first?[0].string } == "off")
            // And the server would have: JIT is on by default (PostgreSQL 12 and later).
            let own = try PostgresConnection(url: store.url)
            #expect(try own.execute("SELECT current_setting('jit')").rows.first?[0].string == "on")
        }
    }

    @Test func nodesClaimDisjointSlicesThatCoverTheAudienceOnce() async throws {
        try await Self.withNodes(3) { nodes in
            let message = try await Self.tokenMessage(nodes[0], tokens: 95)
            let claims = try await withThrowingTaskGroup(of: [WorkClaim].self) { group in
                for node in nodes { group.addTask { try await node.claimWork(now: Date(), limit: 100, running: []) } }
                var all: [WorkClaim] = []
                for try await claims in group { all += claims }
                return all
            }
            #expect(claims.count == 10)
            #expect(Set(claims.map(\.slice.id)).count == 10, "no slice claimed twice")
            for position in Int64(1)...95 {
                #expect(claims.filter { $0.slice.contains(position) }.count == 1, "position \(position)")
            }
            let record = try #require(try await nodes[1].message(id: message.id))
            #expect(record.state == .sending && record.total == 95 && record.startedAt != nil)
            // Nothing is left to claim while the leases hold.
            #expect(try await nodes[2].claimWork(now: Date(), limit: 100, running: []).isEmpty)
        }
    }

    @Test func aFlushIsRefusedOnceTheSliceWasTakenOverAndTheNewOwnerFinishes() async throws {
        try await Self.withNodes(2, sliceSize: 1000) { nodes in
            let message = try await Self.tokenMessage(nodes[0], tokens: 20)
            let first = try #require(try await nodes[0].claimWork(now: Date(), limit: 10, running: []).first)
            var counts = DeliveryCounts()
            counts.delivered = 5
            try await nodes[0].recordProgress(
                MessageProgress(messageID: message.id, cursor: 5, counts: counts, slice: first.slice), at: Date())
            // Node 0 stalls past its lease (SIGSTOP); node 1 takes the slice over from its cursor.
            try await Self.expireLeases(nodes[0])
            let second = try #require(try await nodes[1].claimWork(now: Date(), limit: 10, running: []).first)
            #expect(second.slice.id == first.slice.id)
            #expect(second.slice.after == 5, "the new owner resumes after the committed cursor")
            #expect(second.slice.fence == first.slice.fence + 1)
            // Node 0 wakes up: its flush, renewal and release are all refused; nothing of it lands.
            counts.delivered = 15
            await #expect(throws: StoreError.self) {
                try await nodes[0].recordProgress(
                    MessageProgress(
                        messageID: message.id, cursor: 20, counts: counts, finalState: .completed, slice: first.slice),
                    at: Date())
            }
            let key = MessageSliceKey(messageID: message.id, slice: first.slice.id)
            #expect(try await nodes[0].renewLeases([key: first.slice.fence], now: Date()).held.isEmpty)
            try await nodes[0].releaseSlice(key, fence: first.slice.fence)
            #expect(try await nodes[1].renewLeases([key: second.slice.fence], now: Date()).held == [key])
            try await nodes[1].recordProgress(
                MessageProgress(
                    messageID: message.id, cursor: 20, counts: counts, finalState: .completed, slice: second.slice),
                at: Date())
            let record = try #require(try await nodes[0].message(id: message.id))
            #expect(record.state == .completed)
            #expect(record.counts.delivered == 20 && record.total == 20)
        }
    }

    /// A node frozen inside a flush's transaction (SIGSTOP between two of its statements) kept
    /// its slice's row locked while its socket stayed open, and the claim's SKIP LOCKED passed the
    /// slice over for as long as the node stayed frozen (the cluster test's frozen node once kept
    /// a slice from every other node for 40 s). The store's connections end such a session after
    /// half a lease; the slice is then claimed, and the frozen flush fails without landing.
    @Test func aNodeFrozenInsideAFlushDoesNotKeepItsSliceFromBeingTakenOver() async throws {
        try await Self.withNodes(2, lease: .seconds(2), sliceSize: 1000) { nodes in
            let message = try await Self.tokenMessage(nodes[0], tokens: 20)
            let first = try #require(try await nodes[0].claimWork(now: Date(), limit: 10, running: []).first)
            try await Self.expireLeases(nodes[1])
            let frozenHolds = DispatchSemaphore(value: 0)
            let takenOver = DispatchSemaphore(value: 0)
            let frozenFlush = Task {
                try await nodes[0].write { conn in
                    // The flush's first statements (`lockSlicesInOrder`), then the node stops.
                    try conn.run(
                        """
                        SELECT slice FROM message_slices WHERE message_id = \(message.id) AND slice = \(first.slice.id)
                        FOR UPDATE
                        """)
                    frozenHolds.signal()
                    // Frozen until the slice was claimed (a hang guard, not a timing).
                    _ = takenOver.wait(timeout: .now() + 60)
                    try conn.run(
                        "UPDATE message_slices SET delivered = delivered + 20 WHERE message_id = \(message.id)")
                }
            }
            #expect(frozenHolds.wait(timeout: .now() + 60) == .success)
            // Node 1 looks at every poll, as the dispatcher does, until the row is free.
            var claimed: WorkClaim?
            for _ in 0..<600 where claimed == nil {
                claimed = try await nodes[1].claimWork(now: Date(), limit: 10, running: []).first
                if claimed == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            takenOver.signal()
            let second = try #require(claimed, "the frozen node's slice was never claimed")
            #expect(second.slice.id == first.slice.id && second.slice.fence == first.slice.fence + 1)
            await #expect(throws: StoreError.self) { try await frozenFlush.value }
            let record = try #require(try await nodes[1].message(id: message.id))
            #expect(record.counts.delivered == 0, "the frozen flush landed after its session ended")
        }
    }

    /// Issue #40 item 4: a node cut off from the database past its lease (a PostgreSQL restart)
    /// whose slice nobody claimed meanwhile still lands its flushes, alone and batched, and takes
    /// its lease up again: nothing it sent is sent again. Once another node claimed the slice,
    /// the test above holds (refused).
    @Test func aFlushAndARenewalPastTheLeaseLandWhileNobodyClaimedTheSlice() async throws {
        try await Self.withNodes(2, sliceSize: 1000) { nodes in
            let message = try await Self.tokenMessage(nodes[0], tokens: 20)
            let other = try await Self.tokenMessage(nodes[0], tokens: 20)
            let claims = try await nodes[0].claimWork(now: Date(), limit: 10, running: [])
            let first = try #require(claims.first { $0.record.id == message.id })
            let second = try #require(claims.first { $0.record.id == other.id })
            try await Self.expireLeases(nodes[0])
            var counts = DeliveryCounts()
            counts.delivered = 5
            try await nodes[0].recordProgress(
                MessageProgress(messageID: message.id, cursor: 5, counts: counts, slice: first.slice), at: Date())
            // Batched with another slice whose lease ended too: both land.
            let results = try await nodes[0].recordProgress(
                [
                    MessageProgress(messageID: message.id, cursor: 10, counts: counts, slice: first.slice),
                    MessageProgress(messageID: other.id, cursor: 5, counts: counts, slice: second.slice),
                ], at: Date())
            #expect(results.allSatisfy { $0 == nil }, "\(results)")
            let key = MessageSliceKey(messageID: message.id, slice: first.slice.id)
            #expect(try await nodes[0].renewLeases([key: first.slice.fence], now: Date()).held == [key])
            // Renewed: the other node finds nothing of it to claim; the other slice is still free.
            let taken = try await nodes[1].claimWork(now: Date(), limit: 10, running: [])
            #expect(taken.map(\.record.id) == [other.id])
            #expect(taken.first?.slice.after == 5, "resumed after the flush that landed past the lease")
            try await nodes[0].recordProgress(
                MessageProgress(
                    messageID: message.id, cursor: 20, counts: counts, finalState: .completed, slice: first.slice),
                at: Date())
            let record = try #require(try await nodes[0].message(id: message.id))
            #expect(record.state == .completed)
            #expect(record.counts.delivered == 15 && record.total == 15)
        }
    }

    @Test func theLastSliceToFinishCompletesTheMessageAndCountsAreSummed() async throws {
        try await Self.withNodes(2, sliceSize: 10) { nodes in
            let message = try await Self.tokenMessage(nodes[0], tokens: 30)
            let owned =
                try await nodes[0].claimWork(now: Date(), limit: 2, running: []).map { (nodes[0], $0) }
                + nodes[1].claimWork(now: Date(), limit: 2, running: []).map { (nodes[1], $0) }
            #expect(owned.count == 3)
            for (index, (node, claim)) in owned.enumerated() {
                var counts = DeliveryCounts()
                counts.delivered = 9
                counts.failed = 1
                try await node.recordProgress(
                    MessageProgress(
                        messageID: message.id, cursor: claim.slice.through ?? 30, counts: counts,
                        failures: ["BadDeviceToken": 1], finalState: .completed, slice: claim.slice),
                    at: Date())
                let state = try await nodes[0].message(id: message.id)?.state
                #expect(state == (index == 2 ? .completed : .sending))
            }
            let record = try #require(try await nodes[1].message(id: message.id))
            #expect(record.counts.delivered == 27 && record.counts.failed == 3 && record.total == 30)
            #expect(record.failures == ["BadDeviceToken": 3])
            let progress = try #require(try await nodes[1].messageProgress(id: message.id))
            #expect(progress.sliceCursors.count == 3 && progress.counts == record.counts)
        }
    }

    @Test func aReleasedSliceIsClaimedAtOnceAndRunningSlicesAreNotClaimedAgain() async throws {
        try await Self.withNodes(2, sliceSize: 1000) { nodes in
            let message = try await Self.tokenMessage(nodes[0], tokens: 10)
            let claim = try #require(try await nodes[0].claimWork(now: Date(), limit: 5, running: []).first)
            let key = MessageSliceKey(messageID: message.id, slice: claim.slice.id)
            try await nodes[0].releaseSlice(key, fence: claim.slice.fence)
            #expect(try await nodes[0].claimWork(now: Date(), limit: 5, running: [key]).isEmpty)
            #expect(try await nodes[1].claimWork(now: Date(), limit: 5, running: []).count == 1)
        }
    }

    @Test func startUpRequeuesOnlyRetriesWhoseLeaseEnded() async throws {
        try await Self.withNodes(2) { nodes in
            let message = try await Self.tokenMessage(nodes[0], tokens: 1)
            try await nodes[0].recordProgress(
                MessageProgress(
                    messageID: message.id, cursor: 1,
                    counts: {
                        var c = DeliveryCounts()
                        c.queued = 1
                        return c
                    }(),
                    deliveries: [
                        NewDelivery(
                            deviceID: nil, token: String(repeating: "b", count: 64), environment: .production,
                            state: .queued, reason: "InternalServerError", attempts: 1, nextAttemptAt: Date(),
                            channel: .apns)
                    ]), at: Date())
            let claimed = try await nodes[0].claimDueDeliveries(now: Date().addingTimeInterval(1), limit: 10)
            #expect(claimed.count == 1)
            // Node 1 starting meanwhile leaves node 0's retry in flight alone…
            #expect(try await nodes[1].requeueInterruptedDeliveries() == 0)
            #expect(try await nodes[1].claimDueDeliveries(now: Date().addingTimeInterval(1), limit: 10).isEmpty)
            // …until node 0's lease ends (it died): then the row is queued again.
            try await Self.expireLeases(nodes[0])
            #expect(try await nodes[1].requeueInterruptedDeliveries() == 1)
            let record = try #require(try await nodes[1].message(id: message.id))
            #expect(record.counts.queued == 1 && record.counts.sending == 0)
        }
    }

    @Test func liveNodesAreThoseWithARecentHeartbeat() async throws {
        try await Self.withNodes(3) { nodes in
            for node in nodes { _ = try await node.renewLeases([:], now: Date()) }
            #expect(try await nodes[0].liveNodeCount() == 3)
            try await Self.expireLeases(nodes[0])
            _ = try await nodes[0].renewLeases([:], now: Date())
            #expect(try await nodes[0].liveNodeCount() == 1)
            // Expired nodes' rows (heartbeat 0, long ago) are forgotten by the next heartbeat.
            let rows = try await nodes[0].read { conn in
                try conn.execute("SELECT id FROM nodes ORDER BY id").rows.compactMap { $0[0].string }
            }
            #expect(rows == ["node-0"])
        }
    }

    @Test func slicesAreEqualRangesWithAnOpenEnd() {
        let slices = PostgresStore.slices(range: (lower: 0, upper: 95, count: 95), size: 10)
        #expect(slices.count == 10)
        #expect(slices.first?.after == 0 && slices.first?.through == 10)
        #expect(slices.last?.after == 90 && slices.last?.through == nil)
        #expect(PostgresStore.slices(range: (0, 0, 0), size: 10).count == 1)
    }

    @Test func aSecondSQLiteStoreOnTheSameFileDoesNotDispatchUntilTheFirstCloses() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let first = try SQLiteStore(path: database.path)
        let second = try SQLiteStore(path: database.path)
        defer { try? second.close() }
        let app = try await first.createApp(name: "s", bundleID: "com.example.s", apiKeyHash: UUID().uuidString)
        let message = try await first.createMessage(
            PushJob(
                appID: app.id, vendor: "native", audience: .tag("t"), content: PushContent(),
                options: PushOptions()), state: .queued)
        #expect(try await first.claimWork(now: Date(), limit: 4, running: []).map(\.record.id) == [message.id])
        #expect(try await second.claimWork(now: Date(), limit: 4, running: []).isEmpty)
        #expect(try await second.requeueInterruptedDeliveries() == 0)
        try first.close()
        #expect(try await second.claimWork(now: Date(), limit: 4, running: []).map(\.record.id) == [message.id])
    }

    /// A claim that runs while messages are being created takes every record the store kept
    /// for it: one kept after the commit was never taken by a claim that ran in between, and
    /// the dispatcher's heap grew with each (`make bench-memory`, issue #33 item 9).
    @Test func claimsRacingCreatesLeaveNoRecordKept() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        #expect(store.isDispatcher)
        let app = try await store.createApp(name: "r", bundleID: "com.example.r", apiKeyHash: UUID().uuidString)
        let creators = 8
        let perCreator = 100
        let claimed = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<creators {
                group.addTask {
                    for _ in 0..<perCreator {
                        _ = try await store.createMessage(
                            PushJob(
                                appID: app.id, vendor: "native", audience: .tag("t"), content: PushContent(),
                                options: PushOptions()), state: .queued)
                    }
                    return 0
                }
            }
            group.addTask {
                var claimed = 0
                while claimed < creators * perCreator {
                    claimed += try await store.claimWork(now: Date(), limit: 16, running: []).count
                    await Task.yield()
                }
                return claimed
            }
            return try await group.reduce(0, +)
        }
        #expect(claimed == creators * perCreator)
        #expect(store.createdRecords.count == 0)
    }
}
