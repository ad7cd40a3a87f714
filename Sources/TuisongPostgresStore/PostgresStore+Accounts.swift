import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// The IM account writes PostgreSQL does its own way (the rest is written once in
// `SQLStoreBackend+Accounts`): binding a device (this backend's device upsert) and the badge
// batching. Several nodes write at once
// here, so each write is one transaction that takes its row locks in id order (no deadlock
// between two pages counting the same accounts), and a badge increment is one
// `UPDATE … RETURNING`: row locks serialise concurrent increments of one account, and each gets
// its own value.
extension PostgresStore: AccountStore {
    public func bindDevice(
        appID: Int64, account: String, registration: DeviceRegistration, credentialSelector: String?
    ) async throws -> Device {
        let now = nowMilliseconds
        return try await write { conn in
            let executor = PostgresExecutor(conn, prepares: true)
            try AccountQueries.insertAccount(executor, appID: appID, account: account, now: now)
            let deviceID = try Self.applyBindingRegistration(conn, appID: appID, registration, now: now)
            return try AccountQueries.bindAccount(
                executor, deviceID: deviceID, appID: appID, account: account, credentialSelector: credentialSelector,
                now: now)
        }
    }

    public func incrementBadges(appID: Int64, accounts: [String]) async throws -> [String: Int] {
        guard !accounts.isEmpty else { return [:] }
        let now = nowMilliseconds
        // One statement for the whole list. PostgreSQL refuses an upsert that touches one row
        // twice, so an account named n times is counted once with n (its final value is what
        // SQLite's n upserts end at: the last value); rows are taken in name order, so two
        // lists naming the same accounts never wait for each other in a cycle.
        let list = PostgresArrayLiteral.texts(accounts)
        let unique = Set(accounts).count
        return try await write { conn in
            var values: [String: Int] = [:]
            values.reserveCapacity(unique)
            for row in try conn.run(Self.incrementBadges(appID: appID, now: now, accounts: list)).rows {
                values[row[0].string ?? ""] = Int(row.int64(at: 1))
            }
            guard values.count == unique else {
                throw StoreError(
                    .unavailable, "the badge increments returned \(values.count) values for \(unique) accounts")
            }
            return values
        }
    }

    /// Adds to the badge of every account in the text array `accounts` of app `appID` (creating
    /// missing accounts) the times it is named, and returns each new value.
    static func incrementBadges(appID: Int64, now: Int64, accounts: String) -> SQLQuery {
        """
        INSERT INTO accounts (app_id, account, badge, created_at, updated_at)
            SELECT \(appID), name, count(*), \(now), \(now) FROM unnest(\(accounts)::text[]) AS name
            GROUP BY name ORDER BY name
        ON CONFLICT (app_id, account) DO UPDATE SET
            badge = accounts.badge + excluded.badge, updated_at = excluded.updated_at
        RETURNING account, badge
        """
    }

    public func grantBadges(appID: Int64, messageID: Int64, accounts: [AccountKey]) async throws -> [String: Int] {
        guard !accounts.isEmpty else { return [:] }
        let (names, ids) = BadgeGrantAccounts.distinct(accounts)
        let now = nowMilliseconds
        let list = PostgresArrayLiteral.integers(ids)
        // One transaction for the grants and the increments, as on SQLite: recording the grants
        // is the lookup too (the insert returns the accounts not yet counted for the message).
        // A page of the same message writing the same grant concurrently waits for this one's
        // commit and then finds the grant: each account is counted once. Grants and accounts are
        // locked in id order, so concurrent pages (of this or another message) cannot deadlock.
        return try await write { conn in
            let counted = try conn.run(
                """
                INSERT INTO badge_grants (message_id, account_id)
                    SELECT \(messageID), id FROM unnest(\(list)::bigint[]) AS id ORDER BY id
                ON CONFLICT DO NOTHING RETURNING account_id
                """
            ).rows.map { $0.int64(at: 0) }
            var badges: [String: Int] = [:]
            badges.reserveCapacity(ids.count)
            func collect(_ result: PostgresResult) {
                for row in result.rows {
                    if let name = names[row.int64(at: 0)] { badges[name] = Int(row.int64(at: 1)) }
                }
            }
            if !counted.isEmpty {
                let countedList = counted.count == ids.count ? list : PostgresArrayLiteral.integers(counted)
                collect(
                    try conn.run(
                        """
                        UPDATE accounts a SET badge = a.badge + 1, updated_at = \(now)
                        FROM (
                            SELECT id FROM accounts WHERE id = ANY(\(countedList)::bigint[]) AND app_id = \(appID)
                            ORDER BY id FOR UPDATE) AS locked
                        WHERE a.id = locked.id
                        RETURNING a.id, a.badge
                        """))
            }
            guard counted.count < ids.count else { return badges }
            // Counted for this message already (another page, or this one before a crash): the
            // counter as it is now. An account deleted since has no row, and so no badge.
            let countedNow = Set(counted)
            let uncounted =
                counted.isEmpty ? list : PostgresArrayLiteral.integers(ids.filter { !countedNow.contains($0) })
            collect(
                try conn.run(
                    "SELECT id, badge FROM accounts WHERE id = ANY(\(uncounted)::bigint[]) AND app_id = \(appID)"))
            return badges
        }
    }

    // MARK: plumbing

    /// The registration half of `bindDevice` (SQLite's `applyRegistration`), inside its write:
    /// the same upsert and tag replacement as `registerDevice`. Returns the device's id.
    private static func applyBindingRegistration(
        _ conn: PostgresConnection, appID: Int64, _ registration: DeviceRegistration, now: Int64
    ) throws -> Int64 {
        let device = try registered(conn.run(upsertDevice(appID: appID, registration, now: now))).device
        if let tags = registration.tags {
            let names = PostgresArrayLiteral.texts(tags.map(\.value))
            for statement in retagStatements(appID: appID, token: registration.token.value, names: names) {
                try conn.run(statement)
            }
        }
        return device.id
    }
}

extension PostgresRow {
    /// The integer in column `index`, 0 for NULL.
    func int64(at index: Int) -> Int64 { self[index].int64 ?? 0 }
}
