import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// `PushJob.idempotencyKey`: a key names one message per app for 24 hours, committed with it.
@Suite("Idempotency keys")
struct IdempotencyKeyTests {
    static func job(_ appID: Int64, key: String?, tag: String = "news") -> PushJob {
        PushJob(
            appID: appID, vendor: "native", audience: .tag(tag), content: PushContent(),
            options: PushOptions(), idempotencyKey: key)
    }

    static func create(_ store: any GatewayStore, _ job: PushJob) async throws -> MessageRecord {
        try await store.createMessage(job, state: .queued)
    }

    static func keyRows(_ store: any GatewayStore) async throws -> Int {
        let count = try await store.sharedDatabase.read { db -> Int64? in
            try db.queryOne("SELECT COUNT(*) AS n FROM idempotency_keys")?["n"].int
        }
        return Int(count ?? -1)
    }

    @Test(arguments: Backend.allCases) func aRepeatAnswersTheFirstMessage(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "a")
            let other = try await makeApp(store, "b")
            let first = try await Self.create(store, Self.job(app.id, key: "order-1"))
            // Whatever the repeat carries, the first message answers; nothing new is created.
            let again = try await Self.create(store, Self.job(app.id, key: "order-1", tag: "other"))
            #expect(again.id == first.id)
            #expect(again.audience == .tag("news"))
            #expect(try await store.messages(appID: app.id, limit: 10).map(\.id) == [first.id])
            #expect(try await store.message(appID: app.id, idempotencyKey: "order-1")?.id == first.id)
            #expect(try await store.message(appID: app.id, idempotencyKey: "order-2") == nil)

            // The same key in another app, and another key in this one, are new messages.
            let elsewhere = try await Self.create(store, Self.job(other.id, key: "order-1"))
            #expect(elsewhere.id != first.id && elsewhere.appID == other.id)
            let second = try await Self.create(store, Self.job(app.id, key: "order-2"))
            #expect(second.id != first.id)
            // No key: every call is a message.
            let plain1 = try await Self.create(store, Self.job(app.id, key: nil))
            let plain2 = try await Self.create(store, Self.job(app.id, key: nil))
            #expect(plain1.id != plain2.id)
            #expect(try await store.messages(appID: app.id, limit: 10).count == 4)
            #expect(try await Self.keyRows(store) == 3)
        }
    }

    @Test(arguments: Backend.allCases) func concurrentRequestsWithOneKeyMakeOneMessage(_ backend: Backend) async throws
    {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let ids = try await withThrowingTaskGroup(of: Int64.self) { group in
                for _ in 0..<16 {
                    group.addTask { try await Self.create(store, Self.job(app.id, key: "retry-me")).id }
                }
                var ids: [Int64] = []
                for try await id in group { ids.append(id) }
                return ids
            }
            #expect(Set(ids).count == 1, "every request answers one message: \(ids)")
            #expect(try await store.messages(appID: app.id, limit: 100).map(\.id) == [ids[0]])
            #expect(try await Self.keyRows(store) == 1)
        }
    }

    @Test(arguments: Backend.allCases) func anExpiredKeyIsForgottenAndMayBeUsedAgain(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await withStore(backend, clock: clock) { store in
            let app = try await makeApp(store)
            let first = try await Self.create(store, Self.job(app.id, key: "k"))
            let old = try await Self.create(store, Self.job(app.id, key: "old"))
            clock.advance(by: IdempotencyKey.lifetime - 1)
            #expect(try await Self.create(store, Self.job(app.id, key: "k")).id == first.id)

            // Past its lifetime a key is ignored even before a sweep deletes it: the key is
            // taken over by the new message.
            clock.advance(by: 61)
            #expect(try await store.message(appID: app.id, idempotencyKey: "k") == nil)
            let renewed = try await Self.create(store, Self.job(app.id, key: "k"))
            #expect(renewed.id != first.id)
            #expect(try await Self.create(store, Self.job(app.id, key: "k")).id == renewed.id)
            // Creating a message with a key swept the expired ones (at most once a minute, and the
            // last sweep was 62 s ago).
            #expect(try await Self.keyRows(store) == 1, "\"old\" was swept")

            // A sweep deletes the expired rows, a bounded number per call; messages stay.
            let more = try await Self.create(store, Self.job(app.id, key: "fresh"))
            clock.advance(by: IdempotencyKey.lifetime + 1)
            let before = clock.now.addingTimeInterval(-IdempotencyKey.lifetime)
            #expect(try await Self.keyRows(store) == 2)
            #expect(try await store.forgetIdempotencyKeys(before: before, limit: 1) == 1)
            #expect(try await store.forgetIdempotencyKeys(before: before, limit: 1) == 1)
            #expect(try await store.forgetIdempotencyKeys(before: before, limit: 1) == 0)
            #expect(try await Self.keyRows(store) == 0)
            #expect(try await store.message(id: old.id) != nil)
            #expect(try await store.message(id: more.id) != nil)
            #expect(try await Self.create(store, Self.job(app.id, key: "old")).id != old.id)
        }
    }

    @Test(arguments: Backend.allCases) func aKeyGoesWithItsApp(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            _ = try await Self.create(store, Self.job(app.id, key: "k"))
            #expect(try await Self.keyRows(store) == 1)
            #expect(try await store.deleteApp(id: app.id))
            #expect(try await Self.keyRows(store) == 0)
        }
    }

    @Test func theKeyRule() {
        #expect(IdempotencyKey.isValid("a"))
        #expect(IdempotencyKey.isValid("order 42/retry~!"))
        #expect(IdempotencyKey.isValid(String(repeating: "x", count: 255)))
        #expect(!IdempotencyKey.isValid(""))
        #expect(!IdempotencyKey.isValid(String(repeating: "x", count: 256)))
        #expect(!IdempotencyKey.isValid("tab\there"))
        #expect(!IdempotencyKey.isValid("clé"))
    }
}
