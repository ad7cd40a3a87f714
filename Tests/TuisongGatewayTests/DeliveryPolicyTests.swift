import Foundation
import Synchronization
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongStore

@testable import TuisongGateway

/// An IM-like policy written for these tests: foreground accounts and accounts with push
/// switched off are skipped; everyone else gets `vendorContext.text` with their own badge,
/// incremented once per account and page in one store round trip.
final class TestIMPolicy: DeliveryPolicy {
    let accounts: any AccountStore
    let pushDisabled: Set<String>
    let decidedPages = Atomic<Int>(0)

    init(accounts: any AccountStore, pushDisabled: Set<String>) {
        self.accounts = accounts
        self.pushDisabled = pushDisabled
    }

    func decide(_ recipients: [Recipient], message: MessageRecord) async throws -> [DeliveryDecision] {
        decidedPages.add(1, ordering: .relaxed)
        var pushed: [String] = []
        for recipient in recipients {
            if let account = recipient.account, recipient.appState != .foreground, !pushDisabled.contains(account),
                !pushed.contains(account)
            {
                pushed.append(account)
            }
        }
        let badges = try await accounts.incrementBadges(appID: message.appID, accounts: pushed)
        guard case .string(let text)? = message.vendorContext?["text"] else {
            return recipients.map { _ in .skip(reason: "no_text") }
        }
        return recipients.map { recipient in
            guard let account = recipient.account else { return .skip(reason: "unbound") }
            if recipient.appState == .foreground { return .skip(reason: "foreground") }
            if pushDisabled.contains(account) { return .skip(reason: "push_disabled") }
            return .sendContent(PushContent(body: text, badge: badges[account] ?? 0))
        }
    }
}

/// A policy that counts each account's badge once per message with `grantBadges`, holding its
/// first decisions until two overlap so that the dispatcher's concurrent decisions show.
final class GrantingPolicy: DeliveryPolicy {
    let accounts: any AccountStore
    let deciding = Atomic<Int>(0)
    let mostAtOnce = Atomic<Int>(0)

    init(accounts: any AccountStore) {
        self.accounts = accounts
    }

    func decide(_ recipients: [Recipient], message: MessageRecord) async throws -> [DeliveryDecision] {
        let now = deciding.add(1, ordering: .relaxed).newValue
        defer { deciding.subtract(1, ordering: .relaxed) }
        mostAtOnce.max(now, ordering: .relaxed)
        let badges = try await accounts.grantBadges(
            appID: message.appID, messageID: message.id, accounts: recipients.compactMap(\.accountKey))
        // Until two decisions overlap (or 5 s, after which the test's `mostAtOnce` check fails).
        _ = await eventually(within: 5) { self.mostAtOnce.load(ordering: .relaxed) >= 2 }
        return recipients.map { recipient in
            let badge = recipient.account.flatMap { badges[$0] } ?? 0
            return .sendContent(PushContent(body: "hi", badge: badge))
        }
    }
}

/// A policy that decides batches of pages itself (`decide(pages:)`), recording how many pages
/// each call carried; a message whose text is "fail once" fails its first decision alone.
final class BatchingPolicy: DeliveryPolicy {
    let pagesPerCall = Mutex<[Int]>([])
    let failed = Mutex<Set<Int64>>([])

    func decide(_ recipients: [Recipient], message: MessageRecord) async throws -> [DeliveryDecision] {
        try await decide(pages: [PolicyPage(recipients: recipients, message: message)])[0].get()
    }

    func decide(pages: [PolicyPage]) async -> [Result<[DeliveryDecision], any Error>] {
        pagesPerCall.withLock { $0.append(pages.count) }
        // At work a while, as a store round trip is: the pages ready meanwhile queue for the next call.
        try? await Task.sleep(for: .milliseconds(20))
        return pages.map { page in
            guard case .string(let text)? = page.message.vendorContext?["text"] else {
                return .success(page.recipients.map { _ in .skip(reason: "no_text") })
            }
            if text == "fail once", failed.withLock({ $0.insert(page.message.id).inserted }) {
                return .failure(StoreError(.unavailable, "the first decision of this page fails"))
            }
            return .success(page.recipients.map { _ in .sendContent(PushContent(body: text)) })
        }
    }
}

@Suite(.serialized) struct DeliveryPolicyTests {
    static let retryFast = [
        "TUISONG_DELIVERY_RETRY_BASE_SECONDS": "0.05", "TUISONG_DELIVERY_RETRY_MAX_SECONDS": "0.2",
    ]

    func bind(_ gw: RunningGateway, _ appID: Int64, _ account: String, _ token: String, selector: String? = nil)
        async throws
    {
        _ = try await gw.runtime.store.bindDevice(
            appID: appID, account: account,
            registration: DeviceRegistration(token: DeviceToken(token)!, environment: .production, channel: .apns),
            credentialSelector: selector)
    }

    func job(_ appID: Int64, _ audience: Audience, text: String = "hi from the test") -> PushJob {
        PushJob(
            appID: appID, vendor: "testim", audience: audience, content: PushContent(body: "hello"),
            options: PushOptions(), vendorContext: ["text": .string(text)])
    }

    @Test func aPolicySkipsRendersPerDeviceBadgesAndARetryResendsTheDevicesOwnPayload() async throws {
        let gw = try await TestGateway.start(environment: Self.retryFast)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.im")
        let store = gw.runtime.store
        let alicePhone = token(1, prefix: "a1")
        let alicePad = token(2, prefix: "a1")
        let bobPhone = token(3, prefix: "b0")
        let carolPhone = token(4, prefix: "503")  // the mock answers 503 until healed
        let davePhone = token(5, prefix: "d0")
        try await bind(gw, appID, "alice", alicePhone)
        try await bind(gw, appID, "alice", alicePad)
        try await bind(gw, appID, "bob", bobPhone)
        try await bind(gw, appID, "carol", carolPhone)
        try await bind(gw, appID, "dave", davePhone)
        try await store.setAppState(appID: appID, account: "alice", .background)
        try await store.setAppState(appID: appID, account: "bob", .foreground)
        try await store.setAppState(appID: appID, account: "carol", .background)
        try await store.setBadge(appID: appID, account: "carol", to: 4)
        let policy = TestIMPolicy(accounts: store, pushDisabled: ["dave"])
        gw.runtime.engine.setPolicies(["testim": policy])
        let mock = try #require(gw.runtime.localMock)
        mock.setFaults(.init(tokenPrefixes: ["503": .init(status: 503, reason: "ServiceUnavailable")]))

        let record = try await gw.runtime.engine.submit(
            job(appID, .accounts(["alice", "bob", "carol", "dave"])))
        #expect(record.vendorContext == ["text": "hi from the test"])
        // Carol's first answer is a 503; then APNs heals and the retry goes through.
        try await waitUntil("carol's 503", within: .seconds(20)) {
            mock.receivedNotifications().contains { $0.deviceToken == carolPhone && $0.status == 503 }
        }
        mock.setFaults(.init())
        let status = try await gw.completed(messageID: record.id)

        #expect(status.counts.delivered == 3)
        #expect(status.counts.skipped == 2)
        #expect(status.counts.failed == 0)
        #expect(status.counts.held == 0)
        #expect(status.skips == ["foreground": 1, "push_disabled": 1])
        #expect(status.failures.isEmpty)
        #expect(policy.decidedPages.load(ordering: .relaxed) == 1, "one page, one decision round trip")

        let received = mock.receivedNotifications()
        func payloads(_ token: String) -> [String] {
            received.filter { $0.deviceToken == token }.map { String(decoding: $0.payload, as: UTF8.self) }
        }
        let aliceBytes = #"{"aps":{"alert":"hi from the test","badge":1}}"#
        let carolBytes = #"{"aps":{"alert":"hi from the test","badge":5}}"#
        #expect(payloads(alicePhone) == [aliceBytes])
        #expect(payloads(alicePad) == [aliceBytes], "one increment per account and message")
        #expect(payloads(carolPhone).count >= 2)
        #expect(payloads(carolPhone).allSatisfy { $0 == carolBytes }, "the retry resends carol's own payload")
        #expect(payloads(bobPhone).isEmpty)
        #expect(payloads(davePhone).isEmpty)
        #expect(try await store.badge(appID: appID, account: "carol") == 5)
        #expect(try await store.badge(appID: appID, account: "bob") == 0)

        // The retried row kept carol's content; skipped rows name their reason.
        let delivered = try await store.deliveries(messageID: record.id, state: .delivered, cursor: nil, limit: 10)
        #expect(delivered.items.map(\.token) == [carolPhone])
        #expect(delivered.items.first?.content.map { APNsPayload.render($0) } == Array(carolBytes.utf8))
        let skipped = try await store.deliveries(messageID: record.id, state: .skipped, cursor: nil, limit: 10)
        #expect(
            Set(skipped.items.map { "\($0.token):\($0.reason ?? "")" }) == [
                "\(bobPhone):foreground", "\(davePhone):push_disabled",
            ])

        // The native API shows the same counts and reasons.
        let view = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(record.id)", key: key).jsonObject
        #expect(view["vendor"] as? String == "testim")
        #expect((view["counts"] as? [String: Int])?["skipped"] == 2)
        #expect((view["counts"] as? [String: Int])?["delivered"] == 3)
        #expect(view["skips"] as? [String: Int] == ["foreground": 1, "push_disabled": 1])
        #expect((view["failures"] as? [String: Int])?.isEmpty == true)
    }

    @Test func messagesOfVendorsWithoutAPolicyKeepTheirOnePayload() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp()
        try await bind(gw, appID, "alice", token(1, prefix: "a1"))
        try await gw.runtime.store.setAppState(appID: appID, account: "alice", .foreground)
        gw.runtime.engine.setPolicies(["testim": TestIMPolicy(accounts: gw.runtime.store, pushDisabled: [])])
        var native = job(appID, .allAccounts)
        native.vendor = "native"
        let record = try await gw.runtime.engine.submit(native)
        let status = try await gw.completed(messageID: record.id)
        #expect(status.counts.delivered == 1)
        #expect(status.skips.isEmpty)
        let received = try #require(gw.runtime.localMock).receivedNotifications()
        #expect(received.map { String(decoding: $0.payload, as: UTF8.self) } == [#"{"aps":{"alert":"hello"}}"#])
    }

    @Test func fiftyMessagesDecidedAtOnceForOneAccountGetFiftyDistinctBadges() async throws {
        let gw = try await TestGateway.start()
        let (appID, _) = try await gw.createApp()
        let phone = token(1, prefix: "e1")
        try await bind(gw, appID, "erin", phone)
        gw.runtime.engine.setPolicies(["testim": TestIMPolicy(accounts: gw.runtime.store, pushDisabled: [])])
        let engine = gw.runtime.engine
        let records = try await withThrowingTaskGroup(of: MessageRecord.self) { group in
            for n in 1...50 {
                group.addTask { try await engine.submit(job(appID, .accounts(["erin"]), text: "m\(n)")) }
            }
            var records: [MessageRecord] = []
            for try await record in group { records.append(record) }
            return records
        }
        for record in records { #expect(try await gw.completed(messageID: record.id).counts.delivered == 1) }
        let badges = try #require(gw.runtime.localMock).receivedNotifications().compactMap { notification -> Int? in
            guard let payload = try? JSONValue(parsing: notification.payload),
                case .int(let badge)? = payload["aps"]?["badge"]
            else { return nil }
            return Int(badge)
        }
        #expect(badges.sorted() == Array(1...50))

        // Durable: the counter is 50 in the file after the gateway stops.
        let path = gw.runtime.config.database.path
        await gw.runtime.shutdown()
        let reopened = try SQLiteStore(path: path)
        #expect(try await reopened.badge(appID: appID, account: "erin") == 50)
        try reopened.close()
        try? FileManager.default.removeItem(at: gw.directory)
    }

    @Test func pagesOfManyMessagesAreDecidedTogetherAndAFailedPageIsRetriedAlone() async throws {
        let gw = try await TestGateway.start(environment: Self.retryFast)
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp()
        let texts = (1...40).map { $0 == 17 ? "fail once" : "m\($0)" }
        for n in texts.indices { try await bind(gw, appID, "user\(n)", token(n + 1, prefix: "f0")) }
        let policy = BatchingPolicy()
        gw.runtime.engine.setPolicies(["testim": policy])
        let engine = gw.runtime.engine
        let records = try await withThrowingTaskGroup(of: MessageRecord.self) { group in
            for (n, text) in texts.enumerated() {
                group.addTask { try await engine.submit(job(appID, .accounts(["user\(n)"]), text: text)) }
            }
            var records: [MessageRecord] = []
            for try await record in group { records.append(record) }
            return records
        }
        for record in records { #expect(try await gw.completed(messageID: record.id).counts.delivered == 1) }
        // Each device got its own message's text: a batch's answers went to their own pages.
        let received = try #require(gw.runtime.localMock).receivedNotifications()
        #expect(received.count == texts.count)
        for notification in received {
            let n = Int(notification.deviceToken.suffix(8), radix: 16)! - 1
            let alert = try JSONValue(parsing: notification.payload)["aps"]?["alert"]?.stringValue
            #expect(alert == texts[n], "device \(n)")
        }
        let calls = policy.pagesPerCall.withLock { $0 }
        #expect(calls.reduce(0, +) == texts.count + 1, "every page once, the failed one twice: \(calls)")
        #expect(calls.count < texts.count && (calls.max() ?? 0) > 1, "pages went together: \(calls)")
    }

    @Test func pagesDecidedAtOnceCountEachAccountOncePerMessageAndTheGrantsAreForgotten() async throws {
        // Pages of ten devices; each of seven accounts has ten devices, one every seven, so
        // every account is on every page.
        let gw = try await TestGateway.start(environment: ["TUISONG_DELIVERY_PAGE_SIZE": "10"])
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp()
        let names = ["alice", "bob", "carol", "dave", "erin", "frank", "grace"]
        let owners = (0..<70).map { names[$0 % names.count] }
        for (n, owner) in owners.enumerated() { try await bind(gw, appID, owner, token(n + 1, prefix: "c0")) }
        let store = gw.runtime.store
        try await store.setBadge(appID: appID, account: "bob", to: 9)
        let policy = GrantingPolicy(accounts: store)
        gw.runtime.engine.setPolicies(["testim": policy])
        let mock = try #require(gw.runtime.localMock)

        for round in 1...2 {
            let record = try await gw.runtime.engine.submit(job(appID, .allAccounts))
            #expect(try await gw.completed(messageID: record.id).counts.delivered == owners.count)
            let received = mock.receivedNotifications().suffix(owners.count)
            var badges: [String: Set<Int>] = [:]
            for notification in received {
                let n = Int(notification.deviceToken.suffix(8), radix: 16)!
                let badge = try JSONValue(parsing: notification.payload)["aps"]?["badge"]?.intValue ?? -1
                badges[owners[n - 1], default: []].insert(Int(badge))
            }
            var expected = Dictionary(uniqueKeysWithValues: names.map { ($0, Set([round])) })
            expected["bob"] = [9 + round]
            #expect(
                badges == expected, "every device of an account carries the one value its account got for the message")
        }
        #expect(try await store.badge(appID: appID, account: "alice") == 2, "one increment per message")
        #expect(policy.mostAtOnce.load(ordering: .relaxed) >= 2, "pages were decided concurrently")

        // Each finished message's grants are deleted in the background.
        let grantsLeft = {
            try await store.sharedDatabase.read {
                try $0.queryOne("SELECT COUNT(*) AS n FROM badge_grants")?["n"].int ?? -1
            }
        }
        if !(try await eventually { try await grantsLeft() == 0 }) {
            Issue.record("\(try await grantsLeft()) grants left")
        }
    }

    @Test func theConsoleShowsSkipsByReason() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let (appID, _) = try await gw.createApp()
        try await bind(gw, appID, "bob", token(1, prefix: "b0"))
        try await bind(gw, appID, "dave", token(2, prefix: "d0"))
        try await gw.runtime.store.setAppState(appID: appID, account: "bob", .foreground)
        gw.runtime.engine.setPolicies(["testim": TestIMPolicy(accounts: gw.runtime.store, pushDisabled: ["dave"])])
        let record = try await gw.runtime.engine.submit(job(appID, .allAccounts))
        _ = try await gw.completed(messageID: record.id)

        let message = try await client.call("GET", "/messages/\(record.id)")
        #expect(message.jsonObject["skips"] as? [String: Int] == ["foreground": 1, "push_disabled": 1])
        let monitor = try await client.call("GET", "/monitor")
        #expect(monitor.jsonObject["skips"] as? [String: Int] == ["foreground": 1, "push_disabled": 1])
    }
}
