import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TencentProvider

/// A Tencent app on a fresh store (each database) with these accounts, its policy, and
/// recipients naming the accounts by row as bound devices do.
struct TencentPolicyFixture {
    let temporary: PluginTestStore
    let app: App
    let tencent: TencentStore
    let policy: TencentDeliveryPolicy
    let ids: [String: Int64]
    var store: any GatewayStore { temporary.store }

    init(_ backend: PluginStoreBackend, accounts: [String]) async throws {
        temporary = try PluginTestStore(backend, providers: [TencentProvider.self])
        let store = temporary.store
        app = try await store.createApp(name: "t", bundleID: "com.example.t", apiKeyHash: UUID().uuidString)
        tencent = TencentStore(database: temporary.database)
        policy = TencentDeliveryPolicy(store: tencent, accounts: store)
        for account in accounts { try await store.createAccount(appID: app.id, account: account) }
        let appID = app.id
        let rows = try await temporary.database.read { db in
            try db.query("SELECT id, account FROM accounts WHERE app_id = ?", [.integer(appID)])
        }
        var ids: [String: Int64] = [:]
        for row in rows { if let account = row["account"].string { ids[account] = row["id"].int } }
        self.ids = ids
    }

    func recipient(_ n: Int, _ account: String, _ state: AppState?) -> Recipient {
        Recipient(
            deviceID: Int64(n), token: String(repeating: "b", count: 63) + String(n), environment: .production,
            account: account, accountID: ids[account], appState: state, channel: .apns)
    }
}

/// `TencentDeliveryPolicy` on a real store (each database): seed 003's rules per receiver, and the badge
/// counted once per account and message however often a page is decided.
@Suite struct TencentDeliveryPolicyTests {
    @Test(arguments: PluginStoreBackend.allCases) func decidesPerReceiverAndCountsEachAccountOnce(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        let fixture = try await TencentPolicyFixture(backend, accounts: ["alice", "bob", "carol", "dave"])
        defer { fixture.temporary.remove() }
        let (store, app, tencent, policy) = (fixture.store, fixture.app, fixture.tencent, fixture.policy)
        try await store.setBadge(appID: app.id, account: "bob", to: 4)
        try await tencent.setOpenPush(appID: app.id, account: "dave", enabled: false)

        let elements = try MessageElement.parseBody(
            try JSONValue(
                parsing:
                    #"[{"MsgType":"TIMCustomElem","MsgContent":{"Data":"x","Desc":"helloworld","Ext":"www.qq.com","Sound":"dingdong.aiff"}}]"#
            ))
        let template = OfflinePushTemplate(
            sender: "alice", origin: .oneToOne(senderNick: "Alice"), elements: elements, pushInfo: nil)
        let job = PushJob(
            appID: app.id, vendor: "tencent", audience: .accounts(["alice", "bob", "carol", "dave"]),
            content: template.content(badge: nil), options: PushOptions(),
            vendorContext: template.vendorContext)
        let message = try await store.createMessage(job, state: .queued)

        // Each bound device names its account by row too (what the audience page reads).
        let recipient = fixture.recipient
        // bob has two devices on this page and one more on the next.
        let page = [
            recipient(1, "alice", .background), recipient(2, "bob", .background), recipient(3, "bob", nil),
            recipient(4, "carol", .foreground), recipient(5, "dave", .background),
        ]
        let seed = PushContent(
            body: "Alice:helloworld", badge: 5, sound: "dingdong.aiff", data: ["ext": "www.qq.com"])
        let expected: [DeliveryDecision] = [
            .skip(reason: "sender"), .sendContent(seed), .sendContent(seed), .skip(reason: "foreground"),
            .skip(reason: "push_disabled"),
        ]
        #expect(try await policy.decide(page, message: message) == expected)
        // The same page again (a retry) and bob's device on the next page: still 5.
        #expect(try await policy.decide(page, message: message) == expected)
        #expect(try await policy.decide([recipient(6, "bob", .background)], message: message) == [.sendContent(seed)])
        #expect(try await store.badge(appID: app.id, account: "bob") == 5)
        #expect(try await store.badge(appID: app.id, account: "carol") == 0)
    }

    /// Pages of several messages decided together (the dispatcher's batches): each page gets
    /// what it would get alone; an account two messages count gets a distinct value for each; a
    /// suppressed message and one that is not Tencent's answer without the store.
    @Test(arguments: PluginStoreBackend.allCases) func decidesManyMessagesPagesTogether(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        let fixture = try await TencentPolicyFixture(backend, accounts: ["bob", "carol", "dave"])
        defer { fixture.temporary.remove() }
        let (store, app, tencent, policy) = (fixture.store, fixture.app, fixture.tencent, fixture.policy)
        try await store.setBadge(appID: app.id, account: "bob", to: 4)
        try await tencent.setOpenPush(appID: app.id, account: "dave", enabled: false)
        let recipient = fixture.recipient
        func message(_ text: String, pushFlag: Int = 0) async throws -> MessageRecord {
            let elements = try MessageElement.parseBody(
                try JSONValue(parsing: #"[{"MsgType":"TIMTextElem","MsgContent":{"Text":"\#(text)"}}]"#))
            let pushInfo = try OfflinePushInfo.parse(try JSONValue(parsing: #"{"PushFlag":\#(pushFlag)}"#))
            let template = OfflinePushTemplate(
                sender: "alice", origin: .oneToOne(senderNick: nil), elements: elements, pushInfo: pushInfo)
            let job = PushJob(
                appID: app.id, vendor: "tencent", audience: .accounts(["bob"]), content: template.content(badge: nil),
                options: PushOptions(), vendorContext: template.vendorContext)
            return try await store.createMessage(job, state: .queued)
        }
        let first = try await message("one")
        let second = try await message("two")
        let quiet = try await message("shh", pushFlag: 1)
        var foreign = first
        foreign.vendorContext = nil

        let pages = [
            PolicyPage(recipients: [recipient(1, "bob", .background), recipient(2, "dave", nil)], message: first),
            PolicyPage(recipients: [recipient(3, "carol", .foreground), recipient(1, "bob", nil)], message: second),
            PolicyPage(recipients: [recipient(1, "bob", .background)], message: quiet),
            PolicyPage(recipients: [recipient(1, "bob", .background)], message: foreign),
        ]
        let answers = try await policy.decide(pages: pages).map { try $0.get() }
        #expect(answers.count == 4)
        func badge(_ decision: DeliveryDecision) -> Int? {
            if case .sendContent(let content) = decision { return content.badge }
            return nil
        }
        #expect(answers[0].count == 2 && answers[0][1] == .skip(reason: "push_disabled"))
        #expect(answers[1].count == 2 && answers[1][0] == .skip(reason: "foreground"))
        #expect(Set([badge(answers[0][0]), badge(answers[1][1])]) == [5, 6], "\(answers)")
        #expect(answers[2] == [.skip(reason: "push_flag")])
        #expect(answers[3] == [.send])
        #expect(try await store.badge(appID: app.id, account: "bob") == 6)

        // Decided again (a retry after a crash): nothing counted twice; each page alone agrees.
        let again = try await policy.decide(pages: pages).map { try $0.get() }
        #expect(badge(again[0][0]) == 6 && badge(again[1][1]) == 6)
        #expect(try await policy.decide(pages[0].recipients, message: first) == again[0])
        #expect(try await store.badge(appID: app.id, account: "bob") == 6)
    }

    /// An Android device gets the common rendering; BadgeMode 1 (iOS's) leaves its counter on
    /// Android: the account is counted once for its Android device, its iPhone carries none.
    @Test(arguments: PluginStoreBackend.allCases) func androidDevicesGetTheCommonRenderingAndTheCounter(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        let temporary = try PluginTestStore(backend, providers: [TencentProvider.self])
        defer { temporary.remove() }
        let store = temporary.store
        let app = try await store.createApp(name: "t", bundleID: "com.example.t", apiKeyHash: UUID().uuidString)
        let policy = TencentDeliveryPolicy(store: TencentStore(database: temporary.database), accounts: store)
        try await store.createAccount(appID: app.id, account: "bob")
        try await store.createAccount(appID: app.id, account: "carol")
        try await store.setBadge(appID: app.id, account: "bob", to: 2)
        let rows = try await temporary.database.read { db in
            try db.query("SELECT id, account FROM accounts WHERE app_id = ?", [.integer(app.id)])
        }
        let ids = Dictionary(uniqueKeysWithValues: rows.map { ($0["account"].string ?? "", $0["id"].int) })

        let elements = try MessageElement.parseBody(
            try JSONValue(parsing: #"[{"MsgType":"TIMTextElem","MsgContent":{"Text":"hi"}}]"#))
        let pushInfo = try OfflinePushInfo.parse(
            try JSONValue(parsing: #"{"Title":"T","ApnsInfo":{"Title":"iOS","BadgeMode":1,"Sound":"a.caf"}}"#))
        let template = OfflinePushTemplate(
            sender: "alice", origin: .oneToOne(senderNick: "Alice"), elements: elements, pushInfo: pushInfo)
        let job = PushJob(
            appID: app.id, vendor: "tencent", audience: .accounts(["bob", "carol"]),
            content: template.content(badge: nil), options: PushOptions(),
            vendorContext: template.vendorContext)
        let message = try await store.createMessage(job, state: .queued)
        let page = [
            Recipient(
                deviceID: 1, token: String(repeating: "a", count: 64), environment: .production, account: "bob",
                accountID: ids["bob"] ?? nil, appState: .background, channel: .apns),
            Recipient(
                deviceID: 2, token: "huawei-token-bob", environment: .production, account: "bob",
                accountID: ids["bob"] ?? nil, appState: .background, channel: .huawei),
            Recipient(
                deviceID: 3, token: String(repeating: "c", count: 64), environment: .production, account: "carol",
                accountID: ids["carol"] ?? nil, appState: .background, channel: .apns),
        ]
        let ios = PushContent(title: "iOS", body: "Alice:hi", sound: "a.caf")
        // No APNs payload for the Huawei phone: neutral content its transport renders.
        let android = PushContent(title: "T", body: "Alice:hi", badge: 3)
        let expected: [DeliveryDecision] = [.sendContent(ios), .sendContent(android), .sendContent(ios)]
        #expect(try await policy.decide(page, message: message) == expected)
        #expect(try await policy.decide(page, message: message) == expected)
        #expect(try await store.badge(appID: app.id, account: "bob") == 3)
        #expect(try await store.badge(appID: app.id, account: "carol") == 0)
    }

    @Test(arguments: PluginStoreBackend.allCases) func deviceColumnsShowIdentifierAndBusiId(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        let temporary = try PluginTestStore(backend, providers: [TencentProvider.self])
        defer { temporary.remove() }
        let store = temporary.store
        let provider = try TencentProvider(
            context: temporary.context(
                gateway: RecordingGateway(store: store, clock: SystemClock()), secrets: try TestSealer()))
        var app = try await store.createApp(name: "t", bundleID: "com.example.t", apiKeyHash: UUID().uuidString)
        let token = DeviceToken(String(repeating: "d", count: 64))!
        let device = try await store.bindDevice(
            appID: app.id, account: "alice",
            registration: DeviceRegistration(token: token, environment: .production, channel: .apns),
            credentialSelector: "12345")
        // Not a Tencent app (yet): no values.
        #expect(try await provider.deviceColumnValues(appID: app.id, deviceIDs: [device.id]).isEmpty)
        app.vendorSettings["tencent"] = ["sdkappid": "1400000000"]
        try await store.updateApp(app)
        #expect(
            try await provider.deviceColumnValues(appID: app.id, deviceIDs: [device.id])
                == [device.id: ["identifier": "alice", "busi_id": "12345"]])
        #expect(TencentProvider.deviceColumns.map(\.key) == ["identifier", "busi_id"])
    }
}
