import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// The console's queries, audience pages and counts, delivery listings, releasing held
/// deliveries and the backlog gauges, on SQLite and on PostgreSQL. Messages and delivery rows are
/// arranged with SQL both databases take (as a flush would leave them), so each query is checked
/// on its own.
@Suite struct ConsoleAudienceStoreTests {
    func registration(
        _ n: Int, _ environment: PushEnvironment = .production, user: String? = nil, tags: [String]? = nil
    ) -> DeviceRegistration {
        DeviceRegistration(token: token(n), environment: environment, user: user, tags: tags?.map(tag), channel: .apns)
    }

    func android(_ raw: String) -> DeviceRegistration {
        DeviceRegistration(token: DeviceToken(raw, channel: .fcm)!, environment: .production, channel: .fcm)
    }

    @Test(arguments: Backend.allCases)
    func devicesAreSearchedByTokenPrefixUserAndAllAndTagsCounted(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await search(store) }
    }

    func search(_ store: any GatewayStore) async throws {
        let appID = try await makeApp(store).id
        let first = try await store.registerDevice(appID: appID, registration(1, user: "u1", tags: ["b", "a"])).device
        let second = try await store.registerDevice(appID: appID, registration(2, .sandbox, tags: ["a"])).device
        _ = try await store.bindDevice(
            appID: appID, account: "alice", registration: registration(3), credentialSelector: nil)
        // Android tokens: mixed case and punctuation sort byte-wise, as SQLite compares them.
        for raw in ["fcm_b", "fcm-B", "fcmA", "fcm:a", "fcmZ"] {
            _ = try await store.registerDevice(appID: appID, android(raw))
        }

        // A hex prefix is an APNs token's, matched lower-case; pages follow the token cursor.
        let prefix = String(token(1).hex.prefix(60))
        var tokens: [String] = []
        var cursor: String?
        repeat {
            let page = try await store.searchDevices(
                appID: appID, query: .tokenPrefix(prefix.uppercased()), cursor: cursor, limit: 2)
            tokens += page.items.map(\.token)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(tokens == [token(1).hex, token(2).hex, token(3).hex])
        let android = try await store.searchDevices(appID: appID, query: .tokenPrefix("fcm"), cursor: nil, limit: 10)
        #expect(android.items.map(\.token) == ["fcm-B", "fcm:a", "fcmA", "fcmZ", "fcm_b"])
        #expect(android.items.allSatisfy { $0.channel == .fcm })
        #expect(
            try await store.searchDevices(appID: appID, query: .tokenPrefix("a b"), cursor: nil, limit: 10).items
                .isEmpty)
        await #expect(throws: StoreError.self) {
            _ = try await store.searchDevices(appID: appID, query: .tokenPrefix("fcm"), cursor: "t.xyz", limit: 10)
        }

        #expect(try await store.searchDevices(appID: appID, query: .user("u1"), cursor: nil, limit: 5).items == [first])
        #expect(
            try await store.searchDevices(appID: appID, query: .user("alice"), cursor: nil, limit: 5).items.map(
                \.imAccount)
                == ["alice"])
        let all = try await store.searchDevices(appID: appID, query: .all, cursor: nil, limit: 2)
        #expect(all.items.map(\.id) == [first.id, second.id])
        let rest = try await store.searchDevices(appID: appID, query: .all, cursor: all.nextCursor, limit: 100)
        #expect(rest.items.count == 6 && rest.nextCursor == nil)
        let tagged = try await store.searchDevices(appID: appID, query: .tag(tag("a")), cursor: nil, limit: 5)
        #expect(tagged.items.map(\.id) == [first.id, second.id])
        #expect(try await store.deviceCount(appID: appID) == 8)
        #expect(
            try await store.tagUsage(appID: appID, limit: 10) == [
                TagUsage(name: "a", devices: 2), TagUsage(name: "b", devices: 1),
            ])
        #expect(try await store.tagUsage(appID: appID, limit: 1) == [TagUsage(name: "a", devices: 2)])
    }

    @Test(arguments: Backend.allCases)
    func audiencePagesOfEveryKindAndTheirCounts(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await audiences(store) }
    }

    func audiences(_ store: any GatewayStore) async throws {
        let appID = try await makeApp(store).id
        let production = try await store.bindDevice(
            appID: appID, account: "alice", registration: registration(1, tags: ["a"]), credentialSelector: "s1")
        let sandbox = try await store.registerDevice(appID: appID, registration(2, .sandbox, tags: ["a"])).device
        let gone = try await store.registerDevice(appID: appID, registration(3, tags: ["a"])).device
        try await store.sharedDatabase.write { db in
            try db.execute("UPDATE devices SET invalidated_at = 1 WHERE id = ?", [.integer(gone.id)])
        }

        func page(_ audience: Audience, _ environment: PushEnvironment? = nil, after: Int64 = 0, details: Bool = false)
            async throws -> [AudienceEntry]
        {
            try await store.audiencePage(
                appID: appID, audience: audience, environment: environment, after: after, limit: 10,
                withRecipientDetails: details)
        }
        #expect(try await page(.all).map(\.deviceID) == [production.id, sandbox.id])
        // Another environment's devices are in the page, skipped and so counted.
        #expect(try await page(.all, .sandbox).map(\.deviceID) == [production.id, sandbox.id])
        #expect(try await page(.all, .sandbox).map(\.skipReason) == ["other_environment", nil])
        #expect(try await page(.all, after: production.id).map(\.deviceID) == [sandbox.id])
        #expect(try await page(.tag("a")).map(\.deviceID) == [production.id, sandbox.id])
        #expect(try await page(.tag("a"), .production).map(\.skipReason) == [nil, "other_environment"])
        #expect(try await page(.tag("nope")).isEmpty)
        let detailed = try await page(.tag("a"), details: true)
        #expect(detailed.map(\.account) == ["alice", nil])

        // Device ids: unknown and invalidated ones are entries to skip, in id order, once each.
        let byID = try await page(.devices([gone.id, 999_999, production.id, sandbox.id, production.id]), .production)
        #expect(byID.map(\.position) == [production.id, sandbox.id, gone.id, 999_999])
        #expect(byID.map(\.skipReason) == [nil, "other_environment", "DeviceInvalidated", "UnknownDevice"])
        #expect(try await page(.devices([production.id]), details: true).first?.account == "alice")

        // Tokens: positions are list indexes; an unregistered APNs token is sent, another is not.
        let tokens = try await page(.tokens([token(1).hex, token(3).hex, token(9).hex, "not-a-token"]), after: 1)
        #expect(tokens.map(\.position) == [2, 3, 4])
        #expect(tokens.map(\.deviceID) == [gone.id, nil, nil])
        #expect(tokens.map(\.skipReason) == ["DeviceInvalidated", nil, "UnknownDevice"])

        func count(_ audience: Audience, _ environment: PushEnvironment? = nil, upTo limit: Int? = nil) async throws
            -> Int
        {
            try await store.audienceCount(appID: appID, audience: audience, environment: environment, upTo: limit)
        }
        #expect(try await count(.all) == 2)
        #expect(try await count(.all, .sandbox) == 1)
        #expect(try await count(.tag("a")) == 2)
        #expect(try await count(.tag("a"), .production) == 1)
        #expect(try await count(.tag("a"), upTo: 1) == 1, "an emptiness check stops at one")
        #expect(try await count(.tag("nope"), .sandbox, upTo: 1) == 0)
        #expect(try await count(.accounts(["alice", "bob"])) == 1)
        #expect(try await count(.accounts(["alice"]), .sandbox) == 0)
        #expect(try await count(.accounts([])) == 0)
        #expect(try await count(.allAccounts) == 1)
        #expect(try await count(.devices([1, 2, 2])) == 2)
        #expect(try await count(.tokens(["a", "a"])) == 2)
    }

    /// A message of the app as `createMessage` would leave it, `state` and counts aside.
    func message(_ store: any GatewayStore, _ appID: Int64, state: String, completedAt: Int64?) async throws -> Int64 {
        try await store.sharedDatabase.write { db in
            try db.execute(
                """
                INSERT INTO messages (app_id, vendor, audience, content, options, state, created_at, completed_at)
                VALUES (?, 'native', '"all"', '{}', '{}', ?, 5, ?)
                """, [.integer(appID), .text(state), SQLValue(completedAt)])
            return db.lastInsertedRowID
        }
    }

    func delivery(
        _ store: any GatewayStore, _ messageID: Int64, _ device: Device, state: String, selector: String? = nil
    )
        async throws
    {
        try await store.sharedDatabase.write { db in
            try db.execute(
                """
                INSERT INTO deliveries (message_id, device_id, token, environment, state, attempts, updated_at,
                    credential_selector, next_attempt_at)
                VALUES (?, ?, ?, ?, ?, 1, 1, ?, ?)
                """,
                [
                    .integer(messageID), .integer(device.id), .text(device.token), .text(device.environment.rawValue),
                    .text(state), SQLValue(selector), state == "queued" ? .integer(9) : .null,
                ])
        }
    }

    @Test(arguments: Backend.allCases)
    func deliveriesAreListedReleasedAndCounted(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await deliveries(store) }
    }

    func deliveries(_ store: any GatewayStore) async throws {
        let appID = try await makeApp(store).id
        let other = try await makeApp(store, "other").id
        let phone = try await store.registerDevice(appID: appID, registration(1)).device
        let pad = try await store.registerDevice(appID: appID, registration(2, .sandbox)).device
        let done = try await message(store, appID, state: "completed", completedAt: 50)
        let sending = try await message(store, appID, state: "sending", completedAt: nil)
        let foreign = try await message(store, other, state: "completed", completedAt: 50)
        try await delivery(store, done, phone, state: "held")
        try await delivery(store, done, pad, state: "held", selector: "s2")
        try await delivery(store, done, phone, state: "failed")
        try await delivery(store, sending, phone, state: "queued")
        try await delivery(store, foreign, phone, state: "held")
        try await store.sharedDatabase.write { db in
            try db.execute(
                "UPDATE messages SET held = 3, failed = 1 WHERE id IN (?, ?)", [.integer(done), .integer(foreign)])
            try db.execute("UPDATE messages SET queued = 1 WHERE id = ?", [.integer(sending)])
            try db.execute(
                "INSERT INTO message_failures (message_id, reason, count) VALUES (?, 'BadDeviceToken', 1), (?, 'Gone', 0)",
                [.integer(done), .integer(sending)])
            try db.execute(
                "INSERT INTO message_skips (message_id, reason, count) VALUES (?, 'foreground', 2)", [.integer(done)])
        }

        let backlog = try await store.deliveryBacklog()
        #expect(backlog.retryQueued == 1 && backlog.held == 3)
        #expect(
            try await store.deliveries(deviceID: phone.id, limit: 10).map(\.messageID) == [
                foreign, sending, done, done,
            ])
        #expect(try await store.deliveries(deviceID: phone.id, limit: 1).map(\.state) == [.held])

        let held = try await store.deliveries(messageID: done, state: .held, cursor: nil, limit: 1)
        #expect(held.items.map(\.deviceID) == [phone.id] && held.nextCursor != nil)
        let next = try await store.deliveries(messageID: done, state: .held, cursor: held.nextCursor, limit: 1)
        #expect(next.items.map(\.credentialSelector) == ["s2"] && next.nextCursor == nil)
        #expect(try await store.deliveries(messageID: done, state: nil, cursor: nil, limit: 10).items.count == 3)
        await #expect(throws: StoreError.self) {
            _ = try await store.deliveries(messageID: done, state: nil, cursor: "bad", limit: 10)
        }

        // Held rows of this app go back to the queue, counts moved with them.
        #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .production, now: Date()) == 1)
        #expect(try await store.releaseHeldDeliveries(appID: appID, selector: "s2", now: Date()) == 1)
        #expect(try await store.releaseHeldDeliveries(appID: appID, selector: "s2", now: Date()) == 0)
        #expect(try await store.deliveryBacklog() == (retryQueued: 3, held: 1))

        let activity = try await store.messageActivity(since: SQLTime.date(40), scanLimit: 10)
        #expect(activity.map(\.id) == [foreign, sending, done])
        let counts = try #require(activity.last?.counts)
        #expect(counts.held == 1 && counts.queued == 2 && counts.failed == 1)
        #expect(try await store.messageActivity(since: SQLTime.date(60), scanLimit: 10).map(\.id) == [sending])
        #expect(
            try await store.failureReasons(since: SQLTime.date(0), scanLimit: 10) == ["BadDeviceToken": 1],
            "zero counts are left out")
        #expect(try await store.skipReasons(since: SQLTime.date(0), scanLimit: 10) == ["foreground": 2])
        #expect(try await store.skipReasons(since: SQLTime.date(6), scanLimit: 10).isEmpty)
    }

    /// On PostgreSQL a message's counts live per slice (`message_slices`) beside its row's own (its
    /// retries): releasing moves the counts of each delivery's slice, and the console sums them.
    @Test func releasingHeldDeliveriesMovesTheirSlicesCountsOnPostgreSQL() async throws {
        try await withStore(.postgresql) { store in
            let appID = try await makeApp(store).id
            let phone = try await store.registerDevice(appID: appID, registration(1)).device
            let id = try await message(store, appID, state: "sending", completedAt: nil)
            try await delivery(store, id, phone, state: "held")
            try await store.sharedDatabase.write { db in
                try db.execute("UPDATE messages SET held = 1 WHERE id = ?", [.integer(id)])
                try db.execute(
                    """
                    INSERT INTO message_slices (message_id, slice, after_position, cursor, held, delivered, updated_at)
                    VALUES (?, 1, 0, 0, 4, 10, 0), (?, 2, 100, 100, 0, 5, 0)
                    """, [.integer(id), .integer(id)])
                try db.execute(
                    """
                    INSERT INTO deliveries (message_id, slice, device_id, token, environment, state, updated_at)
                    VALUES (?, 1, ?, 'aa', 'production', 'held', 1), (?, 1, ?, 'bb', 'production', 'held', 1)
                    """, [.integer(id), .integer(phone.id), .integer(id), .integer(phone.id)])
                try db.execute(
                    "INSERT INTO message_skips (message_id, slice, reason, count) VALUES (?, 0, 'r', 1), (?, 2, 'r', 2)",
                    [.integer(id), .integer(id)])
            }
            #expect(try await store.releaseHeldDeliveries(appID: appID, environment: .production, now: Date()) == 3)
            let slices = try await store.sharedDatabase.read { db in
                try db.query("SELECT slice, held, queued FROM message_slices ORDER BY slice").map {
                    [$0["slice"].int, $0["held"].int, $0["queued"].int]
                }
            }
            #expect(slices == [[1, 2, 2], [2, 0, 0]])
            let activity = try #require(try await store.messageActivity(since: SQLTime.date(0), scanLimit: 10).first)
            #expect(activity.counts.held == 2 && activity.counts.queued == 3 && activity.counts.delivered == 15)
            #expect(try await store.skipReasons(since: SQLTime.date(0), scanLimit: 10) == ["r": 3])
        }
    }
}
