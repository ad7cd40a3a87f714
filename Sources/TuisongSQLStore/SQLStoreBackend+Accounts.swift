import Foundation
import TuisongCore

// IM accounts on the core tables, written once: `accounts` (app state, badge) and
// `devices.im_account` (the bound account) with `devices.account_id`, `devices.app_state` and
// `devices.credential_selector`. Binding a device registers it with the backend's own upsert
// (`sqlRegister`). The badge batching binds each list as one parameter (`SQLDialect.listTable`),
// and where writers run side by side (PostgreSQL) takes its rows' locks in key order, so two
// pages counting the same accounts never wait for each other in a cycle.
extension SQLStoreBackend {
    /// Which of `accounts` exist in the app, the list in padded `SQLList` chunks.
    public func existingAccounts(appID: Int64, among accounts: [String]) async throws -> Set<String> {
        let chunks = SQLList.chunks(accounts)
        guard !chunks.isEmpty else { return [] }
        let read: @Sendable (any SQLExecutor) throws -> Set<String> = { db in
            var found = Set<String>()
            for list in chunks {
                for row in try db.fetchAll(
                    "SELECT account FROM accounts WHERE app_id = \(appID) AND account IN (\(SQLQuery.list(list)))")
                {
                    found.insert(row.string(0))
                }
            }
            return found
        }
        // Every chat message asks this of its receiver: a row by index, on the calling thread.
        // Long lists (a batch send's 500) go through a reader, not holding this thread.
        return accounts.count <= Self.quickReadLimit ? try await sqlQuickRead(read) : try await sqlRead(read)
    }

    /// Lists up to this long are looked up with `sqlQuickRead`.
    public static var quickReadLimit: Int { 64 }

    /// Registers the device and binds it to `account` (created if missing), in one write.
    public func bindDevice(
        appID: Int64, account: String, registration: DeviceRegistration, credentialSelector: String?
    ) async throws -> Device {
        let now = nowMilliseconds
        return try await sqlWrite { db in
            try AccountQueries.insertAccount(db, appID: appID, account: account, now: now)
            let deviceID = try self.sqlRegister(db, appID: appID, registration, now: now)
            return try AccountQueries.bindAccount(
                db, deviceID: deviceID, appID: appID, account: account, credentialSelector: credentialSelector,
                now: now)
        }
    }

    /// Adds one to the badge of every account named (creating missing accounts), once per time
    /// it is named, and returns each new value. One statement for the whole list: an upsert per
    /// account was most of this write's time for a 1,000-account page. An account named n times
    /// is upserted once with n (PostgreSQL refuses an upsert touching one row twice).
    public func incrementBadges(appID: Int64, accounts: [String]) async throws -> [String: Int] {
        guard !accounts.isEmpty else { return [:] }
        let now = nowMilliseconds
        let unique = Set(accounts).count
        // Grouped with the other small writes of the moment on SQLite (each Easemob chat message
        // counts its receiver here before it is stored): a commit shared, not one per message.
        // Where writes commit alone (PostgreSQL) the one statement goes without BEGIN and
        // COMMIT, one round trip (issue #47); the count check after it then reports a statement
        // that has committed (it cannot fail: the upsert returns every row it touched).
        return try await sqlGroupWriteStatement { db in
            var values: [String: Int] = [:]
            values.reserveCapacity(unique)
            // One account (a chat message's receiver): one row of values. The list's form, even
            // as its one-row table, sorts for its GROUP BY in an ephemeral table opened and
            // closed each time: 9.7 against 5.4 µs a call (the system's SQLite 3.40 through
            // Python's sqlite3, whose own call is 1.4: bench/sqlite-one-account.py).
            let rows: SQLQuery =
                if unique == 1 {
                    "VALUES (\(appID), \(accounts[0]), \(Int64(accounts.count)), \(now), \(now))"
                } else {
                    """
                    SELECT \(appID), value, count(*), \(now), \(now) FROM \(db.dialect.list(accounts))
                        WHERE true GROUP BY value\(raw: db.dialect.hasConcurrentWriters ? " ORDER BY value" : "")
                    """
                }
            try db.forEachRow(
                """
                INSERT INTO accounts (app_id, account, badge, created_at, updated_at) \(rows)
                ON CONFLICT (app_id, account) DO UPDATE SET
                    badge = accounts.badge + excluded.badge, updated_at = excluded.updated_at
                RETURNING account, badge
                """
            ) { row in values[row.string(0)] = Int(row.int64(1)) }
            guard values.count == unique else {
                throw StoreError(
                    .unavailable, "the badge increments returned \(values.count) values for \(unique) accounts")
            }
            return values
        }
    }

    /// One transaction for the grants and the increments: a crash or a failed write between an
    /// increment and its grant would count the account again when the page is decided again.
    /// Recording the grants is the lookup too: the insert returns the accounts not yet counted
    /// for the message. A page of the same message writing the same grant concurrently
    /// (PostgreSQL) waits for this one's commit and then finds the grant: each account is
    /// counted once. Accounts are row ids, so every step is an integer-keyed seek; `+app_id` (a
    /// check on the rows found, not an index term) keeps SQLite's planner from walking every
    /// account of the app through the (app_id, account) index instead: quadratic in the
    /// audience. SQLite groups the grants with the other small writes of the moment (a chat
    /// message each); PostgreSQL, whose writes each commit alone, sends them as one statement.
    public func grantBadges(appID: Int64, messageID: Int64, accounts: [AccountKey]) async throws -> [String: Int] {
        guard !accounts.isEmpty else { return [:] }
        let (names, ids) = BadgeGrantAccounts.distinct(accounts)
        let now = nowMilliseconds
        guard sqlGroupsWrites else {
            return try await grantBadgesInOneStatement(
                appID: appID, messageID: messageID, names: names, ids: ids, now: now)
        }
        return try await sqlGroupWrite { db in
            try BadgeGrantAccounts.grant(db, appID: appID, messageID: messageID, names: names, ids: ids, now: now)
        }
    }

    /// Where writes are grouped (SQLite) the requests' grants go in one write, each request's
    /// statements as `grantBadges(appID:messageID:accounts:)` runs them, in order; elsewhere each
    /// request is granted in turn (PostgreSQL's store sends the whole batch as one statement:
    /// `PostgresStore.grantBadges(_:)`).
    public func grantBadges(_ requests: [BadgeGrantRequest]) async throws -> [[String: Int]] {
        guard sqlGroupsWrites, requests.count > 1 else {
            var answers: [[String: Int]] = []
            answers.reserveCapacity(requests.count)
            for request in requests {
                answers.append(
                    try await grantBadges(
                        appID: request.appID, messageID: request.messageID, accounts: request.accounts))
            }
            return answers
        }
        let now = nowMilliseconds
        return try await sqlGroupWrite { db in
            try requests.map { request in
                guard !request.accounts.isEmpty else { return [:] }
                let (names, ids) = BadgeGrantAccounts.distinct(request.accounts)
                return try BadgeGrantAccounts.grant(
                    db, appID: request.appID, messageID: request.messageID, names: names, ids: ids, now: now)
            }
        }
    }

    /// `grantBadges` where writes are not grouped (PostgreSQL): the grants and the increments
    /// in one statement (a data-modifying `WITH`), atomic by itself — one round trip where a
    /// transaction of two statements took four (BEGIN, the two, COMMIT), for every chat line
    /// that counts a badge (issue #47). Locks are taken in key order (the grants' inserts, then
    /// the accounts `FOR UPDATE`), so two pages counting the same accounts never wait for each
    /// other in a cycle. The accounts counted for this message already are read after it, in a
    /// statement of their own: its snapshot then includes a concurrent page's increments it
    /// waited for (the grant's insert waits for that page's commit; a snapshot taken before it
    /// would read the counter without them).
    private func grantBadgesInOneStatement(
        appID: Int64, messageID: Int64, names: [Int64: String], ids: [Int64], now: Int64
    ) async throws -> [String: Int] {
        let badges = try await sqlWriteStatement { db -> [String: Int] in
            var badges: [String: Int] = [:]
            badges.reserveCapacity(ids.count)
            try BadgeGrantAccounts.collect(
                db,
                """
                WITH counted AS (
                    INSERT INTO badge_grants (message_id, account_id)
                        SELECT \(messageID), value FROM \(db.dialect.list(ids)) WHERE true ORDER BY value
                    ON CONFLICT DO NOTHING RETURNING account_id
                ), locked AS (
                    SELECT id FROM accounts WHERE id IN (SELECT account_id FROM counted) AND app_id = \(appID)
                    ORDER BY id FOR UPDATE
                )
                UPDATE accounts SET badge = badge + 1, updated_at = \(now)
                WHERE id IN (SELECT id FROM locked)
                RETURNING id, badge
                """, names: names, into: &badges)
            return badges
        }
        guard badges.count < ids.count else { return badges }
        let uncounted = ids.filter { id in
            guard let name = names[id] else { return false }
            return badges[name] == nil
        }
        // Counted for this message already (another page, or this one before a crash), or
        // deleted since (no row, and so no badge): the counter as it is now.
        return try await sqlRead { db in
            var all = badges
            try BadgeGrantAccounts.collect(
                db, BadgeGrantAccounts.current(db.dialect.list(uncounted), appID: appID), names: names, into: &all)
            return all
        }
    }

    /// Rows deleted per transaction by `forgetFinishedBadgeGrants`.
    public static var badgeGrantsForgottenPerTransaction: Int { 5_000 }
    /// Messages looked at per read of `forgetFinishedBadgeGrants`.
    public static var badgeGrantMessagesPerRound: Int { 256 }

    /// Forgets the badge grants of every message not sending (finished, cancelled, deleted).
    /// Messages are found by one seek each (not a scan of every grant of a message still
    /// sending), up to `badgeGrantMessagesPerRound` in one statement that walks them (a
    /// recursive query) and counts each one's grants up to a transaction's worth. The finished
    /// ones' grants then go in bounded transactions of one statement each: whole messages
    /// packed together up to `badgeGrantsForgottenPerTransaction` rows, and a message with more
    /// than that in slices of its own. A chat load finishes a thousand messages a second with a
    /// grant or two each: a statement per message (a seek, a check and a delete) was three of
    /// the sixteen round trips of a Tencent chat line on PostgreSQL (issue #47), and a
    /// transaction per message held SQLite's writer for them. Returns the rows deleted.
    @discardableResult
    public func forgetFinishedBadgeGrants() async throws -> Int {
        let perTransaction = Self.badgeGrantsForgottenPerTransaction
        let perRound = Int64(Self.badgeGrantMessagesPerRound)
        var forgotten = 0
        var nextAfter: Int64 = 0
        while true {
            let after = nextAfter
            let found = try await sqlRead { db in
                try FinishedBadgeGrants.walk(db, after: after, messages: perRound, countingUpTo: perTransaction)
            }
            forgotten += try await forgetBadgeGrants(of: found.finished, perTransaction: perTransaction)
            // A walk that ended before its limit found every message with grants.
            guard let last = found.last, found.walked == perRound else { return forgotten }
            nextAfter = last
        }
    }

    /// The grants of the listed messages not sending, counted by key (one seek and one count a
    /// message) and deleted in the transactions `forgetFinishedBadgeGrants` uses.
    @discardableResult
    public func forgetBadgeGrants(ofMessages messages: [Int64]) async throws -> Int {
        let perTransaction = Self.badgeGrantsForgottenPerTransaction
        let ids = Array(Set(messages)).sorted()
        var forgotten = 0
        var start = 0
        while start < ids.count {
            let chunk = Array(ids[start..<min(ids.count, start + Self.badgeGrantMessagesPerRound)])
            start += chunk.count
            let finished = try await sqlRead { db in
                try FinishedBadgeGrants.counted(db, chunk, countingUpTo: perTransaction)
            }
            forgotten += try await forgetBadgeGrants(of: finished, perTransaction: perTransaction)
        }
        return forgotten
    }

    /// Deletes the grants of messages found finished, in bounded transactions (one statement
    /// each).
    private func forgetBadgeGrants(of finished: [FinishedBadgeGrants.Finished], perTransaction: Int) async throws
        -> Int
    {
        var forgotten = 0
        for batch in FinishedBadgeGrants.transactions(finished, perTransaction: perTransaction) {
            switch batch {
            case .whole(let messages):
                forgotten += try await sqlWrite { db in try FinishedBadgeGrants.forget(db, messages) }
            case .sliced(let message):
                while true {
                    let deleted = try await sqlWrite { db in
                        try FinishedBadgeGrants.forget(db, message, atMost: perTransaction)
                    }
                    forgotten += deleted
                    // Out of budget: grants may be left; the next transaction takes them.
                    if deleted < perTransaction { break }
                }
            }
        }
        return forgotten
    }

    @discardableResult
    public func createAccount(appID: Int64, account: String) async throws -> Bool {
        let now = nowMilliseconds
        return try await sqlWriteStatement { db in
            try AccountQueries.insertAccount(db, appID: appID, account: account, now: now)
        }
    }

    /// The account's devices are unbound, and what was not sent to them yet is cancelled in the
    /// same transaction (`DeliveryCancellation`).
    public func deleteAccount(appID: Int64, account: String) async throws -> Bool {
        let now = nowMilliseconds
        // `updated_at` stays: it is the device's last registration (see `invalidateDevice`).
        return try await sqlWrite { db in
            try DeliveryCancellation.cancel(
                db, devices: "SELECT id FROM devices WHERE app_id = \(appID) AND im_account = \(account)",
                reason: DeliveryCancellation.accountDeleted, now: now)
            try db.run(
                """
                UPDATE devices SET im_account = NULL, account_id = NULL, app_state = NULL
                WHERE app_id = \(appID) AND im_account = \(account)
                """)
            return try db.run("DELETE FROM accounts WHERE app_id = \(appID) AND account = \(account)") > 0
        }
    }

    public func accounts(appID: Int64, cursor: String?, limit: Int) async throws -> Page<String> {
        let afterID = try cursor.map(Cursor.decode) ?? 0
        let pageSize = min(max(limit, 1), 1000)
        let rows = try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT id, account FROM accounts WHERE app_id = \(appID) AND id > \(afterID)
                ORDER BY id LIMIT \(pageSize + 1)
                """
            ).map { (id: $0.int64(0), account: $0.string(1)) }
        }
        guard rows.count > pageSize else { return Page(items: rows.map(\.account), nextCursor: nil) }
        let page = rows.prefix(pageSize)
        return Page(items: page.map(\.account), nextCursor: Cursor.encode(page[page.endIndex - 1].id))
    }

    /// What was not sent to the device yet is cancelled in the same transaction
    /// (`DeliveryCancellation`): it was meant for the account's user.
    public func unbindDevice(appID: Int64, token: DeviceToken) async throws -> Bool {
        let now = nowMilliseconds
        return try await sqlWrite { db in
            try DeliveryCancellation.cancel(
                db,
                devices:
                    "SELECT id FROM devices WHERE app_id = \(appID) AND token = \(token.hex) AND im_account IS NOT NULL",
                reason: DeliveryCancellation.deviceUnbound, now: now)
            return try db.run(
                """
                UPDATE devices SET im_account = NULL, account_id = NULL, app_state = NULL
                WHERE app_id = \(appID) AND token = \(token.hex) AND im_account IS NOT NULL
                """) > 0
        }
    }

    public func devices(appID: Int64, account: String) async throws -> [Device] {
        try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT \(raw: Rows.deviceColumns) FROM devices
                WHERE app_id = \(appID) AND im_account = \(account) AND invalidated_at IS NULL ORDER BY id
                """
            ).map { try Rows.device(columns: $0) }
        }
    }

    public func setAppState(appID: Int64, account: String, _ state: AppState) async throws {
        let now = nowMilliseconds
        try await sqlWrite { db in
            try db.run(
                """
                INSERT INTO accounts (app_id, account, app_state, created_at, updated_at)
                VALUES (\(appID), \(account), \(state.rawValue), \(now), \(now))
                ON CONFLICT (app_id, account) DO UPDATE SET
                    app_state = excluded.app_state, updated_at = excluded.updated_at
                """)
            // The bound devices' copy, read by account audiences' pages (schema v7).
            try db.run(
                "UPDATE devices SET app_state = \(state.rawValue) WHERE app_id = \(appID) AND im_account = \(account)")
        }
    }

    public func appState(appID: Int64, account: String) async throws -> AppState? {
        let name = try await sqlRead { db in
            try db.fetchOne("SELECT app_state FROM accounts WHERE app_id = \(appID) AND account = \(account)")?[0]
                .string
        }
        return name.flatMap(AppState.init(rawValue:))
    }

    public func setBadge(appID: Int64, account: String, to value: Int) async throws {
        guard value >= 0 else { throw StoreError(.conflict, "a badge cannot be negative (got \(value))") }
        let now = nowMilliseconds
        try await sqlWriteStatement { db in
            try db.run(
                """
                INSERT INTO accounts (app_id, account, badge, created_at, updated_at)
                VALUES (\(appID), \(account), \(value), \(now), \(now))
                ON CONFLICT (app_id, account) DO UPDATE SET badge = excluded.badge, updated_at = excluded.updated_at
                """)
        }
    }

    public func badge(appID: Int64, account: String) async throws -> Int {
        try await sqlRead { db in
            Int(
                try db.fetchOne("SELECT badge FROM accounts WHERE app_id = \(appID) AND account = \(account)")?[0]
                    .int ?? 0)
        }
    }
}

/// The account statements the backends' own writes share (binding a device creates its account).
package enum AccountQueries {
    /// Creates the account row if missing; `true` when it did.
    @discardableResult
    package static func insertAccount(_ db: any SQLExecutor, appID: Int64, account: String, now: Int64) throws -> Bool {
        try db.run(
            """
            INSERT INTO accounts (app_id, account, created_at, updated_at) VALUES (\(appID), \(account), \(now), \(now))
            ON CONFLICT (app_id, account) DO NOTHING
            """) > 0
    }

    /// The second half of `bindDevice`, after the backend's own device upsert: the device
    /// takes the account (its row id and app state) and the credential selector. Returns it.
    /// A device another account held moves: what was not sent to it yet was meant for that
    /// account's user, and is cancelled (`DeliveryCancellation`).
    package static func bindAccount(
        _ db: any SQLExecutor, deviceID: Int64, appID: Int64, account: String, credentialSelector: String?, now: Int64
    ) throws -> Device {
        try DeliveryCancellation.cancel(
            db,
            devices:
                "SELECT id FROM devices WHERE id = \(deviceID) AND im_account IS NOT NULL AND im_account <> \(account)",
            reason: DeliveryCancellation.deviceUnbound, now: now)
        guard
            let row = try db.fetchOne(
                """
                UPDATE devices SET im_account = \(account), credential_selector = \(credentialSelector),
                    (account_id, app_state) = (SELECT id, app_state FROM accounts WHERE app_id = \(appID) AND account = \(account))
                WHERE id = \(deviceID)
                RETURNING \(raw: Rows.deviceColumns)
                """)
        else { throw StoreError(.unavailable, "the bound device \(deviceID) vanished") }
        return try Rows.device(columns: row)
    }
}

/// The accounts of a badge grant (`grantBadges`), each once in first-seen order, with their names
/// by id: what both backends' grant batching starts from.
package enum BadgeGrantAccounts {
    package static func distinct(_ accounts: [AccountKey]) -> (names: [Int64: String], ids: [Int64]) {
        var byID: [Int64: String] = [:]
        byID.reserveCapacity(accounts.count)
        var distinct: [Int64] = []
        distinct.reserveCapacity(accounts.count)
        for account in accounts where byID.updateValue(account.name, forKey: account.id) == nil {
            distinct.append(account.id)
        }
        return (byID, distinct)
    }

    /// One page's grants and increments inside a grouped write (`grantBadges` where writes
    /// are grouped): the grants' insert returns the accounts not yet counted for the message,
    /// which are incremented; the others get their counter as it is now.
    static func grant(
        _ db: any SQLExecutor, appID: Int64, messageID: Int64, names: [Int64: String], ids: [Int64], now: Int64
    ) throws -> [String: Int] {
        if ids.count == 1, let name = names[ids[0]] {
            return try grant(db, appID: appID, messageID: messageID, account: ids[0], name: name, now: now)
        }
        let all = db.dialect.list(ids)
        var counted: [Int64] = []
        counted.reserveCapacity(ids.count)
        try db.forEachRow(
            """
            INSERT INTO badge_grants (message_id, account_id)
                SELECT \(messageID), value FROM \(all) WHERE true
            ON CONFLICT DO NOTHING RETURNING account_id
            """
        ) { row in counted.append(row.int64(0)) }
        var badges: [String: Int] = [:]
        badges.reserveCapacity(ids.count)
        if !counted.isEmpty {
            let list = counted.count == ids.count ? all : db.dialect.list(counted)
            try collect(
                db,
                """
                UPDATE accounts SET badge = badge + 1, updated_at = \(now)
                WHERE id IN (SELECT value FROM \(list)) AND +app_id = \(appID)
                RETURNING id, badge
                """, names: names, into: &badges)
        }
        guard counted.count < ids.count else { return badges }
        // Counted for this message already (another page, or this one before a crash): the
        // counter as it is now. An account deleted since has no row, and so no badge.
        let countedNow = Set(counted)
        let uncounted = counted.isEmpty ? all : db.dialect.list(ids.filter { !countedNow.contains($0) })
        try collect(
            db, current(uncounted, appID: appID), names: names, into: &badges)
        return badges
    }

    /// `grant` for one account (a chat line's receiver): key lookups, no list and no
    /// `RETURNING`. On SQLite `IN (SELECT value FROM …)` builds an ephemeral index even for a
    /// list of one, and `RETURNING` collects its rows in an ephemeral table: the list form's two
    /// statements took 17.6 µs against 5.5 for these three (the system's SQLite 3.40 through
    /// Python's sqlite3, whose own call is 1.4: bench/sqlite-one-account.py).
    static func grant(
        _ db: any SQLExecutor, appID: Int64, messageID: Int64, account: Int64, name: String, now: Int64
    ) throws -> [String: Int] {
        let granted = try db.run(
            "INSERT INTO badge_grants (message_id, account_id) VALUES (\(messageID), \(account)) ON CONFLICT DO NOTHING"
        )
        if granted == 1 {
            try db.run(
                "UPDATE accounts SET badge = badge + 1, updated_at = \(now) WHERE id = \(account) AND app_id = \(appID)"
            )
        }
        // Counted now or for this message already (another page, or this one before a crash).
        // An account deleted since has no row, and so no badge.
        var badges: [String: Int] = [:]
        try db.forEachRow("SELECT badge FROM accounts WHERE id = \(account) AND app_id = \(appID)") { row in
            badges[name] = Int(row.int64(0))
        }
        return badges
    }

    /// Each row of `query` (an account's id, its badge) into `badges` under the account's name.
    package static func collect(
        _ db: any SQLExecutor, _ query: SQLQuery, names: [Int64: String], into badges: inout [String: Int]
    ) throws {
        try db.forEachRow(query) { row in
            if let name = names[row.int64(0)] { badges[name] = Int(row.int64(1)) }
        }
    }

    /// The badges of `accounts` (a `SQLDialect.list`) as they are: id, badge.
    package static func current(_ accounts: SQLQuery, appID: Int64) -> SQLQuery {
        "SELECT id, badge FROM accounts WHERE id IN (SELECT value FROM \(accounts)) AND +app_id = \(appID)"
    }
}

/// The statements of `forgetFinishedBadgeGrants`, in SQL both databases take.
enum FinishedBadgeGrants {
    /// A message not sending, with its grants counted up to a transaction's worth and one more.
    struct Finished: Equatable {
        var messageID: Int64
        var grants: Int
    }

    /// One transaction of the clean-up: whole messages, or a slice of one with more grants.
    enum Transaction: Equatable {
        case whole([Int64])
        case sliced(Int64)
    }

    /// Up to `messages` messages with grants after `after`, each found by one seek (the next
    /// key of the grants' primary key), with its state and its grants counted up to `limit + 1`.
    /// The state is a scalar subquery read for each message found: as a join or `EXISTS (…)`,
    /// PostgreSQL hashed every sending message for each seek (1.1 ms a seek with 2,000 sending,
    /// against 0.06; issue #47). A message that no longer exists is not sending.
    static func walk(_ db: any SQLExecutor, after: Int64, messages: Int64, countingUpTo limit: Int) throws -> (
        last: Int64?, walked: Int64, finished: [Finished]
    ) {
        var last: Int64?
        var walked: Int64 = 0
        var finished: [Finished] = []
        try db.forEachRow(
            """
            WITH RECURSIVE walk(message_id, n) AS (
                SELECT (SELECT message_id FROM badge_grants WHERE message_id > \(after)
                    ORDER BY message_id LIMIT 1), 1
                UNION ALL
                SELECT (SELECT g.message_id FROM badge_grants g WHERE g.message_id > walk.message_id
                    ORDER BY g.message_id LIMIT 1), walk.n + 1
                FROM walk WHERE walk.message_id IS NOT NULL AND walk.n < \(messages)
            )
            SELECT message_id, (SELECT m.state FROM messages m WHERE m.id = walk.message_id) AS state,
                (SELECT count(*) FROM (SELECT 1 FROM badge_grants c WHERE c.message_id = walk.message_id
                    LIMIT \(Int64(limit) + 1)) AS counted) AS grants
            FROM walk WHERE message_id IS NOT NULL ORDER BY message_id
            """
        ) { row in
            let messageID = row.int64(0)
            last = messageID
            walked += 1
            if row.optionalString(1) != MessageState.sending.rawValue {
                finished.append(Finished(messageID: messageID, grants: Int(row.int64(2))))
            }
        }
        return (last, walked, finished)
    }

    /// Of `messages`, those not sending that have grants, each with its grants counted up to
    /// `limit + 1`: one key lookup and one count a message.
    static func counted(_ db: any SQLExecutor, _ messages: [Int64], countingUpTo limit: Int) throws -> [Finished] {
        var finished: [Finished] = []
        try db.forEachRow(
            """
            SELECT value, (SELECT m.state FROM messages m WHERE m.id = value) AS state,
                (SELECT count(*) FROM (SELECT 1 FROM badge_grants c WHERE c.message_id = value
                    LIMIT \(Int64(limit) + 1)) AS counted) AS grants
            FROM \(db.dialect.list(messages)) ORDER BY value
            """
        ) { row in
            let grants = Int(row.int64(2))
            if grants > 0, row.optionalString(1) != MessageState.sending.rawValue {
                finished.append(Finished(messageID: row.int64(0), grants: grants))
            }
        }
        return finished
    }

    /// The finished messages in transactions: whole messages packed together in order while
    /// their grants fit in `perTransaction`, and each message with more in slices of its own.
    static func transactions(_ finished: [Finished], perTransaction: Int) -> [Transaction] {
        var transactions: [Transaction] = []
        var packed: [Int64] = []
        var rows = 0
        for message in finished {
            if message.grants > perTransaction {
                transactions.append(.sliced(message.messageID))
                continue
            }
            if rows + message.grants > perTransaction, !packed.isEmpty {
                transactions.append(.whole(packed))
                packed = []
                rows = 0
            }
            packed.append(message.messageID)
            rows += message.grants
        }
        if !packed.isEmpty { transactions.append(.whole(packed)) }
        return transactions
    }

    /// Every grant of `messages` whose message is still not sending (checked again here: one
    /// may have been restarted since the walk), found by the key; the rows deleted.
    static func forget(_ db: any SQLExecutor, _ messages: [Int64]) throws -> Int {
        try db.run(
            """
            DELETE FROM badge_grants WHERE message_id IN (SELECT value FROM \(db.dialect.list(messages)))
            AND coalesce((SELECT m.state FROM messages m WHERE m.id = badge_grants.message_id), '') <> 'sending'
            """)
    }

    /// At most `limit` grants of one message still not sending; the rows deleted.
    static func forget(_ db: any SQLExecutor, _ message: Int64, atMost limit: Int) throws -> Int {
        try db.run(
            """
            DELETE FROM badge_grants WHERE message_id = \(message) AND account_id IN
                (SELECT account_id FROM badge_grants WHERE message_id = \(message) LIMIT \(Int64(limit)))
            AND coalesce((SELECT m.state FROM messages m WHERE m.id = \(message)), '') <> 'sending'
            """)
    }
}
