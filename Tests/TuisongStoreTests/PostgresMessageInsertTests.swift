import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore

/// Messages accepted together go into PostgreSQL together (`PostgresStore.messageInserts`):
/// one transaction and one statement for a batch, each message still answered with its own id
/// or its own error.
@Suite struct PostgresMessageInsertTests {
    static func job(_ appID: Int64, _ n: Int, vendorMessageID: String? = nil) -> PushJob {
        PushJob(
            appID: appID, vendor: "native", vendorMessageID: vendorMessageID,
            audience: .tokens([String(format: "%064x", n)]),
            content: PushContent(title: "line \(n)"), options: PushOptions(),
            sendAt: n % 3 == 0 ? Date(timeIntervalSince1970: 2_000_000_000 + Double(n)) : nil,
            labels: ["n": "\(n)"])
    }

    /// Many accepts at once: each record's id names the message that was submitted with it,
    /// every column as given, and they shared transactions (fewer commits than messages).
    @Test func concurrentAcceptsShareTransactionsAndEachGetsItsOwnID() async throws {
        try await WorkQueueTests.withNodes(1) { nodes in
            let store = nodes[0]
            let appID = try await WorkQueueTests.tokenMessage(store, tokens: 1).appID
            let records = try await withThrowingTaskGroup(of: (Int, MessageRecord).self) { group in
                for n in 1...200 {
                    group.addTask {
                        (n, try await store.createMessage(Self.job(appID, n), state: n % 3 == 0 ? .scheduled : .queued))
                    }
                }
                return try await group.reduce(into: [Int: MessageRecord]()) { $0[$1.0] = $1.1 }
            }
            #expect(Set(records.values.map(\.id)).count == 200)
            for (n, record) in records {
                let stored = try #require(try await store.message(id: record.id))
                #expect(stored.audience == .tokens([String(format: "%064x", n)]))
                #expect(stored.labels == ["n": "\(n)"])
                #expect(stored.state == (n % 3 == 0 ? .scheduled : .queued))
                #expect(stored.sendAt == (n % 3 == 0 ? Date(timeIntervalSince1970: 2_000_000_000 + Double(n)) : nil))
                #expect(stored.content.title == "line \(n)")
            }
            // Rows one transaction inserted share its id (`xmin`).
            let transactions = try await store.read { conn in
                try conn.execute(
                    "SELECT count(DISTINCT xmin::text) FROM messages WHERE id = ANY($1::bigint[])",
                    [PostgresArray.int(records.values.map(\.id))]
                ).rows[0][0].int64 ?? 0
            }
            #expect(transactions < 100, "\(transactions) transactions for 200 messages")
        }
    }

    /// A batch in which one message's vendor id is taken: that one is refused (a conflict, as
    /// alone), the others are stored once each.
    @Test func aRefusedMessageFailsAloneAndTheRestOfItsBatchIsStoredOnce() async throws {
        try await WorkQueueTests.withNodes(1) { nodes in
            let store = nodes[0]
            let appID = try await WorkQueueTests.tokenMessage(store, tokens: 1).appID
            _ = try await store.createMessage(Self.job(appID, 0, vendorMessageID: "taken"), state: .queued)
            let rows = try (1...5).map { n in
                try Self.row(Self.job(appID, n, vendorMessageID: n == 3 ? "taken" : "v\(n)"))
            }
            let results = await PostgresStore.insertMessages(rows) { rows in
                try await store.write { conn in try PostgresStore.insertMessageRows(conn, rows) }
            }
            #expect(results.count == 5)
            for (index, result) in results.enumerated() {
                if index == 2 {
                    #expect(throws: StoreError.self) { try result.get() }
                    #expect((try? result.get()) == nil)
                } else {
                    let id = try result.get()
                    #expect(try await store.message(id: id)?.vendorMessageID == "v\(index + 1)")
                }
            }
            let stored = try await store.read { conn in
                try conn.execute("SELECT count(*) FROM messages WHERE app_id = $1", [.int(appID)]).rows[0][0].int64 ?? 0
            }
            #expect(stored == 1 + 1 + 4, "the work queue's message, the first 'taken', four of the five")
        }
    }

    /// The batch's fallback, without a database: refused, each goes alone; unavailable (it may
    /// have committed), none is tried again.
    @Test func aBatchThatMayHaveCommittedIsNeverInsertedAgain() async throws {
        let rows = try (1...3).map { try Self.row(Self.job(1, $0)) }
        let calls = Mutex<[Int]>([])
        let refused = await PostgresStore.insertMessages(rows) { batch in
            calls.withLock { $0.append(batch.count) }
            if batch.count > 1 { throw StoreError(.conflict, "one of them") }
            return [Int64(batch[0].labels.count)]
        }
        #expect(calls.withLock { $0 } == [3, 1, 1, 1])
        #expect(refused.allSatisfy { (try? $0.get()) != nil })
        calls.withLock { $0 = [] }
        let lost = await PostgresStore.insertMessages(rows) { batch in
            calls.withLock { $0.append(batch.count) }
            throw StoreError(.unavailable, "connection lost", unavailability: .databaseDown)
        }
        #expect(calls.withLock { $0 } == [3])
        #expect(lost.count == 3 && lost.allSatisfy { (try? $0.get()) == nil })
    }

    static func row(_ job: PushJob) throws -> MessageRow {
        try MessageRow(job, state: .queued, createdAt: 0)
    }
}
