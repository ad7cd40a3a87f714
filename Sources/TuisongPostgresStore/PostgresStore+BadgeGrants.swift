import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

/// The badges of many pages granted together (`DeliveryEngine`'s policy decisions: a chat
/// load's messages each count their receiver once).
///
/// On PostgreSQL each statement is a round trip, and its fixed cost on both ends outweighs a
/// grant's work: one statement a page made the grant a round trip for every Tencent chat line
/// (issue #47). Here every page's grants and increments are one statement, atomic by itself:
/// the grants are inserted (in key order), the accounts they counted for the first time are
/// locked in id order and each is incremented once by the number of its new grants, and each
/// new grant is answered with its own value: an account's counter before the statement plus
/// its grant's rank among that account's new grants, in message order. Pages asking for
/// grants that were recorded before (another page, or this one before a crash) get the
/// counter as it is then, read after the statement, as `grantBadges(appID:messageID:accounts:)`
/// reads it.
extension PostgresStore {
    public func grantBadges(_ requests: [BadgeGrantRequest]) async throws -> [[String: Int]] {
        if requests.count == 1, let request = requests.first {
            return [
                try await grantBadges(appID: request.appID, messageID: request.messageID, accounts: request.accounts)
            ]
        }
        let grants = BadgeGrantBatch(requests)
        guard !grants.accounts.isEmpty else { return requests.map { _ in [:] } }
        let now = nowMilliseconds
        let counted = try await sqlWriteStatement { db in try grants.record(db, now: now) }
        var answers = grants.answers(counted)
        let uncounted = grants.uncounted(answers)
        guard !uncounted.isEmpty else { return answers }
        let current = try await sqlRead { db in try BadgeGrantBatch.current(db, uncounted) }
        grants.fill(&answers, current: current)
        return answers
    }
}

/// A batch of `BadgeGrantRequest`s as one statement's arrays: each (message, account) once.
struct BadgeGrantBatch {
    struct Grant: Hashable {
        var messageID: Int64
        var accountID: Int64
    }

    let requests: [BadgeGrantRequest]
    private(set) var apps: [Int64] = []
    private(set) var messages: [Int64] = []
    private(set) var accounts: [Int64] = []

    init(_ requests: [BadgeGrantRequest]) {
        self.requests = requests
        var seen: Set<Grant> = []
        for request in requests {
            for account in request.accounts
            where seen.insert(Grant(messageID: request.messageID, accountID: account.id)).inserted {
                apps.append(request.appID)
                messages.append(request.messageID)
                accounts.append(account.id)
            }
        }
    }

    /// Records the grants and increments the accounts they count for the first time; answers
    /// each new grant's badge. An account of another app than its message's, or deleted, is
    /// granted but not counted (no badge), as one page's call does.
    ///
    /// The statement joins no two of its own results: PostgreSQL takes each for one row and
    /// joined them in nested loops, every row of one against every row of the other (93 × 93
    /// comparisons twice for a batch of 93 Tencent chat lines, ~8 µs of the server's time a
    /// line, auto_explain; issue #47). The locks are taken before the update by a scalar read
    /// of `locked` (run once, first); the statement answers the new grants and each counted
    /// account's value after the update apart, and each grant's value is found here: the
    /// account's value before plus its grant's rank among that account's new grants, in
    /// message order.
    func record(_ db: any SQLExecutor, now: Int64) throws -> [Grant: Int] {
        var owned: [Grant] = []
        owned.reserveCapacity(accounts.count)
        var before: [Int64: Int] = [:]
        try db.forEachRow(
            """
            WITH v AS (
                SELECT * FROM unnest(\(PostgresArray.int(apps))::bigint[], \(PostgresArray.int(messages))::bigint[],
                    \(PostgresArray.int(accounts))::bigint[]) AS v(app_id, message_id, account_id)
            ), counted AS (
                INSERT INTO badge_grants (message_id, account_id)
                    SELECT message_id, account_id FROM v ORDER BY account_id, message_id
                ON CONFLICT DO NOTHING RETURNING message_id, account_id
            ), owned AS (
                SELECT c.message_id, c.account_id FROM counted c
                JOIN v ON v.message_id = c.message_id AND v.account_id = c.account_id
                JOIN accounts a ON a.id = c.account_id AND a.app_id = v.app_id
            ), locked AS (
                SELECT id FROM accounts WHERE id IN (SELECT account_id FROM owned) ORDER BY id FOR UPDATE
            ), updated AS (
                UPDATE accounts a SET badge = a.badge + i.n, updated_at = \(now)
                FROM (SELECT account_id, count(*) AS n FROM owned GROUP BY account_id) i
                WHERE a.id = i.account_id AND (SELECT count(*) FROM locked) >= 0
                RETURNING a.id, a.badge - i.n AS before
            )
            SELECT 1, message_id, account_id FROM owned
            UNION ALL SELECT 0, id, before FROM updated
            """
        ) { row in
            if row.int64(0) == 1 {
                owned.append(Grant(messageID: row.int64(1), accountID: row.int64(2)))
            } else {
                before[row.int64(1)] = Int(row.int64(2))
            }
        }
        var counted: [Grant: Int] = [:]
        counted.reserveCapacity(owned.count)
        var given: [Int64: Int] = [:]
        for grant in owned.sorted(by: { ($0.accountID, $0.messageID) < ($1.accountID, $1.messageID) }) {
            guard let base = before[grant.accountID] else { continue }
            given[grant.accountID, default: 0] += 1
            counted[grant] = base + (given[grant.accountID] ?? 0)
        }
        return counted
    }

    /// Each request's badges from the new grants' values.
    func answers(_ counted: [Grant: Int]) -> [[String: Int]] {
        requests.map { request in
            var badges: [String: Int] = [:]
            for account in request.accounts {
                if let badge = counted[Grant(messageID: request.messageID, accountID: account.id)] {
                    badges[account.name] = badge
                }
            }
            return badges
        }
    }

    /// The accounts some request got no new value for, by app.
    func uncounted(_ answers: [[String: Int]]) -> [Int64: Set<Int64>] {
        var uncounted: [Int64: Set<Int64>] = [:]
        for (request, badges) in zip(requests, answers) {
            for account in request.accounts where badges[account.name] == nil {
                uncounted[request.appID, default: []].insert(account.id)
            }
        }
        return uncounted
    }

    /// The counters of `uncounted` as they are now, by app and account id (a deleted account,
    /// or one of another app, has none).
    static func current(_ db: any SQLExecutor, _ uncounted: [Int64: Set<Int64>]) throws -> [Int64: [Int64: Int]] {
        var current: [Int64: [Int64: Int]] = [:]
        for (appID, ids) in uncounted {
            try db.forEachRow(
                "SELECT id, badge FROM accounts WHERE id = ANY(\(PostgresArray.int(ids.sorted()))::bigint[]) AND app_id = \(appID)"
            ) { row in current[appID, default: [:]][row.int64(0)] = Int(row.int64(1)) }
        }
        return current
    }

    /// The requests' answers completed with the counters read after the grants.
    func fill(_ answers: inout [[String: Int]], current: [Int64: [Int64: Int]]) {
        for (index, request) in requests.enumerated() {
            for account in request.accounts where answers[index][account.name] == nil {
                if let badge = current[request.appID]?[account.id] { answers[index][account.name] = badge }
            }
        }
    }
}
