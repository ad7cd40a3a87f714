import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

/// The IM vendors' per-message account calls on the accept path, batched: a Tencent chat line
/// checks that its receiver exists (`existingAccounts`), an Easemob one counts its receiver's
/// badge (`incrementBadges`). On PostgreSQL each was a round trip a message, whose fixed cost on
/// the server outweighs the row it reads or writes (issue #47). Calls made while others are at
/// the database go together next (`StoreBatcher`, as accepted messages' inserts do): one
/// statement for all of them. An idle store sends a call at once, alone.
extension PostgresStore {
    public func existingAccounts(appID: Int64, among accounts: [String]) async throws -> Set<String> {
        guard !accounts.isEmpty else { return [] }
        return try await accountLookups.submit(AccountList(appID: appID, accounts: accounts))
    }

    public func incrementBadges(appID: Int64, accounts: [String]) async throws -> [String: Int] {
        guard !accounts.isEmpty else { return [:] }
        return try await badgeIncrements.submit(AccountList(appID: appID, accounts: accounts))
    }
}

/// One call's accounts, for `PostgresStore`'s account batches.
struct AccountList: Sendable {
    var appID: Int64
    var accounts: [String]

    /// Lists weigh their length: a batch carries at most this many names (a long list goes
    /// alone, as it would have).
    static let batchWeight = 1_000

    /// Which of each list's accounts exist: one statement for every list, with its generic plan
    /// (`runWithGenericPlan`): its plan (each listed name looked up by the `(app_id, account)`
    /// key) does not depend on the names, and PostgreSQL, left to itself, planned it again on
    /// 96 % of its runs, ~120 µs each, twice its own run (issue #47: 15 µs of a Tencent chat
    /// line's server time went to planning it, 7 µs to running it; `pg_stat_statements`).
    static func existing(_ conn: PostgresConnection, _ lists: [AccountList]) throws -> [Set<String>] {
        var apps: [Int64] = []
        var names: [String] = []
        var requests: [Int64] = []
        for (index, list) in lists.enumerated() {
            for name in Set(list.accounts) {
                apps.append(list.appID)
                names.append(name)
                requests.append(Int64(index))
            }
        }
        var found = [Set<String>](repeating: [], count: lists.count)
        let rows = try conn.runWithGenericPlan(
            """
            SELECT v.request, v.account FROM unnest(\(PostgresArray.int(requests))::bigint[],
                \(PostgresArray.int(apps))::bigint[], \(PostgresArray.text(names))::text[]) AS v(request, app_id, account)
            WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.app_id = v.app_id AND a.account = v.account)
            """
        ).rows
        for row in rows { found[Int(row.int64(at: 0))].insert(row[1].string ?? "") }
        return found
    }

    /// Adds one to each named account's badge (creating missing accounts), once per time each
    /// list names it, in one statement; each list gets the values its own call would have: an
    /// account several lists name is counted in the lists' order, each occurrence getting the
    /// next value (a list naming one twice gets the later).
    static func incrementBadges(_ db: any SQLExecutor, _ lists: [AccountList], now: Int64) throws -> [[String: Int]] {
        struct Key: Hashable {
            var appID: Int64
            var account: String
        }
        var apps: [Int64] = []
        var names: [String] = []
        var counts: [Key: Int] = [:]
        for list in lists {
            for name in list.accounts {
                apps.append(list.appID)
                names.append(name)
                counts[Key(appID: list.appID, account: name), default: 0] += 1
            }
        }
        var final: [Key: Int] = [:]
        final.reserveCapacity(counts.count)
        // Locks taken in key order, so two batches counting the same accounts never wait for
        // each other in a cycle; an account named n times is upserted once with n (PostgreSQL
        // refuses an upsert touching one row twice).
        try db.forEachRow(
            """
            INSERT INTO accounts (app_id, account, badge, created_at, updated_at)
                SELECT app_id, account, count(*), \(now), \(now)
                FROM unnest(\(PostgresArray.int(apps))::bigint[], \(PostgresArray.text(names))::text[]) AS v(app_id, account)
                GROUP BY app_id, account ORDER BY app_id, account
            ON CONFLICT (app_id, account) DO UPDATE SET
                badge = accounts.badge + excluded.badge, updated_at = excluded.updated_at
            RETURNING app_id, account, badge
            """
        ) { row in final[Key(appID: row.int64(0), account: row.string(1))] = Int(row.int64(2)) }
        guard final.count == counts.count else {
            throw StoreError(
                .unavailable, "the badge increments returned \(final.count) values for \(counts.count) accounts")
        }
        var given: [Key: Int] = [:]
        return lists.map { list in
            var values: [String: Int] = [:]
            for name in list.accounts {
                let key = Key(appID: list.appID, account: name)
                let before = (final[key] ?? 0) - (counts[key] ?? 0)
                given[key, default: 0] += 1
                values[name] = before + (given[key] ?? 0)
            }
            return values
        }
    }
}
