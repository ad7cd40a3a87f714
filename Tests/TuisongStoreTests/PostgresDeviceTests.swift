import Foundation
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// Rows in one of the store's tables, on either backend.
func storedRowCount(_ store: any GatewayStore, _ table: String) async throws -> Int {
    precondition(table.allSatisfy { $0.isLetter || $0 == "_" }, "not a table name: \(table)")
    switch store {
    case let sqlite as SQLiteStore:
        return try await sqlite.rowCount(table)
    case let postgres as PostgresStore:
        return try await postgres.read { conn in try conn.execute("SELECT count(*) FROM \(table)").rows[0][0].int ?? 0 }
    default:
        throw StoreError(.unavailable, "no row count for \(type(of: store))")
    }
}

/// The app's devices, valid or invalidated, on either backend.
func storedDeviceCount(_ store: any GatewayStore, appID: Int64) async throws -> Int {
    switch store {
    case let sqlite as SQLiteStore:
        return try await sqlite.deviceCount(appID: appID)
    case let postgres as PostgresStore:
        return try await postgres.read { conn in
            try conn.execute("SELECT count(*) FROM devices WHERE app_id = $1", [.int(appID)]).rows[0][0].int ?? 0
        }
    default:
        throw StoreError(.unavailable, "no device count for \(type(of: store))")
    }
}

/// `invalidateDevice` of either store (not a `GatewayStore` requirement).
func invalidateDevice(_ store: any GatewayStore, id: Int64, reason: String, since: Date? = nil) async throws -> Bool {
    switch store {
    case let sqlite as SQLiteStore: return try await sqlite.invalidateDevice(id: id, reason: reason, since: since)
    case let postgres as PostgresStore: return try await postgres.invalidateDevice(id: id, reason: reason, since: since)
    default: throw StoreError(.unavailable, "no invalidateDevice for \(type(of: store))")
    }
}

/// What only the PostgreSQL store does: device imports through COPY, registrations from several
/// nodes at once.
@Suite("PostgreSQL devices")
struct PostgresDeviceTests {
    @Test("An import of 10,000 devices goes through COPY, merges into devices and tags, and is all or nothing")
    func importThroughCopy() async throws {
        try await withStore(.postgresql) { any in
            let store = try #require(any as? PostgresStore)
            let app = try await makeApp(store)
            _ = try await store.registerDevice(
                appID: app.id,
                DeviceRegistration(token: token(0), environment: .sandbox, tags: [tag("old")], channel: .apns))
            var batch = (0..<10_000).map {
                DeviceRegistration(
                    token: token($0), environment: .production, user: "u\($0)",
                    tags: $0 % 2 == 0 ? [tag("even"), tag("all")] : nil, channel: .apns)
            }
            // A token repeated later in the batch: applied in order, created once.
            batch.append(
                DeviceRegistration(
                    token: token(1), environment: .sandbox, locale: "fr", tags: [tag("again")], channel: .apns))

            let imported = try await store.importDevices(appID: app.id, batch)
            #expect(imported.copied == 10_001)
            #expect(imported.created == 9_999)
            #expect(try await storedDeviceCount(store, appID: app.id) == 10_000)

            #expect(try await store.tags(appID: app.id, token: token(0)) == ["all", "even"])
            let repeated = try #require(await store.deviceWithTags(appID: app.id, token: token(1)))
            #expect(repeated.tags == ["again"])
            #expect(repeated.device.user == "u1")
            #expect(repeated.device.locale == "fr")
            #expect(repeated.device.environment == .sandbox)
            let second = try #require(await store.device(appID: app.id, token: token(2)))
            let third = try #require(await store.device(appID: app.id, token: token(3)))
            #expect(second.id < third.id, "new devices get ids in the order of the batch")

            var even = 0
            var cursor: String?
            repeat {
                let page = try await store.devices(appID: app.id, tag: tag("even"), cursor: cursor, limit: 1000)
                even += page.items.count
                cursor = page.nextCursor
            } while cursor != nil
            #expect(even == 5_000)

            // A bad row (PostgreSQL text cannot hold NUL) fails the whole batch: nothing of it stays.
            let tagsBefore = try await storedRowCount(store, "tags")
            var bad = (10_000..<20_000).map {
                DeviceRegistration(token: token($0), environment: .sandbox, tags: [tag("second")], channel: .apns)
            }
            bad[9_999].user = "nul\u{0}inside"
            await #expect(throws: StoreError.self) { _ = try await store.registerDevices(appID: app.id, bad) }
            #expect(try await storedRowCount(store, "devices") == 10_000)
            #expect(try await storedRowCount(store, "tags") == tagsBefore)

            // The failed import left nothing behind on the connection: the same batch, mended, goes in.
            bad[9_999].user = nil
            #expect(try await store.registerDevices(appID: app.id, bad) == 10_000)
            #expect(try await storedRowCount(store, "devices") == 20_000)
        }
    }

    @Test("8 tasks on two nodes registering one token at once, with and without tags, yield one device")
    func sameTokenFromTwoNodes() async throws {
        try await withTestDatabase { url in
            let nodes = try (0..<2).map { _ in try PostgresStore(url: url, configuration: .init(poolSize: 4)) }
            defer { for node in nodes { try? node.close() } }
            let app = try await makeApp(nodes[0])
            for round in 0..<5 {
                let results = try await withThrowingTaskGroup(of: (Int64, Bool).self) { group in
                    for n in 0..<8 {
                        group.addTask {
                            let registration = DeviceRegistration(
                                token: token(round), environment: .sandbox, user: "user-\(n)",
                                tags: n % 2 == 0 ? [tag("t\(n % 4)"), tag("shared")] : nil, channel: .apns)
                            let (device, created) = try await nodes[n % 2].registerDevice(appID: app.id, registration)
                            return (device.id, created)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(Set(results.map(\.0)).count == 1, "round \(round)")
                #expect(results.filter(\.1).count == 1, "round \(round)")
                let tags = try await nodes[1].tags(appID: app.id, token: token(round))
                #expect(tags == ["shared", "t0"] || tags == ["shared", "t2"], "the last tagged registration's set")
            }
            #expect(try await storedDeviceCount(nodes[0], appID: app.id) == 5)
            #expect(try await storedRowCount(nodes[0], "tags") == 3)
        }
    }

    @Test("A one-token page keeps its plan on the connection, not planned again for every message")
    func aOneTokenPageKeepsItsPlan() async throws {
        try await withStore(.postgresql) { any in
            let store = try #require(any as? PostgresStore)
            let app = try await makeApp(store)
            _ = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(1), environment: .production, channel: .apns))
            let appID = app.id
            let wanted = token(1).value
            let (found, plans) = try await store.read { conn in
                let db = PostgresExecutor(conn, prepares: true)
                var found = 0
                for _ in 0..<12 {
                    found += try AudiencePages.page(
                        db,
                        AudiencePageRequest(
                            appID: appID, audience: .tokens([wanted]), environment: nil, after: 0, limit: 10,
                            withRecipientDetails: false)
                    ).count
                }
                let row = try conn.execute(
                    """
                    SELECT generic_plans, custom_plans FROM pg_prepared_statements
                    WHERE statement LIKE '%d.token IN (SELECT value FROM /* list */ (SELECT CAST($2 AS TEXT)%'
                    """
                ).rows.first
                return (found, (generic: row?[0].int ?? 0, custom: row?[1].int ?? 0))
            }
            #expect(found == 12)
            // PostgreSQL plans a prepared statement for its values five times, then keeps a
            // generic plan when that costs no more: from then on a message's page is not planned.
            #expect(plans.custom == 5)
            #expect(plans.generic == 7)
        }
    }

    @Test("A one-account page keeps its plan on the connection; a page of several is planned for its values")
    func aOneAccountPageKeepsItsPlan() async throws {
        try await withStore(.postgresql) { any in
            let store = try #require(any as? PostgresStore)
            let app = try await makeApp(store)
            for (n, account) in ["alice", "bob"].enumerated() {
                _ = try await store.bindDevice(
                    appID: app.id, account: account,
                    registration: DeviceRegistration(token: token(n), environment: .production, channel: .apns),
                    credentialSelector: nil)
            }
            let appID = app.id
            let (found, kept) = try await store.read { conn in
                let db = PostgresExecutor(conn, prepares: true)
                var found: [Int] = []
                for accounts in Array(repeating: ["alice"], count: 8) + [["alice", "bob"]] {
                    found.append(
                        try AudiencePages.page(
                            db,
                            AudiencePageRequest(
                                appID: appID, audience: .accounts(accounts), environment: nil, after: 0, limit: 10,
                                withRecipientDetails: true)
                        ).count)
                }
                let kept = try conn.execute(
                    "SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%d.im_account = value%'"
                ).rows.map { $0[0].string ?? "" }
                return (found, kept)
            }
            #expect(found == Array(repeating: 1, count: 8) + [2])
            #expect(kept.count == 1, "the one-account page, prepared once; the two-account one not kept")
            #expect(kept.first?.contains("CAST($1 AS TEXT)") == true)
        }
    }
}
