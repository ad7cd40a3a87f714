import Foundation
import Testing
import TuisongCore

@testable import TuisongSQLStore
@testable import TuisongStore

/// v16 / pg10: delivery receipts, recorded once per (message, token) and counted per channel.
@Suite struct ReceiptStoreTests {
    static let huaweiToken = "IQAAAACy0kYkAAAXxFmq1nQ5dnXzWk9u3Ga8aPmYtGl3fVYJKFqk"

    static func message(_ store: any GatewayStore, _ appID: Int64) async throws -> MessageRecord {
        try await store.createMessage(
            PushJob(
                appID: appID, vendor: "native", audience: .tokens([huaweiToken]), content: PushContent(),
                options: PushOptions()),
            state: .queued)
    }

    static func receipt(
        _ messageID: Int64, _ outcome: ReceiptOutcome, token: String = huaweiToken, channel: PushChannel = .huawei
    ) -> DeliveryReceipt {
        DeliveryReceipt(
            messageID: messageID, token: token, channel: channel, outcome: outcome,
            at: Date(timeIntervalSince1970: 1_750_000_000))
    }

    @Test(arguments: Backend.allCases)
    func aRepeatedReceiptCountsOnceAndAClickRecordsTheArrival(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let message = try await Self.message(store, app.id)
            // The message was never sent: a receipt that comes before the send's flush is kept.
            let first = try await store.recordReceipts(appID: app.id, [Self.receipt(message.id, .arrived)])
            #expect(first.recorded.map(\.outcome) == [.arrived])
            let again = try await store.recordReceipts(
                appID: app.id, [Self.receipt(message.id, .arrived), Self.receipt(message.id, .arrived)])
            #expect(again.recorded.isEmpty)
            #expect(again.repeated == 2)
            // A click on another phone whose arrival receipt never came counts both.
            let other = "IQAAAACy0kYkAAAXxFmq1nQ5dnXzWk9u3Ga8aPmYtGl3fVYJKFqz"
            let click = try await store.recordReceipts(
                appID: app.id, [Self.receipt(message.id, .clicked, token: other)])
            #expect(click.recorded.map(\.outcome) == [.arrived, .clicked])
            _ = try await store.recordReceipts(appID: app.id, [Self.receipt(message.id, .clicked, token: other)])
            let counts = try await store.receiptCounts(messageID: message.id)
            #expect(counts == [.huawei: ReceiptCounts(arrived: 2, clicked: 1)])
            let states = try await store.receiptStates(
                messageID: message.id, tokens: [Self.huaweiToken, other, "none"])
            #expect(states.count == 2)
            #expect(states[other]?.clickedAt == Date(timeIntervalSince1970: 1_750_000_000))
            #expect(states[Self.huaweiToken]?.clickedAt == nil)
        }
    }

    @Test(arguments: Backend.allCases)
    func anotherAppsMessageIsUnknownAndNothingIsKept(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "one")
            let other = try await makeApp(store, "two")
            let message = try await Self.message(store, other.id)
            let result = try await store.recordReceipts(
                appID: app.id, [Self.receipt(message.id, .arrived), Self.receipt(message.id + 1000, .arrived)])
            #expect(result.unknown == 2)
            #expect(result.recorded.isEmpty)
            #expect(try await store.receiptCounts(messageID: message.id).isEmpty)
        }
    }

    @Test(arguments: Backend.allCases)
    func reasonsAreCountedOnceAndAGoneTokenInvalidatesItsDevice(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let huawei = try #require(DeviceToken(Self.huaweiToken, channel: .huawei))
            let (device, _) = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: huawei, environment: .production, channel: .huawei))
            let message = try await Self.message(store, app.id)
            // Registered before the receipt's moment? The test's device registered now, after
            // the receipt's timestamp: it is left alone, as after an APNs 410 with an older timestamp.
            var gone = Self.receipt(message.id, .notShown(reason: "uninstalled", invalidatesDevice: true))
            let early = try await store.recordReceipts(appID: app.id, [gone])
            #expect(early.invalidatedDevices == 0)
            let message2 = try await Self.message(store, app.id)
            gone.messageID = message2.id
            gone.at = Date().addingTimeInterval(60)
            let late = try await store.recordReceipts(appID: app.id, [gone, gone])
            #expect(late.invalidatedDevices == 1)
            #expect(late.repeated == 1)
            let stored = try #require(try await store.device(appID: app.id, token: huawei))
            #expect(stored.id == device.id)
            #expect(stored.invalidatedAt != nil)
            #expect(stored.invalidReason == "receipt:uninstalled")
            // A reason after the arrival is not counted; a later arrival is.
            let message3 = try await Self.message(store, app.id)
            _ = try await store.recordReceipts(
                appID: app.id,
                [
                    Self.receipt(message3.id, .notShown(reason: "notifications_disabled", invalidatesDevice: false)),
                    Self.receipt(message3.id, .notShown(reason: "replaced", invalidatesDevice: false)),
                    Self.receipt(message3.id, .arrived),
                ])
            #expect(
                try await store.receiptCounts(messageID: message3.id)
                    == [.huawei: ReceiptCounts(arrived: 1, reasons: ["notifications_disabled": 1])])
        }
    }

    /// A POST's receipts are written a column at a time in multi-row statements (chunks of 256
    /// rows and less): 1,300 phones and a click per phone of a second message count once each,
    /// in the order given, a repeat inside the POST included, and posting it all again adds nothing.
    @Test(arguments: Backend.allCases)
    func aLargePostCountsEachReceiptOnceInItsOrder(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let message = try await Self.message(store, app.id)
            let other = try await Self.message(store, app.id)
            var receipts = (0..<1000).map { Self.receipt(message.id, .arrived, token: "phone-\($0)") }
            receipts += (0..<300).map { Self.receipt(other.id, .clicked, token: "phone-\($0)") }
            receipts.append(Self.receipt(message.id, .arrived, token: "phone-7"))
            receipts.append(Self.receipt(message.id + 10_000, .arrived))
            let first = try await store.recordReceipts(appID: app.id, receipts)
            #expect(first.recorded.count == 1600)
            #expect(first.repeated == 1)
            #expect(first.unknown == 1)
            #expect(Array(first.recorded.prefix(1000)) == Array(receipts.prefix(1000)))
            // Each click after the arrival it implies.
            let clicks = first.recorded.dropFirst(1000)
            #expect(
                clicks.map(\.outcome)
                    == Array(repeating: [ReceiptOutcome.arrived, .clicked], count: 300).flatMap { $0 })
            #expect(clicks.map(\.token) == (0..<300).flatMap { ["phone-\($0)", "phone-\($0)"] })
            #expect(try await store.receiptCounts(messageID: message.id) == [.huawei: ReceiptCounts(arrived: 1000)])
            #expect(
                try await store.receiptCounts(messageID: other.id) == [
                    .huawei: ReceiptCounts(arrived: 300, clicked: 300)
                ])

            let again = try await store.recordReceipts(appID: app.id, receipts)
            #expect(again.recorded.isEmpty)
            #expect(again.repeated == 1301, "1,001 arrivals and 300 clicks; an implied arrival is no repeat")
            #expect(try await store.receiptCounts(messageID: message.id) == [.huawei: ReceiptCounts(arrived: 1000)])
        }
    }

    /// Written a column at a time, a POST still gives what writing its receipts one by one gives:
    /// a reason after its delivery's arrival is a repeat, one before it counts; a click records
    /// the arrival, so a later arrival is a repeat; a delivery keeps its first reason.
    @Test(arguments: Backend.allCases)
    func withinOnePostEachReceiptSeesTheOnesBeforeIt(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let message = try await Self.message(store, app.id)
            let replaced = ReceiptOutcome.notShown(reason: "replaced", invalidatesDevice: false)
            let disabled = ReceiptOutcome.notShown(reason: "notifications_disabled", invalidatesDevice: false)
            let result = try await store.recordReceipts(
                appID: app.id,
                [
                    Self.receipt(message.id, .arrived, token: "a"), Self.receipt(message.id, replaced, token: "a"),
                    Self.receipt(message.id, .clicked, token: "b"), Self.receipt(message.id, .arrived, token: "b"),
                    Self.receipt(message.id, disabled, token: "c"), Self.receipt(message.id, replaced, token: "c"),
                    Self.receipt(message.id, disabled, token: "d"), Self.receipt(message.id, .arrived, token: "d"),
                ])
            #expect(result.recorded.map(\.token) == ["a", "b", "b", "c", "d", "d"])
            #expect(
                result.recorded.map(\.outcome.name) == [
                    "arrived", "arrived", "clicked", "notifications_disabled",
                    "notifications_disabled", "arrived",
                ])
            #expect(result.repeated == 3)
            #expect(
                try await store.receiptCounts(messageID: message.id)
                    == [.huawei: ReceiptCounts(arrived: 3, clicked: 1, reasons: ["notifications_disabled": 2])])
            let states = try await store.receiptStates(messageID: message.id, tokens: ["a", "c", "d"])
            #expect(states["a"]?.reason == nil)
            #expect(states["c"]?.reason == "notifications_disabled")
            #expect(states["d"]?.reason == "notifications_disabled")
            #expect(states["d"]?.arrivedAt != nil)
        }
    }

    /// A POST whose deliveries are each named once and new is written without reading rows back
    /// (under a savepoint): its statuses in no particular order, arrivals, clicks and reasons
    /// mixed, all count in the order given. A later POST mixing new deliveries with ones
    /// already counted is written again the exact way: only the new ones count, once.
    @Test(arguments: Backend.allCases)
    func aPostOfNewDeliveriesCountsEachAndAMixedPostOnlyTheNewOnes(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let message = try await Self.message(store, app.id)
            let replaced = ReceiptOutcome.notShown(reason: "replaced", invalidatesDevice: false)
            let tokens = (0..<600).map { "phone-\(($0 * 7919) % 600)" }
            let receipts = tokens.enumerated().map { index, token in
                Self.receipt(message.id, index % 3 == 0 ? .arrived : index % 3 == 1 ? .clicked : replaced, token: token)
            }
            let first = try await store.recordReceipts(appID: app.id, receipts)
            #expect(first.repeated == 0)
            #expect(first.recorded.count == 800)
            #expect(
                first.recorded.map(\.token)
                    == tokens.enumerated().flatMap { index, token in index % 3 == 1 ? [token, token] : [token] })
            #expect(
                try await store.receiptCounts(messageID: message.id) == [
                    .huawei: ReceiptCounts(arrived: 400, clicked: 200, reasons: ["replaced": 200])
                ])

            // New phones beside a repeat, a click on a phone that arrived, an arrival after a reason.
            let mixed = [
                Self.receipt(message.id, .arrived, token: "phone-new-1"),
                Self.receipt(message.id, .arrived, token: tokens[0]),
                Self.receipt(message.id, .clicked, token: tokens[3]),
                Self.receipt(message.id, .arrived, token: tokens[2]),
                Self.receipt(message.id, replaced, token: "phone-new-2"),
            ]
            let second = try await store.recordReceipts(appID: app.id, mixed)
            #expect(second.recorded.map(\.token) == ["phone-new-1", tokens[3], tokens[2], "phone-new-2"])
            #expect(second.recorded.map(\.outcome.name) == ["arrived", "clicked", "arrived", "replaced"])
            #expect(second.repeated == 1)
            #expect(
                try await store.receiptCounts(messageID: message.id) == [
                    .huawei: ReceiptCounts(arrived: 402, clicked: 201, reasons: ["replaced": 201])
                ])
            let states = try await store.receiptStates(messageID: message.id, tokens: [tokens[2], "phone-new-2"])
            #expect(states[tokens[2]]?.reason == "replaced")
            #expect(states[tokens[2]]?.arrivedAt != nil)
            #expect(states["phone-new-2"]?.arrivedAt == nil)
        }
    }

    /// Two POSTs at once with opposite outcomes for the same deliveries (one's arrivals are the
    /// other's reasons): each POST writes two columns, and on PostgreSQL they would lock the
    /// same rows in opposite orders (40P01) unless each takes its rows in key order first.
    /// Both are recorded: every delivery arrives once, and a reason counts only where it came
    /// before the arrival.
    @Test(arguments: Backend.allCases)
    func concurrentPostsWithOppositeOutcomesBothRecord(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let replaced = ReceiptOutcome.notShown(reason: "replaced", invalidatesDevice: false)
            for _ in 0..<4 {
                let message = try await Self.message(store, app.id)
                let tokens = (0..<1200).map { "phone-\($0)" }
                func post(arrivedWhenEven: Bool) -> [DeliveryReceipt] {
                    tokens.enumerated().map { index, token in
                        Self.receipt(
                            message.id, (index % 2 == 0) == arrivedWhenEven ? .arrived : replaced, token: token)
                    }
                }
                async let one = store.recordReceipts(appID: app.id, post(arrivedWhenEven: true))
                async let other = store.recordReceipts(appID: app.id, post(arrivedWhenEven: false))
                let (a, b) = try await (one, other)
                let recorded = a.recorded.count + b.recorded.count
                #expect(recorded + a.repeated + b.repeated == 2 * tokens.count)
                let reasons = recorded - tokens.count
                #expect(
                    try await store.receiptCounts(messageID: message.id) == [
                        .huawei: ReceiptCounts(
                            arrived: tokens.count, reasons: reasons > 0 ? ["replaced": reasons] : [:])
                    ])
            }
        }
    }

    /// Several POSTs in one transaction (the gateway's receipt queue on SQLite): each answered as
    /// if it had been written alone, in order, a later POST seeing the earlier ones' rows.
    @Test(arguments: Backend.allCases)
    func severalPostsInOneTransactionEachCountAsAlone(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let other = try await makeApp(store, "other")
            let message = try await Self.message(store, app.id)
            let othersMessage = try await Self.message(store, other.id)
            let tokens = (0..<400).map { "phone-\($0)" }
            let results = try await store.recordReceipts(posts: [
                ReceiptPostReceipts(
                    appID: app.id, receipts: tokens[0..<300].map { Self.receipt(message.id, .arrived, token: $0) }),
                // Half of it repeats the first POST's; its click counts with its arrival.
                ReceiptPostReceipts(
                    appID: app.id,
                    receipts: tokens[250..<350].map { Self.receipt(message.id, .arrived, token: $0) } + [
                        Self.receipt(message.id, .clicked, token: tokens[399])
                    ]),
                ReceiptPostReceipts(appID: app.id, receipts: []),
                // Another app's message, named in this app's POST.
                ReceiptPostReceipts(appID: app.id, receipts: [Self.receipt(othersMessage.id, .arrived)]),
                ReceiptPostReceipts(appID: other.id, receipts: [Self.receipt(othersMessage.id, .arrived)]),
            ])
            let recordings = try results.map { try $0.get() }
            #expect(recordings.map(\.recorded.count) == [300, 52, 0, 0, 1])
            #expect(recordings.map(\.repeated) == [0, 50, 0, 0, 0])
            #expect(recordings.map(\.unknown) == [0, 0, 0, 1, 0])
            #expect(recordings[1].recorded.suffix(2).map(\.outcome) == [.arrived, .clicked])
            #expect(
                try await store.receiptCounts(messageID: message.id) == [
                    .huawei: ReceiptCounts(arrived: 351, clicked: 1)
                ])
            #expect(try await store.receiptCounts(messageID: othersMessage.id) == [.huawei: ReceiptCounts(arrived: 1)])
        }
    }

    /// v18 / pg12: a request of many tokens that asked for receipts by one param is kept with
    /// its tokens' digests until its app (or message) goes.
    @Test(arguments: Backend.allCases)
    func aReceiptSendKeepsItsMessageAndTokenDigests(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let message = try await Self.message(store, app.id)
            let send = ReceiptSend(
                appID: app.id, messageID: message.id, channel: .xiaomi,
                tokenDigests: ["0011223344556677", "8899aabbccddeeff"])
            let id = try await store.recordReceiptSend(send)
            let second = try await store.recordReceiptSend(send)
            #expect(second != id)
            #expect(try await store.receiptSend(id: id) == send)
            #expect(try await store.receiptSend(id: id + 1000) == nil)
            #expect(try await store.deleteApp(id: app.id))
            #expect(try await store.receiptSend(id: id) == nil)
        }
    }
}

/// v23 / pg17: the receipt inbox, one row a POST until the digest records it and deletes the row
/// in the same transaction.
@Suite struct ReceiptInboxStoreTests {
    @Test(arguments: Backend.allCases)
    func aKeptPostIsRecordedOnceAndItsRowGoesWithIt(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let message = try await ReceiptStoreTests.message(store, app.id)
            let at = Date(timeIntervalSince1970: 1_750_000_000.123)
            try await store.enqueueReceiptPosts([
                ReceiptInboxPost(channel: .huawei, appID: app.id, receivedAt: at, statuses: 1, body: Array("one".utf8)),
                ReceiptInboxPost(channel: .harmony, appID: app.id, receivedAt: at, statuses: 2, body: [0, 1, 255]),
            ])
            #expect(try await store.waitingReceiptStatuses(appID: app.id) == 3)
            #expect(try await store.waitingReceiptStatuses(appID: app.id + 1) == 0)
            #expect(try await store.waitingReceiptStatuses(appID: nil) == 3)
            let waiting = try await store.receiptInbox(limit: 10)
            #expect(waiting.map(\.channel) == [.huawei, .harmony])
            #expect(waiting.map(\.body) == [Array("one".utf8), [0, 1, 255]])
            #expect(waiting.allSatisfy { $0.appID == app.id && $0.receivedAt == at })
            #expect(try await store.receiptInbox(limit: 1).map(\.id) == [waiting[0].id])

            let digested = DigestedReceiptPost(
                inboxID: waiting[0].id, appID: app.id, receipts: [ReceiptStoreTests.receipt(message.id, .arrived)])
            let first = try await store.digestReceiptPosts([digested])
            #expect(try first.first??.get().recorded.count == 1)
            // Read twice (another node's digest, a pass before a crash's restart): the row is gone,
            // nothing is recorded again.
            let again = try await store.digestReceiptPosts([digested])
            #expect(again.count == 1 && again.compactMap { $0 }.isEmpty)
            #expect(try await store.receiptCounts(messageID: message.id) == [.huawei: ReceiptCounts(arrived: 1)])
            #expect(try await store.receiptInbox(limit: 10).map(\.id) == [waiting[1].id])
            #expect(try await store.waitingReceiptStatuses(appID: nil) == 2)
        }
    }
}
