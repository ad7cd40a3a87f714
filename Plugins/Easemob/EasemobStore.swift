import Foundation
import TuisongCore
import TuisongCrypto
import TuisongPlugin

/// The Easemob provider's own tables (`EasemobSchema`) on the gateway's shared database.
/// Every method is one transaction or one read snapshot.
struct EasemobStore: Sendable {
    let database: any SharedDatabase
    /// Receivers' existence, one lookup a chat line, read together where reads are round trips.
    private let userReads: NameReadsTogether<Bool>

    init(database: any SharedDatabase) {
        self.database = database
        userReads = NameReadsTogether(database) { appID, usernames in
            Dictionary(
                uniqueKeysWithValues: try await Self.existingUsers(database, appID: appID, among: usernames).map {
                    ($0, true)
                })
        }
    }

    // MARK: Token signing keys

    /// The app's token signing key, created on first use. Two nodes creating it at once agree
    /// on one (the insert that loses changes nothing; both read back the winner).
    func signingKey(appID: Int64, sealer: any SecretSealer, now: Date) async throws -> [UInt8] {
        let context = "easemob:token-key:\(appID)"
        if let sealed = try await database.read({ db in
            try db.queryOne("SELECT sealed_key FROM easemob_token_keys WHERE app_id = ?", [.integer(appID)])?[
                "sealed_key"
            ].string
        }) {
            return try Self.openKey(sealed, sealer: sealer, context: context)
        }
        let fresh = try sealer.seal(Base64URL.encode(SecureRandom.bytes(32)), context: context)
        let stored = try await database.write { db in
            try db.execute(
                "INSERT INTO easemob_token_keys (app_id, sealed_key, created_at) VALUES (?, ?, ?) ON CONFLICT (app_id) DO NOTHING",
                [.integer(appID), .text(fresh), .integer(SQLTime.milliseconds(now))])
            return try db.queryOne("SELECT sealed_key FROM easemob_token_keys WHERE app_id = ?", [.integer(appID)])?[
                "sealed_key"
            ].string
        }
        guard let stored else { throw EasemobError.internalError("the token signing key was not stored") }
        return try Self.openKey(stored, sealer: sealer, context: context)
    }

    /// The sealed client secret the app had when the database was upgraded from bindings of
    /// the secret's value (`EasemobSchema` v2); nil for an app configured since.
    func legacyTokenSecret(appID: Int64) async throws -> String? {
        try await database.read { db in
            try db.queryOne(
                "SELECT client_secret_sealed FROM easemob_legacy_token_secrets WHERE app_id = ?", [.integer(appID)]
            )?["client_secret_sealed"].string
        }
    }

    private static func openKey(_ sealed: String, sealer: any SecretSealer, context: String) throws -> [UInt8] {
        guard let key = Base64URL.decode(try sealer.open(sealed, context: context)), key.count == 32 else {
            throw EasemobError.internalError("the token signing key is damaged")
        }
        return key
    }

    // MARK: Users

    /// Registers users in one transaction. Names that exist already (or twice in the list)
    /// are returned in `existing` and not registered; the others are.
    func createUsers(appID: Int64, _ users: [EasemobNewUser], now: Date) async throws -> (
        created: [EasemobUser], existing: [String]
    ) {
        try await database.write { db in
            var created: [EasemobUser] = []
            var existing: [String] = []
            for user in users {
                let millis = SQLTime.milliseconds(now)
                let row = EasemobUser(
                    username: user.username, uuid: EasemobIDs.randomUUID(), passwordHash: user.passwordHash,
                    nickname: user.nickname, createdAt: millis, modifiedAt: millis)
                try db.execute(
                    """
                    INSERT INTO easemob_users (app_id, username, uuid, password_hash, nickname, created_at, modified_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app_id, username) DO NOTHING
                    """,
                    [
                        .integer(appID), .text(row.username), .text(row.uuid), SQLValue(row.passwordHash),
                        SQLValue(row.nickname), .integer(millis), .integer(millis),
                    ])
                if db.changedRows == 1 { created.append(row) } else { existing.append(user.username) }
            }
            return (created, existing)
        }
    }

    func user(appID: Int64, username: String) async throws -> EasemobUser? {
        try await database.read { db in
            try db.queryOne(
                "SELECT \(Self.userColumns) FROM easemob_users WHERE app_id = ? AND username = ?",
                [.integer(appID), .text(username)]
            ).map(Self.user)
        }
    }

    /// Users in registration order after `cursor` (from a previous page).
    func users(appID: Int64, cursor: String?, limit: Int) async throws -> (users: [EasemobUser], next: String?) {
        var position: (Int64, String)?
        if let cursor {
            guard let bytes = Base64URL.decode(cursor), case let text = String(decoding: bytes, as: UTF8.self),
                let colon = text.firstIndex(of: ":"), let created = Int64(text[..<colon])
            else { throw EasemobError.illegalArgument("cursor is not one this server gave") }
            position = (created, String(text[text.index(after: colon)...]))
        }
        let after = position
        let rows = try await database.read { db in
            if let after {
                return try db.query(
                    """
                    SELECT \(Self.userColumns) FROM easemob_users WHERE app_id = ?
                    AND (created_at > ? OR (created_at = ? AND username > ?))
                    ORDER BY created_at, username LIMIT ?
                    """,
                    [.integer(appID), .integer(after.0), .integer(after.0), .text(after.1), .integer(Int64(limit + 1))])
            }
            return try db.query(
                "SELECT \(Self.userColumns) FROM easemob_users WHERE app_id = ? ORDER BY created_at, username LIMIT ?",
                [.integer(appID), .integer(Int64(limit + 1))])
        }
        var users = rows.map(Self.user)
        var next: String?
        if users.count > limit {
            users.removeLast()
            if let last = users.last { next = Base64URL.encode(Array("\(last.createdAt):\(last.username)".utf8)) }
        }
        return (users, next)
    }

    /// Deletes the user with its settings, bindings and memberships, and the groups it owns
    /// (Easemob deletes an owner's groups with it). The deleted user, or nil.
    func deleteUser(appID: Int64, username: String) async throws -> (user: EasemobUser, bindings: [EasemobBinding])? {
        try await database.write { db in
            guard
                let row = try db.queryOne(
                    "SELECT \(Self.userColumns) FROM easemob_users WHERE app_id = ? AND username = ?",
                    [.integer(appID), .text(username)])
            else { return nil }
            let bindings = try db.query(
                "SELECT device_id, device_token, notifier_name FROM easemob_bindings WHERE app_id = ? AND username = ?",
                [.integer(appID), .text(username)]
            ).map(Self.binding)
            let key: [SQLValue] = [.integer(appID), .text(username)]
            try db.execute(
                "DELETE FROM easemob_group_members WHERE app_id = ? AND group_id IN (SELECT group_id FROM easemob_groups WHERE app_id = ? AND owner = ?)",
                [.integer(appID), .integer(appID), .text(username)])
            try db.execute("DELETE FROM easemob_groups WHERE app_id = ? AND owner = ?", key)
            try db.execute("DELETE FROM easemob_group_members WHERE app_id = ? AND username = ?", key)
            try db.execute("DELETE FROM easemob_notification_settings WHERE app_id = ? AND username = ?", key)
            try db.execute("DELETE FROM easemob_bindings WHERE app_id = ? AND username = ?", key)
            try db.execute("DELETE FROM easemob_users WHERE app_id = ? AND username = ?", key)
            return (Self.user(row), bindings)
        }
    }

    /// Applies `changes`; the updated user, or nil when there is none.
    func updateUser(appID: Int64, username: String, _ changes: EasemobUserChanges, now: Date) async throws
        -> EasemobUser?
    {
        try await database.write { db in
            var assignments: [String] = ["modified_at = ?"]
            var arguments: [SQLValue] = [.integer(SQLTime.milliseconds(now))]
            if let nickname = changes.nickname {
                assignments.append("nickname = ?")
                arguments.append(.text(nickname))
            }
            if let style = changes.displayStyle {
                assignments.append("display_style = ?")
                arguments.append(.integer(Int64(style)))
            }
            if let flag = changes.noDisturbing {
                assignments.append("no_disturbing = ?")
                arguments.append(.integer(flag ? 1 : 0))
            }
            if let start = changes.noDisturbingStart {
                assignments.append("no_disturbing_start = ?")
                arguments.append(.integer(Int64(start)))
            }
            if let end = changes.noDisturbingEnd {
                assignments.append("no_disturbing_end = ?")
                arguments.append(.integer(Int64(end)))
            }
            try db.execute(
                "UPDATE easemob_users SET \(assignments.joined(separator: ", ")) WHERE app_id = ? AND username = ?",
                arguments + [.integer(appID), .text(username)])
            guard db.changedRows == 1 else { return nil }
            return try db.queryOne(
                "SELECT \(Self.userColumns) FROM easemob_users WHERE app_id = ? AND username = ?",
                [.integer(appID), .text(username)]
            ).map(Self.user)
        }
    }

    /// Replaces the user's password hash (which revokes the user's tokens). False when there is
    /// no such user.
    func setPassword(appID: Int64, username: String, passwordHash: String, now: Date) async throws -> Bool {
        try await database.write { db in
            try db.execute(
                "UPDATE easemob_users SET password_hash = ?, modified_at = ? WHERE app_id = ? AND username = ?",
                [.text(passwordHash), .integer(SQLTime.milliseconds(now)), .integer(appID), .text(username)])
            return db.changedRows == 1
        }
    }

    /// Sets the preferred push language (empty = none). False when there is no such user.
    func setLanguage(appID: Int64, username: String, language: String, now: Date) async throws -> Bool {
        try await database.write { db in
            try db.execute(
                "UPDATE easemob_users SET language = ?, modified_at = ? WHERE app_id = ? AND username = ?",
                [
                    language.isEmpty ? .null : .text(language), .integer(SQLTime.milliseconds(now)), .integer(appID),
                    .text(username),
                ])
            return db.changedRows == 1
        }
    }

    /// Which of `usernames` exist.
    func existingUsers(appID: Int64, among usernames: [String]) async throws -> Set<String> {
        Set(try await userReads.values(appID: appID, names: usernames).keys)
    }

    private static func existingUsers(_ database: any SharedDatabase, appID: Int64, among usernames: [String])
        async throws -> Set<String>
    {
        guard !usernames.isEmpty else { return [] }
        let read: @Sendable (any SQLExecutor) throws -> Set<String> = { db in
            var found: Set<String> = []
            for chunk in usernames.chunks(ofCount: 400) {
                let rows = try db.query(
                    "SELECT username FROM easemob_users WHERE app_id = ? AND username IN (\(SQLList.placeholders(chunk.count)))",
                    [.integer(appID)] + chunk.map(SQLValue.text))
                for row in rows { if let name = row["username"].string { found.insert(name) } }
            }
            return found
        }
        // A chat message's one receiver is a row by index, read on the calling thread; a send
        // to hundreds goes through a reader, not holding this thread.
        return usernames.count <= quickReadLimit
            ? try await database.quickRead(read) : try await database.read(read)
    }

    // MARK: Notification settings

    func notificationSetting(appID: Int64, username: String, chatType: String, key: String) async throws
        -> EasemobNotificationSetting?
    {
        try await database.read { db in
            try db.queryOne(
                """
                SELECT mode, ignore_interval, ignore_until FROM easemob_notification_settings
                WHERE app_id = ? AND username = ? AND chat_type = ? AND target = ?
                """,
                [.integer(appID), .text(username), .text(chatType), .text(key)]
            ).map(Self.setting)
        }
    }

    /// Stores the whole setting (the caller merged the changes into the current one).
    func setNotificationSetting(
        appID: Int64, username: String, chatType: String, key: String, _ setting: EasemobNotificationSetting,
        now: Date
    ) async throws {
        try await database.write { db in
            try db.execute(
                """
                INSERT INTO easemob_notification_settings
                    (app_id, username, chat_type, target, mode, ignore_interval, ignore_until, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (app_id, username, chat_type, target) DO UPDATE SET
                    mode = excluded.mode, ignore_interval = excluded.ignore_interval,
                    ignore_until = excluded.ignore_until, updated_at = excluded.updated_at
                """,
                [
                    .integer(appID), .text(username), .text(chatType), .text(key), .text(setting.mode.rawValue),
                    SQLValue(setting.ignoreInterval?.description),
                    SQLValue(setting.ignoreUntil.map(SQLTime.milliseconds)),
                    .integer(SQLTime.milliseconds(now)),
                ])
        }
    }

    /// The profiles and settings the policy needs for `usernames` receiving a message in
    /// `conversation`, plus the sender's profile (under its name in `users`): a batch of one
    /// page (`receiverData(appID:pages:)`). A chat message's lookup is one statement, a
    /// `quickRead`, which on PostgreSQL is one round trip only for a body of one statement (a
    /// second one sends the whole body again as a `read`).
    func receiverData(
        appID: Int64, usernames: [String], sender: String, conversation: (chatType: String, key: String)
    ) async throws -> EasemobReceiverData {
        try await receiverData(
            appID: appID,
            pages: [EasemobReceiverQuery(usernames: usernames, sender: sender, conversation: conversation)])[0]
    }

    /// `receiverData` for the pages of several messages of one app (the policy's batches: many
    /// chat messages' one-receiver pages), one statement for all of them where a page each was a
    /// round trip each (issue #47): every user named and every setting of theirs at the app
    /// level or in one of the pages' conversations, then each page's share as its own read
    /// would give it.
    func receiverData(appID: Int64, pages: [EasemobReceiverQuery]) async throws -> [EasemobReceiverData] {
        let names = SQLList.chunks(pages.flatMap { $0.usernames + [$0.sender] })
        guard !names.isEmpty else {
            return pages.map { _ in EasemobReceiverData(users: [:], appLevel: [:], conversation: [:]) }
        }
        let conversations = SQLList.chunks(pages.map { Self.conversationKey($0.conversation) })
        let read: @Sendable (any SQLExecutor) throws -> [String: [SQLRow]] = { db in
            var rows: [String: [SQLRow]] = [:]
            for list in names {
                for conversation in conversations {
                    for row in try db.query(
                        Self.receiverDataStatement(names: list, conversations: conversation),
                        [.integer(appID)] + list.values + [.integer(appID)] + list.values + conversation.values)
                    {
                        guard let name = row["username"].string else { continue }
                        rows[name, default: []].append(row)
                    }
                }
            }
            return rows
        }
        let rows =
            names.count == 1 && conversations.count == 1 && names[0].values.count <= Self.quickReadLimit
            ? try await database.quickRead(read) : try await database.read(read)
        return pages.map { page in
            var data = EasemobReceiverData(users: [:], appLevel: [:], conversation: [:])
            for name in Set(page.usernames + [page.sender]) {
                for row in rows[name] ?? [] { Self.add(row, to: &data, conversation: page.conversation) }
            }
            return data
        }
    }

    /// A row of a receiver-data statement into `data`: a user, or a setting at the app level
    /// (chattype user keyed by the user itself) or for `conversation`; another conversation's
    /// setting (read for another page of a batch) is not this page's.
    private static func add(
        _ row: SQLRow, to data: inout EasemobReceiverData, conversation: (chatType: String, key: String)
    ) {
        guard row["kind"].string == "setting" else {
            let user = user(row)
            data.users[user.username] = user
            return
        }
        guard let name = row["username"].string, let chatType = row["chat_type"].string,
            let target = row["target"].string
        else { return }
        if chatType == "user" && target == name {
            data.appLevel[name] = setting(row)
            // A one-to-one conversation with oneself is the app level too.
            if conversation.chatType == "user" && conversation.key == name { data.conversation[name] = setting(row) }
        } else if chatType == conversation.chatType && target == conversation.key {
            data.conversation[name] = setting(row)
        }
    }

    /// A conversation as one text (`chat_type`, a space, `target`): chat types have no space,
    /// so the first one splits it.
    static func conversationKey(_ conversation: (chatType: String, key: String)) -> String {
        conversation.chatType + " " + conversation.key
    }

    /// The users in `names` (`kind` 'user', their `userColumns`), and their settings
    /// (`kind` 'setting') at the app level or in one of `conversations` (`conversationKey`s),
    /// read whether or not the user exists, as the policy asks by name. Its parameters: the app,
    /// the names, the app and the names again, the conversations.
    static func receiverDataStatement(names: SQLList, conversations: SQLList) -> String {
        """
        SELECT 'user' AS kind, \(userColumns), NULL AS chat_type, NULL AS target, NULL AS mode,
            NULL AS ignore_interval, NULL AS ignore_until
        FROM easemob_users WHERE app_id = ? AND username IN (\(names.marks))
        UNION ALL
        SELECT 'setting', username, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
            chat_type, target, mode, ignore_interval, ignore_until
        FROM easemob_notification_settings WHERE app_id = ? AND username IN (\(names.marks))
        AND ((chat_type = 'user' AND target = username) OR chat_type || ' ' || target IN (\(conversations.marks)))
        """
    }

    /// Lists of users up to this long are read with `SharedDatabase.quickRead`.
    static let quickReadLimit = 64

    // MARK: Groups

    /// Creates the group with its owner and members (members that are not users are refused
    /// before anything is written).
    func createGroup(appID: Int64, _ group: EasemobGroup, members: [String]) async throws {
        try await database.write { db in
            try db.execute(
                """
                INSERT INTO easemob_groups (app_id, group_id, name, description, is_public, members_only,
                    allow_invites, max_users, owner, custom, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(appID), .text(group.groupID), .text(group.name), .text(group.description),
                    .integer(group.isPublic ? 1 : 0), .integer(group.membersOnly ? 1 : 0),
                    .integer(group.allowInvites ? 1 : 0), .integer(Int64(group.maxUsers)), .text(group.owner),
                    .text(group.custom), .integer(group.createdAt),
                ])
            try Self.insertMember(
                db, appID: appID, groupID: group.groupID, username: group.owner, role: "owner", at: group.createdAt)
            for member in members where member != group.owner {
                try Self.insertMember(
                    db, appID: appID, groupID: group.groupID, username: member, role: "member", at: group.createdAt)
            }
        }
    }

    func group(appID: Int64, groupID: String) async throws -> (group: EasemobGroup, memberCount: Int)? {
        try await database.read { db in
            guard
                let row = try db.queryOne(
                    "SELECT * FROM easemob_groups WHERE app_id = ? AND group_id = ?", [.integer(appID), .text(groupID)])
            else { return nil }
            let count =
                try db.queryOne(
                    "SELECT COUNT(*) AS n FROM easemob_group_members WHERE app_id = ? AND group_id = ?",
                    [.integer(appID), .text(groupID)])?["n"].int ?? 0
            return (Self.group(row), Int(count))
        }
    }

    /// False when there is no such group.
    func updateGroup(appID: Int64, groupID: String, _ changes: EasemobGroupChanges) async throws -> Bool {
        try await database.write { db in
            var assignments: [String] = []
            var arguments: [SQLValue] = []
            func set(_ column: String, _ value: SQLValue?) {
                guard let value else { return }
                assignments.append("\(column) = ?")
                arguments.append(value)
            }
            set("name", changes.name.map(SQLValue.text))
            set("description", changes.description.map(SQLValue.text))
            set("is_public", changes.isPublic.map { .integer($0 ? 1 : 0) })
            set("members_only", changes.membersOnly.map { .integer($0 ? 1 : 0) })
            set("allow_invites", changes.allowInvites.map { .integer($0 ? 1 : 0) })
            set("max_users", changes.maxUsers.map { .integer(Int64($0)) })
            set("custom", changes.custom.map(SQLValue.text))
            if assignments.isEmpty {
                return try Self.groupExists(db, appID: appID, groupID: groupID)
            }
            try db.execute(
                "UPDATE easemob_groups SET \(assignments.joined(separator: ", ")) WHERE app_id = ? AND group_id = ?",
                arguments + [.integer(appID), .text(groupID)])
            return db.changedRows == 1
        }
    }

    func deleteGroup(appID: Int64, groupID: String) async throws -> Bool {
        try await database.write { db in
            try db.execute(
                "DELETE FROM easemob_group_members WHERE app_id = ? AND group_id = ?",
                [.integer(appID), .text(groupID)])
            try db.execute(
                "DELETE FROM easemob_groups WHERE app_id = ? AND group_id = ?", [.integer(appID), .text(groupID)])
            return db.changedRows == 1
        }
    }

    /// Adds members; those already in the group are returned in `already` and left alone.
    /// Nil when the group does not exist.
    func addMembers(appID: Int64, groupID: String, _ usernames: [String], now: Date) async throws -> (
        added: [String], already: [String]
    )? {
        try await database.write { db in
            guard try Self.groupExists(db, appID: appID, groupID: groupID) else { return nil }
            var added: [String] = []
            var already: [String] = []
            for name in usernames {
                try db.execute(
                    """
                    INSERT INTO easemob_group_members (app_id, group_id, username, role, joined_at) VALUES (?, ?, ?, 'member', ?)
                    ON CONFLICT (app_id, group_id, username) DO NOTHING
                    """,
                    [.integer(appID), .text(groupID), .text(name), .integer(SQLTime.milliseconds(now))])
                if db.changedRows == 1 { added.append(name) } else { already.append(name) }
            }
            return (added, already)
        }
    }

    /// Removes a member (not the owner). Nil when the group does not exist; false when the
    /// user was not a member.
    func removeMember(appID: Int64, groupID: String, username: String) async throws -> Bool? {
        try await database.write { db in
            guard try Self.groupExists(db, appID: appID, groupID: groupID) else { return nil }
            try db.execute(
                "DELETE FROM easemob_group_members WHERE app_id = ? AND group_id = ? AND username = ? AND role = 'member'",
                [.integer(appID), .text(groupID), .text(username)])
            return db.changedRows == 1
        }
    }

    /// The group's members (owner included), or nil when there is no such group.
    func members(appID: Int64, groupID: String) async throws -> [String]? {
        try await database.read { db in
            guard try Self.groupExists(db, appID: appID, groupID: groupID) else { return nil }
            return try db.query(
                "SELECT username FROM easemob_group_members WHERE app_id = ? AND group_id = ? ORDER BY joined_at, username",
                [.integer(appID), .text(groupID)]
            ).compactMap { $0["username"].string }
        }
    }

    private static func groupExists(_ db: any SQLExecutor, appID: Int64, groupID: String) throws -> Bool {
        try db.queryOne(
            "SELECT group_id FROM easemob_groups WHERE app_id = ? AND group_id = ?", [.integer(appID), .text(groupID)])
            != nil
    }

    private static func insertMember(
        _ db: any SQLExecutor, appID: Int64, groupID: String, username: String, role: String, at: Int64
    ) throws {
        try db.execute(
            """
            INSERT INTO easemob_group_members (app_id, group_id, username, role, joined_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (app_id, group_id, username) DO NOTHING
            """,
            [.integer(appID), .text(groupID), .text(username), .text(role), .integer(at)])
    }

    // MARK: Bindings

    /// Records the binding of `deviceID` (replacing that device's earlier token), and returns
    /// the token it replaced, if it differs, so the caller can unbind it.
    func bind(appID: Int64, username: String, _ binding: EasemobBinding, now: Date) async throws -> String? {
        try await database.write { db in
            let previous = try db.queryOne(
                "SELECT device_token FROM easemob_bindings WHERE app_id = ? AND username = ? AND device_id = ?",
                [.integer(appID), .text(username), .text(binding.deviceID)])?["device_token"].string
            // A token belongs to one device of one user: bound elsewhere before, it moves here.
            try db.execute(
                "DELETE FROM easemob_bindings WHERE app_id = ? AND device_token = ?",
                [.integer(appID), .text(binding.deviceToken)])
            try db.execute(
                """
                INSERT INTO easemob_bindings (app_id, username, device_id, device_token, notifier_name, updated_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (app_id, username, device_id) DO UPDATE SET
                    device_token = excluded.device_token, notifier_name = excluded.notifier_name,
                    updated_at = excluded.updated_at
                """,
                [
                    .integer(appID), .text(username), .text(binding.deviceID), .text(binding.deviceToken),
                    .text(binding.notifierName), .integer(SQLTime.milliseconds(now)),
                ])
            return previous == binding.deviceToken ? nil : previous
        }
    }

    /// Removes the binding of `deviceID`; the token it had, if any.
    func unbind(appID: Int64, username: String, deviceID: String) async throws -> String? {
        try await database.write { db in
            let previous = try db.queryOne(
                "SELECT device_token FROM easemob_bindings WHERE app_id = ? AND username = ? AND device_id = ?",
                [.integer(appID), .text(username), .text(deviceID)])?["device_token"].string
            try db.execute(
                "DELETE FROM easemob_bindings WHERE app_id = ? AND username = ? AND device_id = ?",
                [.integer(appID), .text(username), .text(deviceID)])
            return previous
        }
    }

    func bindings(appID: Int64, username: String) async throws -> [EasemobBinding] {
        try await database.read { db in
            try db.query(
                """
                SELECT device_id, device_token, notifier_name FROM easemob_bindings
                WHERE app_id = ? AND username = ? ORDER BY updated_at, device_id
                """,
                [.integer(appID), .text(username)]
            ).map(Self.binding)
        }
    }

    /// The console's Easemob columns of these devices of an app: the Easemob `device_id` and
    /// notifier name each was bound with (devices bound otherwise have none).
    func deviceColumns(appID: Int64, deviceIDs: [Int64]) async throws -> [Int64: [String: String]] {
        guard !deviceIDs.isEmpty else { return [:] }
        return try await database.read { db in
            var values: [Int64: [String: String]] = [:]
            for chunk in deviceIDs.chunks(ofCount: 400) {
                let rows = try db.query(
                    """
                    SELECT d.id AS device, b.device_id, b.notifier_name FROM devices d
                    JOIN easemob_bindings b ON b.app_id = d.app_id AND b.device_token = d.token
                    WHERE d.app_id = ? AND d.id IN (\(SQLList.placeholders(chunk.count)))
                    """,
                    [.integer(appID)] + chunk.map { SQLValue.integer($0) })
                for row in rows {
                    guard let id = row["device"].int else { continue }
                    var columns: [String: String] = [:]
                    if let deviceID = row["device_id"].string { columns["device_id"] = deviceID }
                    if let notifier = row["notifier_name"].string, !notifier.isEmpty {
                        columns["notifier_name"] = notifier
                    }
                    values[id] = columns
                }
            }
            return values
        }
    }

    // MARK: Template stamps

    /// When `template` was first seen and last seen changed, recording `now` for a template
    /// never seen or changed since (by the console, say). Epoch milliseconds.
    func stamp(appID: Int64, _ template: PushTemplate, now: Date) async throws -> (createAt: Int64, updateAt: Int64) {
        let hash = Hex.encode(
            Digest.sha256(Array("\(template.name)\u{0}\(template.titlePattern)\u{0}\(template.bodyPattern)".utf8)))
        return try await database.write { db in
            let key: [SQLValue] = [.integer(appID), .integer(template.id)]
            let row = try db.queryOne(
                "SELECT content_hash, created_at, updated_at FROM easemob_template_stamps WHERE app_id = ? AND template_id = ?",
                key)
            guard let row, let created = row["created_at"].int, let updated = row["updated_at"].int else {
                try db.execute(
                    "INSERT INTO easemob_template_stamps (app_id, template_id, content_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                    key + [.text(hash), .integer(SQLTime.milliseconds(now)), .integer(SQLTime.milliseconds(now))])
                return (SQLTime.milliseconds(now), SQLTime.milliseconds(now))
            }
            if row["content_hash"].string == hash { return (created, updated) }
            try db.execute(
                "UPDATE easemob_template_stamps SET content_hash = ?, updated_at = ? WHERE app_id = ? AND template_id = ?",
                [.text(hash), .integer(SQLTime.milliseconds(now))] + key)
            return (created, SQLTime.milliseconds(now))
        }
    }

    func forgetStamp(appID: Int64, templateID: Int64) async throws {
        try await database.write { db in
            try db.execute(
                "DELETE FROM easemob_template_stamps WHERE app_id = ? AND template_id = ?",
                [.integer(appID), .integer(templateID)])
        }
    }

    // MARK: Rows

    static let userColumns = """
        username, uuid, password_hash, nickname, display_style, no_disturbing, no_disturbing_start, \
        no_disturbing_end, language, created_at, modified_at
        """

    static func user(_ row: SQLRow) -> EasemobUser {
        EasemobUser(
            username: row["username"].string ?? "", uuid: row["uuid"].string ?? "",
            passwordHash: row["password_hash"].string, nickname: row["nickname"].string,
            displayStyle: row["display_style"].int.map(Int.init),
            noDisturbing: row["no_disturbing"].int.map { $0 != 0 },
            noDisturbingStart: row["no_disturbing_start"].int.map(Int.init),
            noDisturbingEnd: row["no_disturbing_end"].int.map(Int.init), language: row["language"].string,
            createdAt: row["created_at"].int ?? 0, modifiedAt: row["modified_at"].int ?? 0)
    }

    static func setting(_ row: SQLRow) -> EasemobNotificationSetting {
        EasemobNotificationSetting(
            mode: row["mode"].string.flatMap(EasemobPushMode.init(rawValue:)) ?? .default,
            ignoreInterval: row["ignore_interval"].string.flatMap(EasemobDailyInterval.init(parsing:)),
            ignoreUntil: row["ignore_until"].int.map { Date(timeIntervalSince1970: Double($0) / 1000) })
    }

    static func group(_ row: SQLRow) -> EasemobGroup {
        EasemobGroup(
            groupID: row["group_id"].string ?? "", name: row["name"].string ?? "",
            description: row["description"].string ?? "", isPublic: row["is_public"].int == 1,
            membersOnly: row["members_only"].int == 1, allowInvites: row["allow_invites"].int == 1,
            maxUsers: Int(row["max_users"].int ?? 200), owner: row["owner"].string ?? "",
            custom: row["custom"].string ?? "", createdAt: row["created_at"].int ?? 0)
    }

    static func binding(_ row: SQLRow) -> EasemobBinding {
        EasemobBinding(
            deviceID: row["device_id"].string ?? "", deviceToken: row["device_token"].string ?? "",
            notifierName: row["notifier_name"].string ?? "")
    }

}
