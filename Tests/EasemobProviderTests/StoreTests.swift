import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import EasemobProvider

/// `EasemobStore`'s SQL on SQLite and on PostgreSQL, with the core schema and Easemob's migrations.
@Suite struct StoreTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    func users(_ names: String...) -> [EasemobNewUser] {
        names.map { EasemobNewUser(username: $0, passwordHash: "h-\($0)", nickname: nil) }
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func usersRegisterOnceListInOrderUpdateAndDelete(_ backend: PluginStoreBackend) async throws {
        try await EasemobTestDatabase.on(backend) { db in try await usersRegisterOnceListInOrderUpdateAndDelete(db) }
    }

    func usersRegisterOnceListInOrderUpdateAndDelete(_ db: EasemobTestDatabase) async throws {
        let store = EasemobStore(database: db.database)
        let appID = db.app.id
        let first = try await store.createUsers(appID: appID, users("u1", "u2"), now: now)
        #expect(first.created.map(\.username) == ["u1", "u2"] && first.existing.isEmpty)
        let second = try await store.createUsers(
            appID: appID, users("u2", "u3", "u3"), now: now.addingTimeInterval(1))
        #expect(second.created.map(\.username) == ["u3"] && second.existing == ["u2", "u3"])

        let page1 = try await store.users(appID: appID, cursor: nil, limit: 2)
        #expect(page1.users.map(\.username) == ["u1", "u2"])
        let cursor: String = try #require(page1.next)
        let page2 = try await store.users(appID: appID, cursor: cursor, limit: 2)
        #expect(page2.users.map(\.username) == ["u3"] && page2.next == nil)
        await #expect(throws: EasemobError.self) { try await store.users(appID: appID, cursor: "!!", limit: 2) }

        var changes = EasemobUserChanges()
        changes.nickname = "小明"
        changes.displayStyle = 1
        changes.noDisturbing = true
        changes.noDisturbingStart = 22
        changes.noDisturbingEnd = 7
        let updated = try #require(
            try await store.updateUser(appID: appID, username: "u1", changes, now: now.addingTimeInterval(5)))
        #expect(
            updated.nickname == "小明" && updated.displayStyle == 1
                && updated.modifiedAt == SQLTime.milliseconds(now) + 5000)
        #expect(updated.legacyDoNotDisturb == EasemobLegacyDoNotDisturb(enabled: true, startHour: 22, endHour: 7))
        #expect(updated.entity["notification_no_disturbing_start"] == 22)
        #expect(try await store.updateUser(appID: appID, username: "nobody", changes, now: now) == nil)
        #expect(try await store.setLanguage(appID: appID, username: "u1", language: "en", now: now))
        #expect(try await store.user(appID: appID, username: "u1")?.language == "en")
        #expect(try await store.existingUsers(appID: appID, among: ["u1", "zz", "u3"]) == ["u1", "u3"])

        // Deleting the owner takes its group along; its memberships elsewhere go too.
        try await store.createGroup(appID: appID, group(id: "100", owner: "u1"), members: ["u2"])
        try await store.createGroup(appID: appID, group(id: "200", owner: "u2"), members: ["u1", "u3"])
        _ = try await store.bind(appID: appID, username: "u1", binding("d1", "aa"), now: now)
        let deleted = try #require(try await store.deleteUser(appID: appID, username: "u1"))
        #expect(deleted.user.username == "u1" && deleted.bindings.map(\.deviceToken) == ["aa"])
        #expect(try await store.group(appID: appID, groupID: "100") == nil)
        #expect(try await store.members(appID: appID, groupID: "200") == ["u2", "u3"])
        #expect(try await store.bindings(appID: appID, username: "u1").isEmpty)
        #expect(try await store.deleteUser(appID: appID, username: "u1") == nil)
    }

    func group(id: String, owner: String) -> EasemobGroup {
        EasemobGroup(
            groupID: id, name: "g\(id)", description: "", isPublic: true, membersOnly: false, allowInvites: false,
            maxUsers: 200, owner: owner, custom: "", createdAt: SQLTime.milliseconds(now))
    }

    func binding(_ device: String, _ token: String, _ notifier: String = "cert") -> EasemobBinding {
        EasemobBinding(deviceID: device, deviceToken: token, notifierName: notifier)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func groupsAndMembers(_ backend: PluginStoreBackend) async throws {
        try await EasemobTestDatabase.on(backend) { db in try await groupsAndMembers(db) }
    }

    func groupsAndMembers(_ db: EasemobTestDatabase) async throws {
        let store = EasemobStore(database: db.database)
        let appID = db.app.id
        _ = try await store.createUsers(appID: appID, users("o", "a", "b"), now: now)
        try await store.createGroup(appID: appID, group(id: "1", owner: "o"), members: ["a", "o"])
        #expect(try await store.members(appID: appID, groupID: "1") == ["a", "o"])
        let added = try #require(try await store.addMembers(appID: appID, groupID: "1", ["b", "a"], now: now))
        #expect(added.added == ["b"] && added.already == ["a"])
        #expect(try await store.group(appID: appID, groupID: "1")?.memberCount == 3)
        #expect(try await store.removeMember(appID: appID, groupID: "1", username: "a") == true)
        #expect(try await store.removeMember(appID: appID, groupID: "1", username: "a") == false)
        // The owner stays.
        #expect(try await store.removeMember(appID: appID, groupID: "1", username: "o") == false)
        #expect(try await store.removeMember(appID: appID, groupID: "9", username: "a") == nil)
        #expect(try await store.addMembers(appID: appID, groupID: "9", ["a"], now: now) == nil)
        var changes = EasemobGroupChanges()
        changes.name = "new"
        changes.maxUsers = 500
        #expect(try await store.updateGroup(appID: appID, groupID: "1", changes))
        #expect(changes.changedKeys == ["groupname", "maxusers"])
        #expect(try await store.group(appID: appID, groupID: "1")?.group.name == "new")
        #expect(try await store.updateGroup(appID: appID, groupID: "9", changes) == false)
        #expect(try await store.deleteGroup(appID: appID, groupID: "1"))
        #expect(try await store.members(appID: appID, groupID: "1") == nil)
        #expect(try await store.deleteGroup(appID: appID, groupID: "1") == false)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func settingsAndWhatThePolicyReads(_ backend: PluginStoreBackend) async throws {
        try await EasemobTestDatabase.on(backend) { db in try await settingsAndWhatThePolicyReads(db) }
    }

    func settingsAndWhatThePolicyReads(_ db: EasemobTestDatabase) async throws {
        let store = EasemobStore(database: db.database)
        let appID = db.app.id
        _ = try await store.createUsers(appID: appID, users("alice", "bob", "carol"), now: now)
        let interval = EasemobDailyInterval(parsing: "22:00-07:00")
        try await store.setNotificationSetting(
            appID: appID, username: "bob", chatType: "user", key: "bob",
            EasemobNotificationSetting(mode: .at, ignoreInterval: interval), now: now)
        try await store.setNotificationSetting(
            appID: appID, username: "bob", chatType: "chatgroup", key: "g1",
            EasemobNotificationSetting(mode: .all, ignoreUntil: now.addingTimeInterval(60)), now: now)
        try await store.setNotificationSetting(
            appID: appID, username: "carol", chatType: "user", key: "alice", EasemobNotificationSetting(mode: .none),
            now: now)
        // Upsert replaces.
        try await store.setNotificationSetting(
            appID: appID, username: "bob", chatType: "user", key: "bob",
            EasemobNotificationSetting(mode: .at, ignoreInterval: interval), now: now)
        let appLevel = try await store.notificationSetting(appID: appID, username: "bob", chatType: "user", key: "bob")
        #expect(appLevel == EasemobNotificationSetting(mode: .at, ignoreInterval: interval))
        var changes = EasemobUserChanges()
        changes.nickname = "Alice"
        _ = try await store.updateUser(appID: appID, username: "alice", changes, now: now)

        let group = try await store.receiverData(
            appID: appID, usernames: ["bob", "carol"], sender: "alice", conversation: ("chatgroup", "g1"))
        #expect(group.users["alice"]?.nickname == "Alice")
        #expect(group.appLevel["bob"]?.mode == .at && group.appLevel["carol"] == nil)
        #expect(
            group.conversation["bob"]?.mode == .all
                && group.conversation["bob"]?.ignoreUntil == now.addingTimeInterval(60))
        #expect(group.conversation["carol"] == nil)

        let direct = try await store.receiverData(
            appID: appID, usernames: ["bob", "carol"], sender: "alice", conversation: ("user", "alice"))
        #expect(direct.conversation["carol"]?.mode == EasemobPushMode.none && direct.conversation["bob"] == nil)

        // A chat message's lookup: one statement, its body run once, on both databases (a
        // PostgreSQL quick read of two statements runs its body again as a read).
        let counted = QuickReadCounter(db.database)
        let chat = try await EasemobStore(database: counted).receiverData(
            appID: appID, usernames: ["bob"], sender: "alice", conversation: ("user", "alice"))
        #expect(counted.bodies == 1 && counted.statements == 1)
        #expect(chat.users.keys.sorted() == ["alice", "bob"] && chat.users["alice"]?.nickname == "Alice")
        #expect(chat.users["bob"]?.passwordHash == "h-bob" && chat.users["bob"]?.createdAt == 1_700_000_000_000)
        #expect(chat.appLevel["bob"] == EasemobNotificationSetting(mode: .at, ignoreInterval: interval))
        #expect(chat.conversation.isEmpty)

        // A setting is read by name, whether or not its user exists; a conversation with
        // oneself is the app level.
        try await store.setNotificationSetting(
            appID: appID, username: "dave", chatType: "user", key: "dave", EasemobNotificationSetting(mode: .none),
            now: now)
        let own = try await store.receiverData(
            appID: appID, usernames: ["bob", "dave"], sender: "bob", conversation: ("user", "bob"))
        #expect(own.users["dave"] == nil && own.appLevel["dave"]?.mode == EasemobPushMode.none)
        #expect(own.conversation["bob"] == own.appLevel["bob"] && own.conversation["bob"] != nil)
        #expect(own.conversation["dave"] == nil)

        // Several messages' pages read together (the policy's batches), in one statement: each
        // page's share is what its own read gives, another page's conversation not included.
        let queries = [
            EasemobReceiverQuery(usernames: ["bob", "carol"], sender: "alice", conversation: ("chatgroup", "g1")),
            EasemobReceiverQuery(usernames: ["bob", "carol"], sender: "alice", conversation: ("user", "alice")),
            EasemobReceiverQuery(usernames: ["bob", "dave"], sender: "bob", conversation: ("user", "bob")),
            EasemobReceiverQuery(usernames: ["carol"], sender: "nobody", conversation: ("chatgroup", "g1")),
        ]
        let batch = QuickReadCounter(db.database)
        let together = try await EasemobStore(database: batch).receiverData(appID: appID, pages: queries)
        #expect(batch.bodies == 1 && batch.statements == 1)
        #expect(together.count == queries.count)
        for (query, data) in zip(queries, together) {
            let alone = try await store.receiverData(
                appID: appID, usernames: query.usernames, sender: query.sender, conversation: query.conversation)
            #expect(data == alone, "\(query.conversation)")
        }
        #expect(together[0].conversation["bob"]?.mode == .all && together[3].conversation.isEmpty)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func bindingsMoveTokensAndReportReplacedOnes(_ backend: PluginStoreBackend) async throws {
        try await EasemobTestDatabase.on(backend) { db in try await bindingsMoveTokensAndReportReplacedOnes(db) }
    }

    func bindingsMoveTokensAndReportReplacedOnes(_ db: EasemobTestDatabase) async throws {
        let store = EasemobStore(database: db.database)
        let appID = db.app.id
        #expect(try await store.bind(appID: appID, username: "u", binding("d1", "aa"), now: now) == nil)
        #expect(try await store.bind(appID: appID, username: "u", binding("d2", "bb", "dev"), now: now) == nil)
        // Same device, new token: the old one is reported.
        #expect(try await store.bind(appID: appID, username: "u", binding("d1", "cc"), now: now) == "aa")
        #expect(try await store.bind(appID: appID, username: "u", binding("d1", "cc"), now: now) == nil)
        #expect(Set(try await store.bindings(appID: appID, username: "u").map(\.deviceToken)) == ["bb", "cc"])
        // Another user's device takes token bb: it leaves u.
        _ = try await store.bind(appID: appID, username: "v", binding("x", "bb"), now: now)
        #expect(try await store.bindings(appID: appID, username: "u").map(\.deviceToken) == ["cc"])
        // The console's columns, for devices the core knows by these tokens.
        let tokenCC = String(repeating: "cc", count: 32)
        _ = try await store.bind(appID: appID, username: "u", binding("d1", tokenCC, "ios-prod"), now: now)
        let device = try await db.core.bindDevice(
            appID: appID, account: "u",
            registration: DeviceRegistration(token: DeviceToken(tokenCC)!, environment: .production, channel: .apns),
            credentialSelector: "ios-prod")
        let columns = try await store.deviceColumns(appID: appID, deviceIDs: [device.id, 999])
        #expect(columns == [device.id: ["device_id": "d1", "notifier_name": "ios-prod"]])
        #expect(try await store.unbind(appID: appID, username: "u", deviceID: "d1") == tokenCC)
        #expect(try await store.unbind(appID: appID, username: "u", deviceID: "d1") == nil)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func signingKeyIsCreatedOnceAndSealed(_ backend: PluginStoreBackend) async throws {
        try await EasemobTestDatabase.on(backend) { db in try await signingKeyIsCreatedOnceAndSealed(db) }
    }

    func signingKeyIsCreatedOnceAndSealed(_ db: EasemobTestDatabase) async throws {
        let store = EasemobStore(database: db.database)
        let sealer = try TestSealer()
        let keys = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<8 {
                group.addTask { try await store.signingKey(appID: db.app.id, sealer: sealer, now: self.now) }
            }
            return try await group.reduce(into: [[UInt8]]()) { $0.append($1) }
        }
        #expect(Set(keys).count == 1 && keys[0].count == 32)
        let stored = try await db.read { db in
            try db.queryOne("SELECT sealed_key FROM easemob_token_keys")?["sealed_key"].string
        }
        #expect(stored != nil && stored!.utf8.count > 40)
        #expect(!Data(keys[0]).base64EncodedString().isEmpty && stored != Data(keys[0]).base64EncodedString())
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func templateStampsNoticeChanges(_ backend: PluginStoreBackend) async throws {
        try await EasemobTestDatabase.on(backend) { db in try await templateStampsNoticeChanges(db) }
    }

    func templateStampsNoticeChanges(_ db: EasemobTestDatabase) async throws {
        let store = EasemobStore(database: db.database)
        var template = try await db.core.createTemplate(
            appID: db.app.id, name: "t", titlePattern: "你好,{0}", bodyPattern: "{0}")
        let first = try await store.stamp(appID: db.app.id, template, now: now)
        #expect(first == (SQLTime.milliseconds(now), SQLTime.milliseconds(now)))
        let same = try await store.stamp(appID: db.app.id, template, now: now.addingTimeInterval(10))
        #expect(same == (SQLTime.milliseconds(now), SQLTime.milliseconds(now)))
        template.bodyPattern = "{0}!"  // as the console would edit it
        let changed = try await store.stamp(appID: db.app.id, template, now: now.addingTimeInterval(20))
        #expect(changed == (SQLTime.milliseconds(now), SQLTime.milliseconds(now) + 20_000))
        try await store.forgetStamp(appID: db.app.id, templateID: template.id)
        #expect(
            try await store.stamp(appID: db.app.id, template, now: now.addingTimeInterval(30)).createAt
                == SQLTime.milliseconds(now)
                + 30_000)
    }
}
