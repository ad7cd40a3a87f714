import Foundation
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// Many small messages claimed and flushed together (issue #28): one claim marks them all
/// sending, one batch commits their outcomes and completions, and on PostgreSQL a flush whose
/// claim was lost is refused alone.
@Suite struct BatchedFlushTests {
    @Test func postgresCommitsABatchAndRefusesOnlyTheFlushWhoseClaimWasLost() async throws {
        try await WorkQueueTests.withNodes(1, sliceSize: 100) { nodes in
            let node = nodes[0]
            var messages: [MessageRecord] = []
            for _ in 0..<5 { messages.append(try await WorkQueueTests.tokenMessage(node, tokens: 1)) }
            let claims = try await node.claimWork(now: Date(), limit: 100, sliceLimit: 0, running: [])
            #expect(claims.count == 5, "each small message is one whole slice, all claimed at once")
            #expect(claims.allSatisfy { $0.slice.isWholeMessage && $0.record.state == .sending })
            var batch: [MessageProgress] = []
            for (index, claim) in claims.enumerated() {
                var slice = claim.slice
                // The third flush names a claim the slice is no longer held under.
                if index == 2 { slice.fence += 1 }
                var counts = DeliveryCounts()
                if index == 4 { counts.failed = 1 } else { counts.delivered = 1 }
                batch.append(
                    MessageProgress(
                        messageID: claim.record.id, cursor: 1, counts: counts,
                        failures: index == 4 ? ["Unregistered": 1] : [:], finalState: .completed,
                        deliveredByChannel: index == 4 ? [:] : [.apns: 1], slice: slice))
            }
            // The set-based path itself (recordProgress falls back to flush by flush should it throw).
            let flushes = batch
            let now = SQLTime.milliseconds(Date())
            let results = try await node.write { conn in
                try PostgresStore.applyTogether(conn, flushes, now: now, node: "node-0", webhooks: node.webhookOutbox)
            }
            #expect(results.count == 5)
            for (index, result) in results.enumerated() {
                if index == 2 {
                    #expect((result as? StoreError)?.code == .leaseLost)
                } else {
                    #expect(result == nil, "flush \(index): \(String(describing: result))")
                }
            }
            for (index, claim) in claims.enumerated() {
                let stored = try #require(try await node.message(id: claim.record.id))
                if index == 2 {
                    #expect(stored.state == .sending, "nothing of the refused flush lands")
                    #expect(stored.counts.delivered == 0)
                } else {
                    #expect(stored.state == .completed)
                    #expect(stored.total == 1)
                    #expect(stored.counts.delivered == (index == 4 ? 0 : 1))
                    #expect(stored.counts.failed == (index == 4 ? 1 : 0))
                    #expect(stored.failures == (index == 4 ? ["Unregistered": 1] : [:]))
                    let channels = try await node.channelCounts(messageID: claim.record.id)
                    #expect(channels[.apns]?.delivered == (index == 4 ? nil : 1))
                }
            }
        }
    }

    /// Issue #40 item 1: lease renewal and the batched flush both lock many slices; taken in
    /// different orders they deadlocked (SQLSTATE 40P01) and a live node lost its leases. Both
    /// run here together, over and over, on the same slices, with the flush's slices in a
    /// different order each time: no statement may fail.
    @Test func postgresRenewalAndBatchedFlushesTogetherNeverDeadlock() async throws {
        try await WorkQueueTests.withNodes(1, sliceSize: 100) { nodes in
            let node = nodes[0]
            for _ in 0..<24 { _ = try await WorkQueueTests.tokenMessage(node, tokens: 1) }
            let claims = try await node.claimWork(now: Date(), limit: 100, sliceLimit: 0, running: [])
            #expect(claims.count == 24)
            var leases: [MessageSliceKey: Int64] = [:]
            for claim in claims {
                leases[MessageSliceKey(messageID: claim.record.id, slice: claim.slice.id)] = claim.slice.fence
            }
            let renewals = leases
            let progress = claims.map { claim in
                MessageProgress(messageID: claim.record.id, cursor: 0, counts: DeliveryCounts(), slice: claim.slice)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        for _ in 0..<150 {
                            let (held, _) = try await node.renewLeases(renewals, now: Date())
                            #expect(held.count == renewals.count)
                        }
                    }
                }
                for round in 0..<2 {
                    group.addTask {
                        var generator = SystemRandomNumberGenerator()
                        for iteration in 0..<150 {
                            // Reversed, rotated, shuffled: every order a batch can come in.
                            var flushes =
                                iteration % 3 == 0 ? progress.reversed() : progress.shuffled(using: &generator)
                            if round == 1 { flushes.append(flushes[0]) }
                            let batch = flushes
                            let now = SQLTime.milliseconds(Date())
                            let outbox = node.webhookOutbox
                            let results = try await node.write { conn in
                                try PostgresStore.applyTogether(conn, batch, now: now, node: "node-0", webhooks: outbox)
                            }
                            #expect(results.allSatisfy { $0 == nil })
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    /// The cluster test's node logged 40P01 twice after PostgreSQL's restart: its lease renewal
    /// extends the leases of the retries it is sending (every such row, in the order its index
    /// gives them) while its retry worker writes their outcomes (in id order). Both run here
    /// together, over and over, on the same rows: no statement may fail.
    @Test func postgresRenewalAndRetryOutcomesTogetherNeverDeadlock() async throws {
        try await WorkQueueTests.withNodes(1) { nodes in
            let node = nodes[0]
            let message = try await WorkQueueTests.tokenMessage(node, tokens: 1)
            try await node.write { conn in
                try conn.run(
                    """
                    INSERT INTO deliveries (message_id, token, environment, state, next_attempt_at, updated_at)
                    SELECT \(message.id), 'token-' || g, 'production', 'queued', 0, 0 FROM generate_series(1, 60) g
                    """)
            }
            let retries = Task {
                var outcomes = 0
                for _ in 0..<120 {
                    // Rows the renewal is looking at are skipped (SKIP LOCKED): most, not all.
                    let claimed = try await node.claimDueDeliveries(now: Date(), limit: 100)
                    outcomes += claimed.count
                    // Each back to the queue, due at once, so the next pass claims them again.
                    let updates = claimed.shuffled().map { record in
                        DeliveryUpdate(
                            deliveryID: record.id, messageID: record.messageID, from: .sending, to: .queued,
                            reason: nil, serviceMessageID: nil, attempts: 1,
                            nextAttemptAt: Date(timeIntervalSince1970: 0))
                    }
                    try await node.applyDeliveryUpdates(updates, at: Date())
                }
                return outcomes
            }
            let renewals = Task {
                for _ in 0..<400 { _ = try await node.renewLeases([:], now: Date()) }
            }
            #expect(try await retries.value > 60 * 60, "the retries were mostly not claimed")
            try await renewals.value
        }
    }

    @Test func sqliteClaimsDueMessagesInOneBatchAndCommitsTheirFlushesTogether() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        var ids: [Int64] = []
        for n in 0..<5 {
            let job = PushJob(
                appID: app.id, vendor: "native", audience: .tokens([token(n).value]), content: PushContent(),
                options: PushOptions())
            ids.append(try await store.createMessage(job, state: .queued).id)
        }
        #expect(try await store.requeueInterruptedDeliveries() == 0)
        let claims = try await store.claimWork(now: Date(), limit: 3, running: [])
        #expect(claims.map(\.record.id) == Array(ids.prefix(3)), "the oldest first, up to the limit")
        #expect(claims.allSatisfy { $0.record.state == .sending && $0.record.startedAt != nil })
        // Claimed messages are sending: the next claim takes the rest, never these again.
        let rest = try await store.claimWork(now: Date(), limit: 10, running: [])
        #expect(rest.map(\.record.id) == Array(ids.suffix(2)))
        #expect(try await store.claimWork(now: Date(), limit: 10, running: []).isEmpty)
        var counts = DeliveryCounts()
        counts.delivered = 1
        let batch = (claims + rest).map { claim in
            MessageProgress(
                messageID: claim.record.id, cursor: 1, counts: counts, finalState: .completed,
                deliveredByChannel: [.apns: 1], slice: claim.slice)
        }
        let results = try await store.recordProgress(batch, at: Date())
        #expect(results.allSatisfy { $0 == nil })
        for id in ids {
            let stored = try #require(try await store.message(id: id))
            #expect(stored.state == .completed && stored.counts.delivered == 1 && stored.total == 1)
        }
        // A dispatcher starting again walks what an earlier one left sending: nothing now.
        _ = try await store.requeueInterruptedDeliveries()
        #expect(try await store.claimWork(now: Date(), limit: 10, running: []).isEmpty)
    }

    @Test func sqliteClaimsAgainWhatAnEarlierDispatcherLeftSending() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        for n in 0..<3 {
            _ = try await store.createMessage(
                PushJob(
                    appID: app.id, vendor: "native", audience: .tokens([token(n).value]),
                    content: PushContent(), options: PushOptions()), state: .queued
            )
        }
        _ = try await store.requeueInterruptedDeliveries()
        let first = try await store.claimWork(now: Date(), limit: 10, running: [])
        #expect(first.count == 3)
        // The engine stopped before finishing them; a new one starts on the same store.
        _ = try await store.requeueInterruptedDeliveries()
        let again = try await store.claimWork(now: Date(), limit: 2, running: [])
        #expect(again.map(\.record.id) == Array(first.map(\.record.id).prefix(2)), "in id order, up to the limit")
        let last = try await store.claimWork(now: Date(), limit: 2, running: [])
        #expect(last.map(\.record.id) == [first[2].record.id])
        #expect(try await store.claimWork(now: Date(), limit: 2, running: []).isEmpty)
    }
}
