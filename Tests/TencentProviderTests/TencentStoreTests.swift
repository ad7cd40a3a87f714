import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TencentProvider

/// `TencentStore`'s SQL on SQLite and on PostgreSQL, with Tencent's migrations.
@Suite struct TencentStoreTests {
    @Test(arguments: PluginStoreBackend.allCases)
    func profilesGroupsTagsAndPushConfig(_ backend: PluginStoreBackend) async throws {
        try await withPluginStore(backend, providers: [TencentProvider.self]) { core in
            try await profilesGroupsTagsAndPushConfig(TencentStore(database: core.sharedDatabase))
        }
    }

    func profilesGroupsTagsAndPushConfig(_ store: TencentStore) async throws {

        try await store.setProfile(appID: 1, account: "alice", items: [("Tag_Profile_IM_Nick", "Alice")])
        try await store.setProfile(
            appID: 1, account: "alice",
            items: [("Tag_Profile_IM_Nick", "Alice2"), ("Tag_Profile_IM_Gender", "Gender_Type_Female")])
        try await store.setProfile(appID: 2, account: "alice", items: [("Tag_Profile_IM_Nick", "Other app")])
        #expect(try await store.nicks(appID: 1, accounts: ["alice", "bob"]) == ["alice": "Alice2"])
        #expect(try await store.profiles(appID: 1, accounts: ["alice"])["alice"]?.count == 2)

        #expect(
            try await store.createGroup(
                appID: 1, groupID: "g1", type: "Public", name: "Team", owner: "alice",
                members: [("bob", "Bobby"), ("alice", nil), ("carol", nil)], now: 10))
        #expect(
            !(try await store.createGroup(
                appID: 1, groupID: "g1", type: "Public", name: "Again", owner: nil, members: [], now: 11)))
        #expect(try await store.group(appID: 1, groupID: "g1")?.memberCount == 3)
        #expect(try await store.group(appID: 2, groupID: "g1") == nil)
        #expect(try await store.nextMessageSequence(appID: 1, groupID: "g1") == 1)
        #expect(try await store.nextMessageSequence(appID: 1, groupID: "g1") == 2)
        #expect(try await store.nextMessageSequence(appID: 1, groupID: "nope") == nil)
        #expect(
            try await store.addMembers(appID: 1, groupID: "g1", accounts: ["bob", "dave", "dave"], now: 12) == ["dave"])
        #expect(try await store.deleteMembers(appID: 1, groupID: "g1", accounts: ["carol", "erin"]) == ["carol"])
        #expect(try await store.memberAccounts(appID: 1, groupID: "g1") == ["alice", "bob", "dave"])
        #expect(try await store.member(appID: 1, groupID: "g1", account: "bob") == (true, "Bobby"))
        #expect(try await store.setNameCard(appID: 1, groupID: "g1", account: "dave", nameCard: "D"))
        #expect(!(try await store.setNameCard(appID: 1, groupID: "g1", account: "carol", nameCard: "C")))
        #expect(try await store.member(appID: 1, groupID: "g1", account: "dave") == (true, "D"))

        try await store.addTags(appID: 1, account: "alice", tags: ["vip", "beijing"])
        try await store.addTags(appID: 1, account: "bob", tags: ["vip"])
        try await store.addTags(appID: 1, account: "bob", tags: ["vip"])
        #expect(try await store.accounts(appID: 1, allOf: ["vip", "beijing"]) == ["alice"])
        #expect(try await store.accounts(appID: 1, anyOf: ["vip", "beijing"]) == ["alice", "bob"])
        try await store.removeTags(appID: 1, account: "alice", tags: ["beijing"])
        #expect(
            try await store.tags(appID: 1, accounts: ["alice", "bob", "carol"]) == ["alice": ["vip"], "bob": ["vip"]])

        try await store.setOpenPush(appID: 1, account: "bob", enabled: false)
        try await store.setOpenPush(appID: 1, account: "alice", enabled: false)
        try await store.setOpenPush(appID: 1, account: "alice", enabled: true)
        #expect(try await store.pushDisabled(appID: 1, accounts: ["alice", "bob", "carol"]) == ["bob"])

        try await store.deleteAccountData(appID: 1, account: "bob")
        #expect(try await store.memberAccounts(appID: 1, groupID: "g1") == ["alice", "dave"])
        #expect(try await store.pushDisabled(appID: 1, accounts: ["bob"]).isEmpty)
        #expect(try await store.tags(appID: 1, accounts: ["bob"]).isEmpty)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func manyAccountsAreQueriedInChunks(_ backend: PluginStoreBackend) async throws {
        try await withPluginStore(backend, providers: [TencentProvider.self]) { core in
            try await manyAccountsAreQueriedInChunks(TencentStore(database: core.sharedDatabase))
        }
    }

    func manyAccountsAreQueriedInChunks(_ store: TencentStore) async throws {
        let accounts = (0..<1_200).map { "user\($0)" }
        for account in accounts where account.hasSuffix("7") {
            try await store.setOpenPush(appID: 1, account: account, enabled: false)
        }
        #expect(try await store.pushDisabled(appID: 1, accounts: accounts).count == 120)
        // Padded lists (SQLList): other lengths reuse the same few prepared texts.
        #expect(try await store.pushDisabled(appID: 1, accounts: Array(accounts.prefix(700))).count == 70)
        #expect(try await store.pushDisabled(appID: 1, accounts: ["user7", "user8", "user7"]) == ["user7"])
        // Tags and profiles of as many accounts, read in the same padded chunks.
        for account in accounts where account.hasSuffix("99") {
            try await store.addTags(appID: 1, account: account, tags: ["vip"])
            try await store.setProfile(appID: 1, account: account, items: [("Tag_Profile_IM_Nick", .string(account))])
        }
        let tagged = try await store.tags(appID: 1, accounts: accounts)
        #expect(tagged.count == 12 && tagged.values.allSatisfy { $0 == ["vip"] })
        let profiles = try await store.profiles(appID: 1, accounts: accounts, tags: ["Tag_Profile_IM_Nick"])
        #expect(profiles.count == 12 && profiles["user1099"]?["Tag_Profile_IM_Nick"] == .string("user1099"))
    }
}
