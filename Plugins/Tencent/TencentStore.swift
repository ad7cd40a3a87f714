import Foundation
import TuisongCore

/// A group as `get_group_info` shows it.
struct TencentGroup: Sendable, Hashable {
    var groupID: String
    var type: String
    var name: String
    var owner: String?
    var createdAt: Int64
    var memberCount: Int
}

/// The plugin's tables (`TencentSchema`) on the gateway's shared database.
struct TencentStore: Sendable {
    let database: any SharedDatabase
    /// Senders' nicks, one lookup a chat line, read together where reads are round trips.
    private let nickReads: NameReadsTogether<String>

    init(database: any SharedDatabase) {
        self.database = database
        nickReads = NameReadsTogether(database) { appID, accounts in
            try await Self.nicks(database, appID: appID, accounts: accounts)
        }
    }

    // Lists of accounts are bound as `SQLList` chunks: under every SQL engine's parameter
    // limit, and few statement texts, which the connection keeps prepared.

    // MARK: Profiles

    /// Sets profile items (`Tag_Profile_IM_Nick`, …); values are kept as JSON text.
    func setProfile(appID: Int64, account: String, items: [(tag: String, value: JSONValue)]) async throws {
        let rows = items.map { ($0.tag, $0.value.serializedString) }
        try await database.write { db in
            for (tag, value) in rows {
                try db.execute(
                    """
                    INSERT INTO tencent_profile_items (app_id, account, tag, value) VALUES (?, ?, ?, ?)
                    ON CONFLICT (app_id, account, tag) DO UPDATE SET value = excluded.value
                    """, [.integer(appID), .text(account), .text(tag), .text(value)])
            }
        }
    }

    /// Profile items of these accounts (only `tags` when given): account → tag → value.
    func profiles(appID: Int64, accounts: [String], tags: [String]? = nil) async throws -> [String: [String: JSONValue]]
    {
        try await Self.profiles(database, appID: appID, accounts: accounts, tags: tags)
    }

    static func profiles(
        _ database: any SharedDatabase, appID: Int64, accounts: [String], tags: [String]? = nil
    ) async throws -> [String: [String: JSONValue]] {
        // At most 100 accounts (portrait_get), usually one (a message's sender): rows by index.
        let rows = try await database.quickRead { db in
            var rows: [SQLRow] = []
            for list in SQLList.chunks(accounts) {
                var sql =
                    "SELECT account, tag, value FROM tencent_profile_items WHERE app_id = ? AND account IN (\(list.marks))"
                var arguments: [SQLValue] = [.integer(appID)] + list.values
                if let tags {
                    sql += " AND tag IN (\(SQLList.placeholders(tags.count)))"
                    arguments += tags.map { .text($0) }
                }
                rows += try db.query(sql, arguments)
            }
            return rows
        }
        var result: [String: [String: JSONValue]] = [:]
        for row in rows {
            guard let account = row["account"].string, let tag = row["tag"].string, let text = row["value"].string,
                let value = try? JSONValue(parsing: text)
            else { continue }
            result[account, default: [:]][tag] = value
        }
        return result
    }

    /// `Tag_Profile_IM_Nick` of these accounts, where set and not empty.
    func nicks(appID: Int64, accounts: [String]) async throws -> [String: String] {
        try await nickReads.values(appID: appID, names: accounts)
    }

    private static func nicks(_ database: any SharedDatabase, appID: Int64, accounts: [String]) async throws
        -> [String: String]
    {
        let profiles = try await profiles(database, appID: appID, accounts: accounts, tags: [nickTag])
        return profiles.compactMapValues { items in
            guard let nick = items[Self.nickTag]?.stringValue, !nick.isEmpty else { return nil }
            return nick
        }
    }

    static let nickTag = "Tag_Profile_IM_Nick"

    /// Everything the plugin keeps about an account (profile, tags, push config, group
    /// memberships), when the account is deleted.
    func deleteAccountData(appID: Int64, account: String) async throws {
        try await database.write { db in
            for table in [
                "tencent_profile_items", "tencent_account_tags", "tencent_push_config", "tencent_group_members",
            ] {
                try db.execute(
                    "DELETE FROM \(table) WHERE app_id = ? AND account = ?", [.integer(appID), .text(account)])
            }
        }
    }

    // MARK: Groups

    /// Creates the group with its owner and members (Member_Account → NameCard); false when
    /// the id is taken.
    func createGroup(
        appID: Int64, groupID: String, type: String, name: String, owner: String?,
        members: [(account: String, nameCard: String?)], now: Int64
    ) async throws -> Bool {
        try await database.write { db in
            let existing = try db.queryOne(
                "SELECT 1 AS found FROM tencent_groups WHERE app_id = ? AND group_id = ?",
                [.integer(appID), .text(groupID)])
            guard existing == nil else { return false }
            try db.execute(
                "INSERT INTO tencent_groups (app_id, group_id, type, name, owner, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [.integer(appID), .text(groupID), .text(type), .text(name), SQLValue(owner), .integer(now)])
            var seen = Set<String>()
            if let owner {
                seen.insert(owner)
                try Self.insertMember(
                    db, appID: appID, groupID: groupID, account: owner, role: "Owner", card: nil, now: now)
            }
            for member in members where seen.insert(member.account).inserted {
                try Self.insertMember(
                    db, appID: appID, groupID: groupID, account: member.account, role: "Member", card: member.nameCard,
                    now: now)
            }
            return true
        }
    }

    private static func insertMember(
        _ db: any SQLExecutor, appID: Int64, groupID: String, account: String, role: String, card: String?, now: Int64
    ) throws {
        try db.execute(
            """
            INSERT INTO tencent_group_members (app_id, group_id, account, role, name_card, joined_at)
            VALUES (?, ?, ?, ?, ?, ?)
            """, [.integer(appID), .text(groupID), .text(account), .text(role), SQLValue(card), .integer(now)])
    }

    func group(appID: Int64, groupID: String) async throws -> TencentGroup? {
        try await database.read { db in
            guard
                let row = try db.queryOne(
                    "SELECT group_id, type, name, owner, created_at FROM tencent_groups WHERE app_id = ? AND group_id = ?",
                    [.integer(appID), .text(groupID)])
            else { return nil }
            let count =
                try db.queryOne(
                    "SELECT COUNT(*) AS n FROM tencent_group_members WHERE app_id = ? AND group_id = ?",
                    [.integer(appID), .text(groupID)])?["n"].int ?? 0
            return TencentGroup(
                groupID: row["group_id"].string ?? groupID, type: row["type"].string ?? "",
                name: row["name"].string ?? "",
                owner: row["owner"].string, createdAt: row["created_at"].int ?? 0, memberCount: Int(count))
        }
    }

    /// The group's next message sequence number (`MsgSeq`), or nil when there is no such group.
    func nextMessageSequence(appID: Int64, groupID: String) async throws -> Int64? {
        try await database.write { db in
            try db.execute(
                "UPDATE tencent_groups SET last_msg_seq = last_msg_seq + 1 WHERE app_id = ? AND group_id = ?",
                [.integer(appID), .text(groupID)])
            guard db.changedRows > 0 else { return nil }
            return try db.queryOne(
                "SELECT last_msg_seq FROM tencent_groups WHERE app_id = ? AND group_id = ?",
                [.integer(appID), .text(groupID)])?["last_msg_seq"].int
        }
    }

    /// Adds members; returns those that were not members before.
    func addMembers(appID: Int64, groupID: String, accounts: [String], now: Int64) async throws -> Set<String> {
        try await database.write { db in
            var added = Set<String>()
            for account in accounts where !added.contains(account) {
                let existing = try db.queryOne(
                    "SELECT 1 AS found FROM tencent_group_members WHERE app_id = ? AND group_id = ? AND account = ?",
                    [.integer(appID), .text(groupID), .text(account)])
                if existing == nil {
                    try Self.insertMember(
                        db, appID: appID, groupID: groupID, account: account, role: "Member", card: nil, now: now)
                    added.insert(account)
                }
            }
            return added
        }
    }

    /// Removes members; returns those that were members.
    func deleteMembers(appID: Int64, groupID: String, accounts: [String]) async throws -> Set<String> {
        try await database.write { db in
            var removed = Set<String>()
            for account in Set(accounts) {
                try db.execute(
                    "DELETE FROM tencent_group_members WHERE app_id = ? AND group_id = ? AND account = ?",
                    [.integer(appID), .text(groupID), .text(account)])
                if db.changedRows > 0 { removed.insert(account) }
            }
            return removed
        }
    }

    /// Sets (or clears, with "") a member's NameCard; false when the account is not a member.
    func setNameCard(appID: Int64, groupID: String, account: String, nameCard: String) async throws -> Bool {
        try await database.write { db in
            try db.execute(
                "UPDATE tencent_group_members SET name_card = ? WHERE app_id = ? AND group_id = ? AND account = ?",
                [nameCard.isEmpty ? .null : .text(nameCard), .integer(appID), .text(groupID), .text(account)])
            return db.changedRows > 0
        }
    }

    /// The member's NameCard in the group (nil when unset or not a member), and whether it is
    /// a member.
    func member(appID: Int64, groupID: String, account: String) async throws -> (isMember: Bool, nameCard: String?) {
        try await database.read { db in
            guard
                let row = try db.queryOne(
                    "SELECT name_card FROM tencent_group_members WHERE app_id = ? AND group_id = ? AND account = ?",
                    [.integer(appID), .text(groupID), .text(account)])
            else { return (false, nil) }
            return (true, row["name_card"].string)
        }
    }

    /// Every member of the group, in account order.
    func memberAccounts(appID: Int64, groupID: String) async throws -> [String] {
        try await database.read { db in
            try db.query(
                "SELECT account FROM tencent_group_members WHERE app_id = ? AND group_id = ? ORDER BY account",
                [.integer(appID), .text(groupID)]
            ).compactMap { $0["account"].string }
        }
    }

    // MARK: Account tags (im_set_tag / im_remove_tag / im_get_tag)

    func addTags(appID: Int64, account: String, tags: [String]) async throws {
        try await database.write { db in
            for tag in Set(tags) {
                try db.execute(
                    """
                    INSERT INTO tencent_account_tags (app_id, account, tag) VALUES (?, ?, ?)
                    ON CONFLICT (app_id, account, tag) DO NOTHING
                    """, [.integer(appID), .text(account), .text(tag)])
            }
        }
    }

    func removeTags(appID: Int64, account: String, tags: [String]) async throws {
        try await database.write { db in
            for tag in Set(tags) {
                try db.execute(
                    "DELETE FROM tencent_account_tags WHERE app_id = ? AND account = ? AND tag = ?",
                    [.integer(appID), .text(account), .text(tag)])
            }
        }
    }

    /// Tags of these accounts (accounts without tags are absent).
    func tags(appID: Int64, accounts: [String]) async throws -> [String: [String]] {
        let rows = try await database.read { db in
            var rows: [SQLRow] = []
            for list in SQLList.chunks(accounts) {
                rows += try db.query(
                    "SELECT account, tag FROM tencent_account_tags WHERE app_id = ? AND account IN (\(list.marks)) ORDER BY tag",
                    [.integer(appID)] + list.values)
            }
            return rows
        }
        var result: [String: [String]] = [:]
        for row in rows {
            if let account = row["account"].string, let tag = row["tag"].string {
                result[account, default: []].append(tag)
            }
        }
        return result
    }

    /// Accounts carrying every tag of `all` (TagsAnd) or any tag of `any` (TagsOr).
    func accounts(appID: Int64, allOf all: [String]) async throws -> [String] {
        let tags = Array(Set(all))
        guard !tags.isEmpty else { return [] }
        return try await database.read { db in
            try db.query(
                """
                SELECT account FROM tencent_account_tags WHERE app_id = ? AND tag IN (\(SQLList.placeholders(tags.count)))
                GROUP BY account HAVING COUNT(*) = ? ORDER BY account
                """, [.integer(appID)] + tags.map { .text($0) } + [.integer(Int64(tags.count))]
            ).compactMap { $0["account"].string }
        }
    }

    func accounts(appID: Int64, anyOf any: [String]) async throws -> [String] {
        let tags = Array(Set(any))
        guard !tags.isEmpty else { return [] }
        return try await database.read { db in
            try db.query(
                """
                SELECT DISTINCT account FROM tencent_account_tags WHERE app_id = ? AND tag IN (\(SQLList.placeholders(tags.count)))
                ORDER BY account
                """, [.integer(appID)] + tags.map { .text($0) }
            ).compactMap { $0["account"].string }
        }
    }

    // MARK: Push config (set_config)

    func setOpenPush(appID: Int64, account: String, enabled: Bool) async throws {
        try await database.write { db in
            try db.execute(
                """
                INSERT INTO tencent_push_config (app_id, account, open_push) VALUES (?, ?, ?)
                ON CONFLICT (app_id, account) DO UPDATE SET open_push = excluded.open_push
                """, [.integer(appID), .text(account), .integer(enabled ? 1 : 2)])
        }
    }

    /// The accounts among these that turned offline push off (OpenPush 2).
    /// Asked once per page of a push (the delivery policy).
    func pushDisabled(appID: Int64, accounts: [String]) async throws -> Set<String> {
        let lists = SQLList.chunks(accounts)
        guard !lists.isEmpty else { return [] }
        let read: @Sendable (any SQLExecutor) throws -> Set<String> = { db in
            var disabled = Set<String>()
            for list in lists {
                for row in try db.query(
                    "SELECT account FROM tencent_push_config WHERE app_id = ? AND open_push = 2 AND account IN (\(list.marks))",
                    [.integer(appID)] + list.values)
                {
                    if let account = row["account"].string { disabled.insert(account) }
                }
            }
            return disabled
        }
        // A chat message's page is its receiver's few devices: read on the calling thread. A
        // broadcast's pages of a thousand go through a reader, not holding this thread.
        return accounts.count <= TencentStore.quickReadLimit
            ? try await database.quickRead(read) : try await database.read(read)
    }

    /// Lists of accounts up to this long are looked up with `SharedDatabase.quickRead`.
    static let quickReadLimit = 64

    // MARK: Helpers

}
