import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongPluginTestKit

@testable import EasemobProvider

/// One page of decisions from what the store really returns: per-receiver payloads and skip
/// reasons in order, one per device (two devices of one user get the same payload).
@Suite struct DecisionTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    @Test(arguments: PluginStoreBackend.allCases) func pageOfDecisionsFromStoredSettings(_ backend: PluginStoreBackend)
        async throws
    {
        try await EasemobTestDatabase.on(backend) { db in try await decide(on: db) }
    }

    private func decide(on db: EasemobTestDatabase) async throws {
        let store = EasemobStore(database: db.database)
        let appID = db.app.id
        let names = ["alice", "bob", "carol", "dave", "erin"]
        _ = try await store.createUsers(
            appID: appID, names.map { EasemobNewUser(username: $0, passwordHash: nil, nickname: nil) }, now: now)
        var nickname = EasemobUserChanges()
        nickname.nickname = "小艾"
        _ = try await store.updateUser(appID: appID, username: "alice", nickname, now: now)
        var summary = EasemobUserChanges()
        summary.displayStyle = 1
        _ = try await store.updateUser(appID: appID, username: "bob", summary, now: now)
        // carol: app level NONE; dave: app level AT; erin: silenced in this group for a minute.
        try await store.setNotificationSetting(
            appID: appID, username: "carol", chatType: "user", key: "carol", .init(mode: .none), now: now)
        try await store.setNotificationSetting(
            appID: appID, username: "dave", chatType: "user", key: "dave", .init(mode: .at), now: now)
        try await store.setNotificationSetting(
            appID: appID, username: "erin", chatType: "chatgroup", key: "g1",
            .init(ignoreUntil: now.addingTimeInterval(60)), now: now)

        let message = EasemobMessage(
            msgID: "42", from: "alice", chatType: .chatgroups, groupID: "g1", type: "txt", body: ["msg": "开会"],
            ext: ["em_at_list": ["bob"]])
        let accounts: [String?] = ["alice", "bob", "bob", "carol", "dave", "erin", nil]
        let data = try await store.receiverData(
            appID: appID, usernames: accounts.compactMap { $0 }, sender: "alice", conversation: message.conversation)
        let decisions = EasemobDecisions.decide(
            accounts: accounts, message: message, badges: EasemobDecisions.badges(["badges": ["bob": 4]]), data: data,
            template: nil, now: now, timeZone: TimeZone(secondsFromGMT: 8 * 3600)!)
        #expect(decisions.count == accounts.count)
        #expect(decisions[0] == .skip(reason: "sender"))
        let bob =
            #"{"aps":{"alert":{"body":"小艾:开会"},"badge":4,"sound":"default"},"f":"alice","g":"g1","m":"42","t":"bob"}"#
        for decision in decisions[1...2] {
            guard case .sendContent(let content) = decision else {
                Issue.record("bob's devices are sent, got \(decision)")
                continue
            }
            #expect(String(decoding: APNsPayload.render(content), as: UTF8.self) == bob)
        }
        #expect(decisions[1] == decisions[2])
        #expect(decisions[3] == .skip(reason: "mode_none"))
        #expect(decisions[4] == .skip(reason: "not_mentioned"))
        #expect(decisions[5] == .skip(reason: "dnd"))
        #expect(decisions[6] == .skip(reason: "ignored"))

        // A minute later erin's silence is over; @all reaches dave.
        let later = EasemobDecisions.decide(
            accounts: ["dave", "erin"],
            message: EasemobMessage(
                msgID: "43", from: "alice", chatType: .chatgroups, groupID: "g1", type: "txt", body: ["msg": "x"],
                ext: ["em_at_list": "all"]),
            badges: [:], data: data, template: nil, now: now.addingTimeInterval(61),
            timeZone: TimeZone(secondsFromGMT: 8 * 3600)!)
        #expect(
            later.allSatisfy {
                if case .sendContent = $0 { true } else { false }
            })
    }
}
