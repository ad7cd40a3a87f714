import Foundation
import Testing
import TuisongCore
import TuisongPostgres

@testable import TuisongPostgresStore
@testable import TuisongSQLStore

/// The first pages of many messages read together (`audiencePages`, the delivery engine's page
/// reads): each answers what its own page read alone answers, and on PostgreSQL the list pages
/// of all of them take one statement per kind of list, not one each (issue #47).
@Suite struct AudiencePagesTogetherTests {
    func registration(_ n: Int, _ environment: PushEnvironment = .production) -> DeviceRegistration {
        DeviceRegistration(token: token(n), environment: environment, channel: .apns)
    }

    /// Two apps: in the first alice has three devices (one sandbox), bob one, carol one
    /// invalidated, and one device is bound to nobody; the second app has its own device with
    /// alice's first token and an account also named alice. Returns the first app's id, the
    /// second's, and the first app's device ids in registration order.
    func seed(_ store: any GatewayStore) async throws -> (app: Int64, other: Int64, devices: [Int64]) {
        let app = try await makeApp(store, "one").id
        let other = try await makeApp(store, "two").id
        var devices: [Int64] = []
        for (n, account, environment) in [
            (1, "alice", PushEnvironment.production), (2, "bob", .production), (3, "alice", .sandbox),
            (4, "carol", .production), (5, "alice", .production),
        ] {
            devices.append(
                try await store.bindDevice(
                    appID: app, account: account, registration: registration(n, environment), credentialSelector: nil
                ).id)
        }
        devices.append(try await store.registerDevice(appID: app, registration(6)).device.id)
        let invalidated = devices[3]
        try await store.sharedDatabase.write { db in
            try db.execute(
                "UPDATE devices SET invalidated_at = 1, invalid_reason = 'Unregistered' WHERE id = ?",
                [.integer(invalidated)])
        }
        _ = try await store.bindDevice(
            appID: other, account: "alice", registration: registration(1), credentialSelector: nil)
        return (app, other, devices)
    }

    func requests(app: Int64, other: Int64, devices: [Int64]) -> [AudiencePageRequest] {
        func request(
            _ appID: Int64, _ audience: Audience, _ environment: PushEnvironment? = nil, after: Int64 = 0,
            limit: Int = 10, details: Bool = false
        ) -> AudiencePageRequest {
            AudiencePageRequest(
                appID: appID, audience: audience, environment: environment, after: after, limit: limit,
                withRecipientDetails: details)
        }
        let tokens = (1...7).map { token($0).value }
        return [
            // Chat lines: one token, one account, one device each, in both apps.
            request(app, .tokens([tokens[0]])), request(other, .tokens([tokens[0]]), details: true),
            request(app, .accounts(["bob"])), request(other, .accounts(["alice"])),
            request(app, .devices([devices[1]])),
            // Token lists: unregistered (7), invalidated (4), another environment (3), repeated,
            // a cursor and a limit.
            request(app, .tokens(tokens), .production),
            request(app, .tokens(tokens), after: 2, limit: 3, details: true),
            request(app, .tokens([tokens[1], tokens[1], tokens[6]]), .sandbox),
            request(other, .tokens(tokens)), request(app, .tokens(tokens), after: 7),
            // Account lists: several accounts (the page is the first of them all in id order),
            // repeated, unknown, invalidated, a cursor, a limit, an environment.
            request(app, .accounts(["alice", "bob"]), limit: 2), request(app, .accounts(["bob", "alice", "bob"])),
            request(app, .accounts(["alice"]), .sandbox, after: devices[0]),
            request(app, .accounts(["carol", "dave"])),
            request(app, .accounts(["alice", "bob", "carol"]), .production, after: devices[1], limit: 1),
            // Device id lists: unknown, invalidated, another app's, repeated, a cursor, a limit.
            request(app, .devices(devices + [devices[0], 999_999]), .production),
            request(app, .devices(devices), after: devices[1], limit: 2, details: true),
            request(other, .devices(devices)),
            // Other audiences, read a statement each as before.
            request(app, .all, .sandbox), request(app, .allAccounts, limit: 2),
            request(app, .accounts([])), request(app, .devices([])), request(app, .tokens([])),
        ]
    }

    @Test(arguments: Backend.allCases)
    func pagesReadTogetherAnswerAsEachReadAlone(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let (app, other, devices) = try await seed(store)
            let requests = requests(app: app, other: other, devices: devices)
            let together = try await store.audiencePages(requests)
            #expect(together.count == requests.count)
            for (request, page) in zip(requests, together) {
                let alone = try await store.audiencePage(
                    appID: request.appID, audience: request.audience, environment: request.environment,
                    after: request.after, limit: request.limit, withRecipientDetails: request.withRecipientDetails)
                #expect(page == alone, "\(request)")
            }
            // The pages hold what they should, not merely the same as each other.
            #expect(together[0].map(\.deviceID) == [devices[0]])
            #expect(together[2].map(\.deviceID) == [devices[1]] && together[2][0].account == "bob")
            #expect(together[3].count == 1 && together[3][0].deviceID != devices[0])
            #expect(together[10].map(\.deviceID) == [devices[0], devices[1]])
            #expect(together[13].isEmpty, "carol's one device is invalidated; dave has none")
            #expect(together[17].allSatisfy { $0.skipReason == "UnknownDevice" })
        }
    }

    /// Thirty chat lines' pages (ten each of a token, an account, a device id) and one tag
    /// page: four statements on PostgreSQL.
    @Test func onPostgreSQLEachKindOfListIsOneStatementForAllTheRequests() async throws {
        try await withStore(.postgresql) { store in
            let (app, _, devices) = try await seed(store)
            _ = try await store.registerDevices(
                appID: app,
                [DeviceRegistration(token: token(8), environment: .production, tags: [tag("t")], channel: .apns)])
            var requests: [AudiencePageRequest] = []
            for n in 0..<10 {
                for audience in [
                    Audience.tokens([token(n % 7 + 1).value]), .accounts([["alice", "bob", "carol"][n % 3]]),
                    .devices([devices[n % devices.count]]),
                ] {
                    requests.append(
                        AudiencePageRequest(
                            appID: app, audience: audience, environment: nil, after: 0, limit: 500,
                            withRecipientDetails: true))
                }
            }
            requests.append(
                AudiencePageRequest(
                    appID: app, audience: .tag("t"), environment: nil, after: 0, limit: 500, withRecipientDetails: false
                ))
            let postgres = try #require(store as? PostgresStore)
            let chatLines = requests
            let (counted, pages) = try await postgres.sqlRead { db in
                let counter = CountingExecutor(db)
                let pages = try PostgresAudiencePages.pages(counter, chatLines)
                return (counter.statements, pages)
            }
            #expect(counted == 4, "\(counted) statements for \(requests.count) pages")
            #expect(pages.count == requests.count)
            #expect(pages.last?.map(\.token) == [token(8).value])
            #expect(pages[0].map(\.deviceID) == [devices[0]])
        }
    }
}

/// Counts the statements run through it, passing each on.
final class CountingExecutor: SQLExecutor, SQLRowVisitor {
    let base: any SQLExecutor
    private(set) var statements = 0

    init(_ base: any SQLExecutor) { self.base = base }

    var dialect: any SQLDialect { base.dialect }
    var lastInsertedRowID: Int64 { base.lastInsertedRowID }
    var changedRows: Int { base.changedRows }

    func execute(_ sql: String, _ arguments: [SQLValue]) throws {
        statements += 1
        try base.execute(sql, arguments)
    }

    func query(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
        statements += 1
        return try base.query(sql, arguments)
    }

    func forEachRow(
        _ sql: String, _ arguments: [SQLValue], plannedEachRun: Bool, _ body: (any ColumnValues) throws -> Void
    ) throws {
        statements += 1
        guard let visitor = base as? any SQLRowVisitor else {
            for row in try base.query(sql, arguments) { try body(row) }
            return
        }
        try visitor.forEachRow(sql, arguments, plannedEachRun: plannedEachRun, body)
    }
}
