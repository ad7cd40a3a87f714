import Foundation
import Testing
import TuisongCore
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// IM accounts on the core tables, on a real SQLite file and on PostgreSQL.
@Suite struct AccountStoreTests {
    func app(_ store: any GatewayStore) async throws -> Int64 {
        try await store.createApp(name: "im", bundleID: "com.example.im", apiKeyHash: UUID().uuidString).id
    }

    func registration(_ n: Int, _ environment: PushEnvironment = .production, locale: String? = nil)
        -> DeviceRegistration
    {
        DeviceRegistration(token: token(n), environment: environment, locale: locale, channel: .apns)
    }

    /// A fresh database on `backend` that `body` may open (`open()`), close and open again,
    /// as a restart would.
    func withReopenableStore(
        _ backend: Backend, _ body: (_ open: () throws -> any GatewayStore) async throws -> Void
    ) async throws {
        switch backend {
        case .sqlite:
            let database = try TemporaryDatabase()
            defer { database.remove() }
            try await body { try SQLiteStore(path: database.path) }
        case .postgresql:
            try await withTestDatabase { url in try await body { try PostgresStore(url: url) } }
        }
    }

    @Test(arguments: Backend.allCases)
    func bindingMovesADeviceBetweenAccountsAndDeletingAnAccountUnbindsItsDevices(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await bindingMovesADevice(store) }
    }

    func bindingMovesADevice(_ store: any GatewayStore) async throws {
        let appID = try await app(store)
        #expect(try await store.createAccount(appID: appID, account: "alice"))
        #expect(try await store.createAccount(appID: appID, account: "alice") == false)

        let phone = try await store.bindDevice(
            appID: appID, account: "alice", registration: registration(1), credentialSelector: "12345")
        _ = try await store.bindDevice(
            appID: appID, account: "alice", registration: registration(2), credentialSelector: nil)
        #expect(phone.imAccount == "alice")
        #expect(phone.credentialSelector == "12345")
        #expect(try await store.devices(appID: appID, account: "alice").map(\.token) == [token(1).hex, token(2).hex])
        #expect(try await store.existingAccounts(appID: appID, among: ["alice", "bob"]) == ["alice"])

        // The same token bound by bob: one device, now bob's; bob is created on the way.
        let moved = try await store.bindDevice(
            appID: appID, account: "bob", registration: registration(1), credentialSelector: nil)
        #expect(moved.id == phone.id)
        #expect(moved.credentialSelector == nil, "a nil selector clears it")
        #expect(try await store.devices(appID: appID, account: "alice").map(\.token) == [token(2).hex])
        #expect(try await store.devices(appID: appID, account: "bob").map(\.id) == [phone.id])
        #expect(try await store.deviceCount(appID: appID) == 2)

        #expect(try await store.unbindDevice(appID: appID, token: token(2)))
        #expect(try await store.unbindDevice(appID: appID, token: token(2)) == false)
        #expect(try await store.devices(appID: appID, account: "alice").isEmpty)

        try await store.setAppState(appID: appID, account: "bob", .background)
        try await store.setBadge(appID: appID, account: "bob", to: 7)
        #expect(try await store.deleteAccount(appID: appID, account: "bob"))
        #expect(try await store.deleteAccount(appID: appID, account: "bob") == false)
        #expect(try await store.devices(appID: appID, account: "bob").isEmpty)
        #expect(try await store.device(id: phone.id)?.imAccount == nil, "the device stays, unbound")
        #expect(try await store.appState(appID: appID, account: "bob") == nil)
        #expect(try await store.badge(appID: appID, account: "bob") == 0)
        #expect(try await store.existingAccounts(appID: appID, among: ["alice", "bob"]) == ["alice"])
    }

    @Test(arguments: Backend.allCases)
    func accountsArePagedInCreationOrder(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await accountsArePaged(store) }
    }

    func accountsArePaged(_ store: any GatewayStore) async throws {
        let appID = try await app(store)
        let names = (1...7).map { "user\($0)" }
        for name in names { try await store.createAccount(appID: appID, account: name) }
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try await store.accounts(appID: appID, cursor: cursor, limit: 3)
            seen += page.items
            cursor = page.nextCursor
        } while cursor != nil
        #expect(seen == names)
    }

    @Test(arguments: Backend.allCases)
    func concurrentBadgeIncrementsOfOneAccountAreDistinctAndDurable(_ backend: Backend) async throws {
        try await withReopenableStore(backend) { open in try await concurrentBadgeIncrements(open) }
    }

    func concurrentBadgeIncrements(_ open: () throws -> any GatewayStore) async throws {
        var store = try open()
        let appID = try await app(store)
        try await store.setBadge(appID: appID, account: "alice", to: 4)
        let opened = store
        let values = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask { try await opened.incrementBadges(appID: appID, accounts: ["alice"])["alice"]! }
            }
            var values: [Int] = []
            for try await value in group { values.append(value) }
            return values
        }
        #expect(values.sorted() == Array(5...54), "50 distinct values after the reported 4")
        // One account named twice in one call is incremented twice.
        #expect(
            try await store.incrementBadges(appID: appID, accounts: ["alice", "bob", "alice"]) == [
                "alice": 56, "bob": 1,
            ])
        // One account alone, named more than once: a new account starts at its count (SQLite's
        // one-account statement takes the count as its value).
        #expect(try await store.incrementBadges(appID: appID, accounts: ["carol", "carol"]) == ["carol": 2])
        #expect(try await store.incrementBadges(appID: appID, accounts: ["carol", "carol", "carol"]) == ["carol": 5])

        try store.close()
        store = try open()
        defer { try? store.close() }
        #expect(try await store.badge(appID: appID, account: "alice") == 56, "survives a reopen")
        try await store.setBadge(appID: appID, account: "alice", to: 0)
        #expect(try await store.incrementBadges(appID: appID, accounts: ["alice"]) == ["alice": 1])
        await #expect(throws: StoreError.self) { try await store.setBadge(appID: appID, account: "alice", to: -1) }
    }

    @Test(arguments: Backend.allCases)
    func accountCallsMadeAtOnceAnswerEachAsAlone(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await accountCallsAtOnce(store) }
    }

    /// Many chat messages' account calls at once (on PostgreSQL they go to the database in
    /// batches): each answers what it would alone, and a call for an app deleted meanwhile
    /// fails without failing the calls it went with.
    func accountCallsAtOnce(_ store: any GatewayStore) async throws {
        let appID = try await app(store)
        let otherApp = try await app(store)
        let goneApp = try await app(store)
        #expect(try await store.deleteApp(id: goneApp))
        try await store.setBadge(appID: appID, account: "alice", to: 4)
        try await store.createAccount(appID: otherApp, account: "alice")
        enum Answer {
            case badges(app: Int64, [String: Int])
            case existing(Set<String>)
            case failed
        }
        let answers = await withTaskGroup(of: Answer.self) { group in
            for n in 0..<40 {
                group.addTask {
                    do {
                        switch n % 4 {
                        case 0:
                            return .badges(
                                app: appID,
                                try await store.incrementBadges(appID: appID, accounts: ["alice", "bob", "alice"]))
                        case 1:
                            return .badges(
                                app: otherApp, try await store.incrementBadges(appID: otherApp, accounts: ["alice"]))
                        case 2:
                            return .existing(
                                try await store.existingAccounts(appID: appID, among: ["alice", "bob", "nobody"]))
                        default:
                            // Alone for this phase: a gone app's call fails the batch it goes in,
                            // whose calls then go again each alone (below).
                            return .existing(try await store.existingAccounts(appID: goneApp, among: ["alice"]))
                        }
                    } catch {
                        return .failed
                    }
                }
            }
            var answers: [Answer] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        var alices: [Int] = []
        var bobs: [Int] = []
        var others: [Int] = []
        var failed = 0
        for answer in answers {
            switch answer {
            case .badges(let app, let badges) where app == appID:
                #expect(badges.keys.sorted() == ["alice", "bob"])
                alices.append(badges["alice"] ?? 0)
                bobs.append(badges["bob"] ?? 0)
            case .badges(let app, let badges) where app == otherApp: others.append(badges["alice"] ?? 0)
            case .badges: Issue.record("no other app")
            case .existing(let found) where found.isEmpty: break
            case .existing(let found): #expect(found.contains("alice") && !found.contains("nobody"), "\(found)")
            case .failed: failed += 1
            }
        }
        // Each call named alice twice: two consecutive values, the later one answered.
        #expect(alices.sorted() == Array(stride(from: 6, through: 24, by: 2)), "\(alices.sorted())")
        #expect(bobs.sorted() == Array(1...10) && others.sorted() == Array(1...10))
        #expect(failed == 0)
        #expect(try await store.badge(appID: appID, account: "alice") == 24)

        // Calls for an app deleted meanwhile among others: they fail, the others do not.
        let mixed = await withTaskGroup(of: Int?.self) { group in
            for n in 0..<20 {
                group.addTask {
                    try? await store.incrementBadges(appID: n % 10 == 3 ? goneApp : otherApp, accounts: ["carol"])[
                        "carol"]
                }
            }
            var values: [Int?] = []
            for await value in group { values.append(value) }
            return values
        }
        #expect(mixed.filter { $0 == nil }.count == 2, "the deleted app's two calls, and only they, failed")
        #expect(mixed.compactMap { $0 }.sorted() == Array(1...18))
        #expect(try await store.existingAccounts(appID: appID, among: ["bob", "nobody"]) == ["bob"])
        #expect(try await store.existingAccounts(appID: goneApp, among: ["zed"]) == [])
    }

    func sendingMessage(_ store: any GatewayStore, appID: Int64) async throws -> Int64 {
        let job = PushJob(
            appID: appID, vendor: "tencent", audience: .allAccounts, content: PushContent(),
            options: PushOptions())
        let message = try await store.createMessage(job, state: .queued)
        #expect(try await store.startMessage(id: message.id, total: nil, at: Date()))
        return message.id
    }

    /// The accounts' keys, creating the missing ones (in one transaction: thousands at once),
    /// in SQL both databases take.
    func keys(_ store: any GatewayStore, _ appID: Int64, _ names: [String]) async throws -> [AccountKey] {
        let rows = try await store.sharedDatabase.write { db in
            for start in stride(from: 0, to: names.count, by: 200) {
                let chunk = names[start..<min(names.count, start + 200)]
                try db.execute(
                    "INSERT INTO accounts (app_id, account, created_at, updated_at) VALUES "
                        + Array(repeating: "(?, ?, 0, 0)", count: chunk.count).joined(separator: ", ")
                        + " ON CONFLICT DO NOTHING",
                    chunk.flatMap { [SQLValue.integer(appID), .text($0)] })
            }
            return try SQLList.chunks(names).flatMap { list in
                try db.query(
                    "SELECT id, account FROM accounts WHERE app_id = ? AND account IN (\(list.marks))",
                    [.integer(appID)] + list.values)
            }
        }
        let ids = Dictionary(uniqueKeysWithValues: rows.map { ($0["account"].string ?? "", $0["id"].int ?? 0) })
        return names.map { AccountKey(id: ids[$0] ?? 0, name: $0) }
    }

    @Test(arguments: Backend.allCases)
    func badgesAreGrantedOncePerMessageEvenWhenPagesAskConcurrently(_ backend: Backend) async throws {
        try await withReopenableStore(backend) { open in try await badgesAreGrantedOnce(open) }
    }

    func badgesAreGrantedOnce(_ open: () throws -> any GatewayStore) async throws {
        var store = try open()
        let appID = try await app(store)
        try await store.setBadge(appID: appID, account: "alice", to: 4)
        let alice = try await keys(store, appID, ["alice"])[0]
        let bob = try await keys(store, appID, ["bob"])[0]
        let first = try await sendingMessage(store, appID: appID)
        let second = try await sendingMessage(store, appID: appID)

        // alice and bob on every page of the first message, asked for by 20 concurrent pages,
        // interleaved with the second message's pages: each message counts each account once.
        let opened = store
        let answers = try await withThrowingTaskGroup(of: (Int64, [String: Int]).self) { group in
            for page in 0..<40 {
                let message = page.isMultiple(of: 2) ? first : second
                group.addTask {
                    (
                        message,
                        try await opened.grantBadges(
                            appID: appID, messageID: message, accounts: [bob, alice, bob])
                    )
                }
            }
            var answers: [(Int64, [String: Int])] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        #expect(answers.count == 40)
        #expect(answers.allSatisfy { Set($0.1.keys) == ["alice", "bob"] })
        // Each message counted each account once, whichever page asked first: alice went from 4
        // to 6 and bob from 0 to 2, and every page saw one of those counts.
        #expect(Set(answers.compactMap { $0.1["alice"] }).isSubset(of: [5, 6]))
        #expect(Set(answers.compactMap { $0.1["bob"] }).isSubset(of: [1, 2]))
        #expect(try await store.badge(appID: appID, account: "alice") == 6)
        #expect(try await store.badge(appID: appID, account: "bob") == 2)
        let grants = try await store.sharedDatabase.read {
            try $0.queryOne("SELECT COUNT(*) AS n FROM badge_grants")?["n"].int
        }
        #expect(grants == 4, "one grant per (message, account)")

        // A page decided again after a reopen (a crash) is not counted again: its devices get the
        // account's counter as it is now, a reset included; a new account on it is counted.
        try store.close()
        store = try open()
        defer { try? store.close() }
        let carol = try await keys(store, appID, ["carol"])[0]
        let again = try await store.grantBadges(appID: appID, messageID: first, accounts: [alice, carol])
        #expect(again == ["alice": 6, "carol": 1])
        try await store.setBadge(appID: appID, account: "alice", to: 0)
        #expect(
            try await store.grantBadges(appID: appID, messageID: first, accounts: [carol, alice]) == [
                "alice": 0, "carol": 1,
            ])
        #expect(try await store.grantBadges(appID: appID, messageID: first, accounts: []) == [:])
        // An account deleted since gets no badge, counted or not.
        let dave = try await keys(store, appID, ["dave"])[0]
        #expect(try await store.deleteAccount(appID: appID, account: "carol"))
        #expect(try await store.deleteAccount(appID: appID, account: "dave"))
        #expect(
            try await store.grantBadges(appID: appID, messageID: first, accounts: [carol, dave, alice]) == ["alice": 0])

        // Grants of a message still sending are kept; a finished message's are forgotten,
        // across several bounded transactions when there are many.
        let many = try await keys(
            store, appID, (0..<(SQLiteStore.badgeGrantsForgottenPerTransaction + 7)).map { "user\($0)" })
        #expect(try await store.grantBadges(appID: appID, messageID: second, accounts: many).count == many.count)
        #expect(try await store.forgetFinishedBadgeGrants() == 0)
        try await store.setMessageState(id: second, .completed, at: Date())
        #expect(try await store.forgetFinishedBadgeGrants() == many.count + 2)
        #expect(try await store.forgetFinishedBadgeGrants() == 0)
        #expect(
            try await store.grantBadges(appID: appID, messageID: first, accounts: [alice]) == ["alice": 0],
            "the sending message kept its grants")
        #expect(try await store.badge(appID: appID, account: "alice") == 0, "no increment for a grant already given")
    }

    /// `forgetBadgeGrants(ofMessages:)`, what the engine asks for as messages finish: the listed
    /// messages' grants once they are not sending, a message with many in several bounded
    /// transactions; a listed message still sending, and one not listed, keep theirs.
    @Test(arguments: Backend.allCases)
    func theGrantsOfListedFinishedMessagesAreForgotten(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let appID = try await app(store)
            let named = try await keys(store, appID, ["alice", "bob"])
            let many = try await keys(
                store, appID, (0..<(SQLiteStore.badgeGrantsForgottenPerTransaction + 7)).map { "user\($0)" })
            let (finished, big, sending, unlisted) = (
                try await sendingMessage(store, appID: appID), try await sendingMessage(store, appID: appID),
                try await sendingMessage(store, appID: appID), try await sendingMessage(store, appID: appID)
            )
            for message in [finished, sending, unlisted] {
                _ = try await store.grantBadges(appID: appID, messageID: message, accounts: named)
            }
            _ = try await store.grantBadges(appID: appID, messageID: big, accounts: many)
            for message in [finished, big, unlisted] {
                try await store.setMessageState(id: message, .completed, at: Date())
            }
            #expect(
                try await store.forgetBadgeGrants(ofMessages: [sending, big, finished, finished, 987_654])
                    == 2 + many.count)
            #expect(try await store.forgetBadgeGrants(ofMessages: [finished, big]) == 0)
            let left = try await store.sharedDatabase.read { db in
                try db.query("SELECT DISTINCT message_id FROM badge_grants ORDER BY message_id").compactMap {
                    $0["message_id"].int
                }
            }
            #expect(left == [sending, unlisted].sorted())
            #expect(try await store.forgetBadgeGrants(ofMessages: []) == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func badgesOfManyPagesAreGrantedTogetherOncePerMessage(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await badgesGrantedTogether(store) }
    }

    /// `grantBadges(_:)`: pages of several messages (and two of one message) in one call, with
    /// an account counted before, one of another app, a deleted one and an empty page; then
    /// the same batch again (decided again after a crash), and batches racing each other.
    func badgesGrantedTogether(_ store: any GatewayStore) async throws {
        let appID = try await app(store)
        let otherApp = try await app(store)
        try await store.setBadge(appID: appID, account: "alice", to: 4)
        let named = try await keys(store, appID, ["alice", "bob", "carol", "dave"])
        let (alice, bob, carol, dave) = (named[0], named[1], named[2], named[3])
        let zed = try await keys(store, otherApp, ["zed"])[0]
        let (m1, m2, m3) = (
            try await sendingMessage(store, appID: appID), try await sendingMessage(store, appID: appID),
            try await sendingMessage(store, appID: appID)
        )
        let mZ = try await sendingMessage(store, appID: otherApp)
        #expect(try await store.grantBadges(appID: appID, messageID: m1, accounts: [alice]) == ["alice": 5])
        #expect(try await store.deleteAccount(appID: appID, account: "dave"))

        let batch = [
            BadgeGrantRequest(appID: appID, messageID: m2, accounts: [alice, bob, alice]),
            BadgeGrantRequest(appID: appID, messageID: m1, accounts: [alice, carol]),
            BadgeGrantRequest(appID: appID, messageID: m3, accounts: [bob]),
            BadgeGrantRequest(appID: appID, messageID: m2, accounts: [bob]),
            BadgeGrantRequest(appID: otherApp, messageID: mZ, accounts: [zed]),
            BadgeGrantRequest(appID: appID, messageID: m3, accounts: [zed, dave]),
            BadgeGrantRequest(appID: appID, messageID: m1, accounts: []),
        ]
        let answers = try await store.grantBadges(batch)
        #expect(answers.count == batch.count)
        // alice counted for m2 only (m1 had her already: the counter as it is then); bob once for
        // m2 and once for m3, a distinct value each; zed for his own app's message only.
        #expect(answers[0]["alice"] == 6 && answers[1] == ["alice": 6, "carol": 1])
        let bobs = [answers[0]["bob"], answers[2]["bob"]]
        #expect(Set(bobs) == [1, 2], "\(answers)")
        #expect(answers[3].keys.sorted() == ["bob"] && [1, 2].contains(answers[3]["bob"] ?? 0))
        #expect(answers[4] == ["zed": 1])
        #expect(answers[5] == [:], "an account of another app, and a deleted one, get no badge")
        #expect(answers[6] == [:])
        for (name, badge) in ["alice": 6, "bob": 2, "carol": 1] {
            #expect(try await store.badge(appID: appID, account: name) == badge, "\(name)")
        }
        #expect(try await store.badge(appID: otherApp, account: "zed") == 1)

        // The same batch again: nothing counted twice, every page gets the counter as it is.
        let again = try await store.grantBadges(batch)
        #expect(again[0] == ["alice": 6, "bob": 2] && again[1] == ["alice": 6, "carol": 1])
        #expect(again[2] == ["bob": 2] && again[3] == ["bob": 2] && again[4] == ["zed": 1])
        #expect(again[5] == [:] && again[6] == [:])
        #expect(try await store.badge(appID: appID, account: "bob") == 2)
        // One account alone (SQLite's key-lookup form): counted already, another app's, deleted.
        #expect(try await store.grantBadges(appID: appID, messageID: m3, accounts: [bob]) == ["bob": 2])
        #expect(try await store.grantBadges(appID: appID, messageID: m3, accounts: [zed]) == [:])
        #expect(try await store.grantBadges(appID: appID, messageID: m3, accounts: [dave]) == [:])
        #expect(try await store.badge(appID: otherApp, account: "zed") == 1)
        let erin = try await keys(store, appID, ["erin"])[0]
        #expect(try await store.grantBadges(appID: appID, messageID: m3, accounts: [erin]) == ["erin": 1])
        #expect(try await store.grantBadges(appID: appID, messageID: m3, accounts: [erin]) == ["erin": 1])

        // Batches racing over the same accounts, named in opposite orders: each message counts
        // each account once, and no batch waits for another in a cycle.
        var messages: [Int64] = []
        for _ in 0..<6 { messages.append(try await sendingMessage(store, appID: appID)) }
        let chosen = messages
        let raced = try await withThrowingTaskGroup(of: [[String: Int]].self) { group in
            for round in 0..<12 {
                group.addTask {
                    let ordered = round.isMultiple(of: 2) ? chosen : chosen.reversed()
                    return try await store.grantBadges(
                        ordered.map { message in
                            BadgeGrantRequest(
                                appID: appID, messageID: message,
                                accounts: round.isMultiple(of: 3) ? [carol, bob] : [bob, carol])
                        })
                }
            }
            var all: [[String: Int]] = []
            for try await answers in group { all += answers }
            return all
        }
        #expect(raced.count == 72 && raced.allSatisfy { Set($0.keys) == ["bob", "carol"] })
        #expect(try await store.badge(appID: appID, account: "bob") == 8)
        #expect(try await store.badge(appID: appID, account: "carol") == 7)
        #expect(Set(raced.compactMap { $0["bob"] }) == Set(3...8), "each of the six increments seen")
    }

    @Test(arguments: Backend.allCases)
    func finishedMessagesGrantsAreForgottenAcrossWalksOfManyMessages(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await forgetsFinishedGrants(store) }
    }

    /// More messages with grants than one walk takes (`badgeGrantMessagesPerRound`), finished
    /// and sending interleaved, plus grants of a message that no longer exists: every grant of a
    /// message not sending goes, those of the sending ones stay (and still count once).
    func forgetsFinishedGrants(_ store: any GatewayStore) async throws {
        let appID = try await app(store)
        let accounts = try await keys(store, appID, ["alice", "bob"])
        let perRound = SQLiteStore.badgeGrantMessagesPerRound
        var sending: [Int64] = []
        var finishedGrants = 0
        for index in 0..<(perRound + 44) {
            let message = try await sendingMessage(store, appID: appID)
            let granted = index.isMultiple(of: 3) ? accounts : [accounts[0]]
            let badges = try await store.grantBadges(appID: appID, messageID: message, accounts: granted)
            #expect(badges.count == granted.count)
            switch index % 4 {
            case 0: sending.append(message)
            case 1: try await store.setMessageState(id: message, .completed, at: Date())
            case 2: try await store.setMessageState(id: message, .cancelled, at: Date())
            default: try await store.setMessageState(id: message, .completed, at: Date())
            }
            if !index.isMultiple(of: 4) { finishedGrants += granted.count }
        }
        let gone: Int64 = 1 << 40
        try await store.sharedDatabase.write { db in
            try db.execute(
                "INSERT INTO badge_grants (message_id, account_id) VALUES (?, ?), (?, ?)",
                [.integer(gone), .integer(accounts[0].id), .integer(gone), .integer(accounts[1].id)])
        }
        let badges = try await store.badge(appID: appID, account: "alice")

        #expect(try await store.forgetFinishedBadgeGrants() == finishedGrants + 2)
        #expect(try await store.forgetFinishedBadgeGrants() == 0)
        let left = try await store.sharedDatabase.read { db in
            try db.query("SELECT DISTINCT message_id FROM badge_grants ORDER BY message_id").compactMap {
                $0["message_id"].int
            }
        }
        #expect(left == sending, "only the sending messages' grants are kept")
        for message in sending.prefix(3) {
            _ = try await store.grantBadges(appID: appID, messageID: message, accounts: [accounts[0]])
        }
        #expect(try await store.badge(appID: appID, account: "alice") == badges, "a kept grant is not counted again")
    }

    @Test(arguments: Backend.allCases)
    func accountAudiencesCarryAccountAppStateLocaleAndSelectorPageByPage(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await accountAudiences(store) }
    }

    /// Marks the device invalid as an APNs 410 would (`invalidateDevice` is each store's own).
    func invalidate(_ store: any GatewayStore, _ deviceID: Int64) async throws {
        try await store.sharedDatabase.write { db in
            try db.execute(
                "UPDATE devices SET invalidated_at = ?, invalid_reason = 'Unregistered' WHERE id = ?",
                [.integer(1), .integer(deviceID)])
            #expect(db.changedRows == 1)
        }
    }

    func accountAudiences(_ store: any GatewayStore) async throws {
        let appID = try await app(store)
        // alice: two devices, bob: one, carol: one (invalidated), one unbound device.
        let alice1 = try await store.bindDevice(
            appID: appID, account: "alice", registration: registration(1, locale: "zh_CN"), credentialSelector: "111")
        _ = try await store.registerDevice(appID: appID, registration(2))
        let bob = try await store.bindDevice(
            appID: appID, account: "bob", registration: registration(3, .sandbox), credentialSelector: nil)
        let alice2 = try await store.bindDevice(
            appID: appID, account: "alice", registration: registration(4), credentialSelector: "222")
        let carol = try await store.bindDevice(
            appID: appID, account: "carol", registration: registration(5), credentialSelector: nil)
        try await invalidate(store, carol.id)
        try await store.setAppState(appID: appID, account: "alice", .background)
        try await store.setAppState(appID: appID, account: "bob", .foreground)

        func pages(_ audience: Audience, size: Int) async throws -> [[AudienceEntry]] {
            var result: [[AudienceEntry]] = []
            var cursor: Int64 = 0
            while true {
                let page = try await store.audiencePage(
                    appID: appID, audience: audience, environment: nil, after: cursor, limit: size)
                if page.isEmpty { return result }
                result.append(page)
                cursor = page[page.count - 1].position
            }
        }
        let all = try await pages(.allAccounts, size: 2)
        #expect(all.map { $0.map(\.deviceID) } == [[alice1.id, bob.id], [alice2.id]])
        let entries = all.flatMap { $0 }
        #expect(entries.map(\.account) == ["alice", "bob", "alice"])
        let ids = try await keys(store, appID, ["alice", "bob"]).map(\.id)
        #expect(entries.map(\.accountID) == [ids[0], ids[1], ids[0]], "each device carries its account's row")
        #expect(entries.map(\.recipient.accountKey?.name) == ["alice", "bob", "alice"])
        #expect(entries.map(\.appState) == [.background, .foreground, .background])
        #expect(entries.map(\.locale) == ["zh_CN", nil, nil])
        #expect(entries.map(\.credentialSelector) == ["111", nil, "222"])
        #expect(entries.map(\.environment) == [.production, .sandbox, .production])
        #expect(try await store.audienceCount(appID: appID, audience: .allAccounts) == 3)
        #expect(
            try await store.audienceCount(appID: appID, audience: .allAccounts, environment: .sandbox, upTo: nil) == 1)

        let alice = try await pages(.accounts(["alice", "carol"]), size: 1)
        #expect(alice.flatMap { $0 }.map(\.deviceID) == [alice1.id, alice2.id])
        #expect(alice.flatMap { $0 }.allSatisfy { $0.account == "alice" && $0.appState == .background })
        // An account named twice is one account: its devices once each, in device order.
        let twice = try await pages(.accounts(["bob", "alice", "bob", "alice"]), size: 2)
        #expect(twice.flatMap { $0 }.map(\.deviceID) == [alice1.id, bob.id, alice2.id])

        // Other audiences carry the selector always, the rest on request.
        let plain = try await store.audiencePage(appID: appID, audience: .all, environment: nil, after: 0, limit: 10)
        #expect(plain.map(\.credentialSelector) == ["111", nil, nil, "222"])
        #expect(plain.allSatisfy { $0.account == nil })
        let detailed = try await store.audiencePage(
            appID: appID, audience: .all, environment: nil, after: 0, limit: 10, withRecipientDetails: true)
        #expect(detailed.map(\.account) == ["alice", nil, "bob", "alice"])
        #expect(detailed.map(\.appState) == [.background, nil, .foreground, .background])

        // A device carries its account's state: copied when bound (dave reported before his
        // device was bound), moved with a rebinding, changed with the account, gone unbound.
        try await store.setAppState(appID: appID, account: "dave", .foreground)
        let dave = try await store.bindDevice(
            appID: appID, account: "dave", registration: registration(6), credentialSelector: nil)
        _ = try await store.bindDevice(
            appID: appID, account: "bob", registration: registration(4), credentialSelector: nil)
        try await store.setAppState(appID: appID, account: "bob", .background)
        #expect(try await store.unbindDevice(appID: appID, token: token(1)))
        let moved = try await pages(.allAccounts, size: 10).flatMap { $0 }
        #expect(moved.map(\.deviceID) == [bob.id, alice2.id, dave.id])
        #expect(moved.map(\.account) == ["bob", "bob", "dave"])
        let daveID = try await keys(store, appID, ["dave"])[0].id
        #expect(moved.map(\.accountID) == [ids[1], ids[1], daveID])
        #expect(moved.map(\.appState) == [.background, .background, .foreground])
        let unbound = try await store.audiencePage(
            appID: appID, audience: .all, environment: nil, after: 0, limit: 10, withRecipientDetails: true)
        #expect(
            unbound.first { $0.deviceID == alice1.id }.map {
                $0.account == nil && $0.accountID == nil && $0.appState == nil
            } == true)
        #expect(try await store.deleteAccount(appID: appID, account: "dave"))
        let left = try await store.audiencePage(
            appID: appID, audience: .all, environment: nil, after: 0, limit: 10, withRecipientDetails: true)
        #expect(
            left.first { $0.deviceID == dave.id }.map { $0.account == nil && $0.accountID == nil && $0.appState == nil }
                == true)
    }

    @Test(arguments: Backend.allCases)
    func vendorContextAndPerDevicePayloadsAreKept(_ backend: Backend) async throws {
        try await withStore(backend) { store in try await vendorContextAndPayloads(store) }
    }

    func vendorContextAndPayloads(_ store: any GatewayStore) async throws {
        let appID = try await app(store)
        let context: JSONValue = ["From_Account": "alice", "MsgBody": [["MsgType": "TIMTextElem"]], "n": 3]
        let job = PushJob(
            appID: appID, vendor: "tencent", audience: .accounts(["bob"]), content: PushContent(),
            options: PushOptions(), vendorContext: context)
        let message = try await store.createMessage(job, state: .queued)
        #expect(message.vendorContext == context)
        #expect(try await store.message(id: message.id)?.vendorContext == context)
        let plain = try await store.createMessage(
            PushJob(
                appID: appID, vendor: "native", audience: .all, content: PushContent(),
                options: PushOptions()), state: .queued)
        #expect(plain.vendorContext == nil)

        let own = PushContent(badge: 5)
        try await store.recordProgress(
            MessageProgress(
                messageID: message.id, cursor: 2,
                counts: {
                    var c = DeliveryCounts()
                    c.queued = 1
                    c.skipped = 1
                    return c
                }(),
                skips: ["foreground": 1],
                deliveries: [
                    NewDelivery(
                        deviceID: nil, token: token(1).hex, environment: .production, state: .queued,
                        reason: "ServiceUnavailable", attempts: 1, nextAttemptAt: Date(), content: own,
                        credentialSelector: "111", channel: .apns),
                    NewDelivery(
                        deviceID: nil, token: token(2).hex, environment: .production, state: .skipped,
                        reason: "foreground", attempts: 0, channel: .apns),
                ]), at: Date())
        let stored = try #require(try await store.message(id: message.id))
        #expect(stored.skips == ["foreground": 1])
        #expect(stored.counts.skipped == 1)
        let claimed = try await store.claimDueDeliveries(now: Date().addingTimeInterval(1), limit: 10)
        #expect(claimed.count == 1)
        #expect(claimed.first?.content == own)
        #expect(claimed.first?.credentialSelector == "111")
        let skipped = try await store.deliveries(messageID: message.id, state: .skipped, cursor: nil, limit: 10)
        #expect(skipped.items.first?.content == nil)
    }
}
