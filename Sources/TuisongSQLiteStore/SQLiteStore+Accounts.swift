import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// The IM account writes SQLite does its own way (the rest is written once in
// `SQLStoreBackend+Accounts`): binding a device (this backend's device upsert) and the badge
// batching (`json_each`, group commit). Every write is one transaction on the single writer connection, so concurrent
// badge increments of one account are serialised and each gets its own value.
extension SQLiteStore: AccountStore {
    public func bindDevice(
        appID: Int64, account: String, registration: DeviceRegistration, credentialSelector: String?
    ) async throws -> Device {
        let now = nowMilliseconds
        return try await write { db in
            let executor = GRDBExecutor(db: db)
            try AccountQueries.insertAccount(executor, appID: appID, account: account, now: now)
            let registered = try Self.applyRegistration(db, appID: appID, registration, now: now).device
            return try AccountQueries.bindAccount(
                executor, deviceID: registered.id, appID: appID, account: account,
                credentialSelector: credentialSelector, now: now)
        }
    }

    public func incrementBadges(appID: Int64, accounts: [String]) async throws -> [String: Int] {
        guard !accounts.isEmpty else { return [:] }
        let now = nowMilliseconds
        // One statement for the whole list (a JSON array walked by json_each): an upsert per
        // account was most of this write's time for a 1,000-account page. An account named
        // twice is upserted twice; RETURNING's rows come in no set order, so the larger value
        // is its last.
        let list = JSONValue.serializedArray(accounts)
        let unique = Set(accounts).count
        // Grouped with the other small writes of the moment (each Easemob chat message counts
        // its receiver here before it is stored): a commit shared, not one per message.
        return try await groupWrite { db in
            let increment = try db.cachedStatement(sql: Self.incrementBadgesSQL)
            var values: [String: Int] = [:]
            values.reserveCapacity(unique)
            for row in try Row.fetchAll(increment, arguments: [appID, now, list]) {
                let account: String = row[0]
                let badge: Int = row[1]
                values[account] = max(values[account] ?? 0, badge)
            }
            guard values.count == unique else {
                throw StoreError(
                    .unavailable, "the badge increments returned \(values.count) values for \(unique) accounts")
            }
            return values
        }
    }

    public func grantBadges(appID: Int64, messageID: Int64, accounts: [AccountKey]) async throws -> [String: Int] {
        guard !accounts.isEmpty else { return [:] }
        let (names, ids) = BadgeGrantAccounts.distinct(accounts)
        let now = nowMilliseconds
        let list = Self.jsonArray(ids)
        // One transaction for the grants and the increments: a crash or a failed write between
        // an increment and its grant would count the account again when the page is decided
        // again. Recording the grants is the lookup too: the insert returns the accounts not yet
        // counted for the message. Each list goes in as one JSON array (json_each), so the
        // statements keep one shape and stay prepared whatever the page's length; accounts are
        // row ids, so every step is an integer-keyed B-tree seek. `+app_id` (a check on the rows
        // found, not an index term) keeps the planner from walking every account of the app
        // through the (app_id, account) index instead: quadratic in the audience. Grouped with
        // the grants of other messages decided at the same moment (a chat message each).
        return try await groupWrite { db in
            var counted: [Int64] = []
            counted.reserveCapacity(ids.count)
            let grant = try db.cachedStatement(
                sql: """
                    INSERT INTO badge_grants (message_id, account_id) SELECT ?1, value FROM json_each(?2) WHERE true
                    ON CONFLICT DO NOTHING RETURNING account_id
                    """)
            let inserted = try Int64.fetchCursor(grant, arguments: [messageID, list])
            while let id = try inserted.next() { counted.append(id) }
            var badges: [String: Int] = [:]
            badges.reserveCapacity(ids.count)
            func collect(_ statement: Statement, _ arguments: StatementArguments) throws {
                let rows = try Row.fetchCursor(statement, arguments: arguments)
                while let row = try rows.next() {
                    if let name = names[row[0] as Int64] { badges[name] = row[1] as Int }
                }
            }
            if !counted.isEmpty {
                try collect(
                    db.cachedStatement(
                        sql: """
                            UPDATE accounts SET badge = badge + 1, updated_at = ?3
                            WHERE id IN (SELECT value FROM json_each(?2)) AND +app_id = ?1
                            RETURNING id, badge
                            """), [appID, counted.count == ids.count ? list : Self.jsonArray(counted), now])
            }
            guard counted.count < ids.count else { return badges }
            // Counted for this message already (another page, or this one before a crash): the
            // counter as it is now. An account deleted since has no row, and so no badge.
            let countedNow = Set(counted)
            try collect(
                db.cachedStatement(
                    sql: """
                        SELECT id, badge FROM accounts WHERE id IN (SELECT value FROM json_each(?2)) AND +app_id = ?1
                        """), [appID, counted.isEmpty ? list : Self.jsonArray(ids.filter { !countedNow.contains($0) })])
            return badges
        }
    }

    /// `[1,2,…]`: a list of row ids bound to one statement parameter (`json_each`).
    private static func jsonArray(_ ids: [Int64]) -> String {
        "[" + ids.map(String.init).joined(separator: ",") + "]"
    }
}

extension SQLiteStore {
    /// Adds one to the badge of every account in the JSON array ?3 of app ?1 (creating missing
    /// accounts at 1; ?2 is now) and returns each new value.
    static let incrementBadgesSQL = """
        INSERT INTO accounts (app_id, account, badge, created_at, updated_at)
            SELECT ?1, value, 1, ?2, ?2 FROM json_each(?3) WHERE true
        ON CONFLICT (app_id, account) DO UPDATE SET
            badge = accounts.badge + 1, updated_at = excluded.updated_at
        RETURNING account, badge
        """

}
