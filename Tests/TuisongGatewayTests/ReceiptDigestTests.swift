import Foundation
import Logging
import Synchronization
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit
import TuisongStore
import TuisongTransportKit

@testable import TuisongGateway

/// The receipt digest (issue #42): what it records is what the POST said, and it yields to
/// sending. Its passes are driven here one by one, on a real SQLite file; no timing.
@Suite struct ReceiptDigestTests {
    @Test func thePacingWaitsWhileSendingUntilTheOldestIsDue() {
        let pacing = ReceiptDigestPacing(maxLag: .seconds(10), recheck: .milliseconds(100))
        // Nothing sending: at once, however fresh.
        #expect(pacing.next(sending: false, oldestWaiting: .zero) == .digest)
        // Sending: the receipts wait, looked at again soon.
        #expect(pacing.next(sending: true, oldestWaiting: .seconds(1)) == .wait(.milliseconds(100)))
        // ... no later than when the oldest falls due.
        #expect(pacing.next(sending: true, oldestWaiting: .milliseconds(9950)) == .wait(.milliseconds(50)))
        // Due: digested although pushes are sending (the lag is bounded).
        #expect(pacing.next(sending: true, oldestWaiting: .seconds(10)) == .digest)
        #expect(pacing.next(sending: true, oldestWaiting: .seconds(60)) == .digest)
        // No lag allowed: never waits.
        #expect(ReceiptDigestPacing(maxLag: .zero).next(sending: true, oldestWaiting: .zero) == .digest)
    }

    /// A burst of POSTs: the digest waits until one `quiet` passes without a POST kept, so a
    /// POST's write does not queue behind a digest transaction at SQLite's one writer; never
    /// past the oldest's due time.
    @Test func thePacingWaitsWhilePostsKeepComingUntilQuietOrDue() {
        let pacing = ReceiptDigestPacing(maxLag: .seconds(10), recheck: .milliseconds(100), quiet: .milliseconds(100))
        // The last POST 30 ms ago: wait the 70 ms left of the quiet.
        #expect(
            pacing.next(sending: false, sinceLastPost: .milliseconds(30), oldestWaiting: .seconds(1))
                == .wait(.milliseconds(70)))
        // Quiet, or no POST since start: at once.
        #expect(pacing.next(sending: false, sinceLastPost: .milliseconds(100), oldestWaiting: .seconds(1)) == .digest)
        #expect(pacing.next(sending: false, sinceLastPost: nil, oldestWaiting: .seconds(1)) == .digest)
        // POSTs coming for as long as the lag: the oldest is due, digested.
        #expect(pacing.next(sending: false, sinceLastPost: .zero, oldestWaiting: .seconds(10)) == .digest)
        #expect(
            pacing.next(sending: false, sinceLastPost: .zero, oldestWaiting: .milliseconds(9990))
                == .wait(.milliseconds(10)))
        // Sending as well: sending's recheck, however quiet the intake.
        #expect(
            pacing.next(sending: true, sinceLastPost: .seconds(5), oldestWaiting: .seconds(1))
                == .wait(.milliseconds(100)))
        #expect(
            ReceiptDigestPacing(maxLag: .zero).next(sending: false, sinceLastPost: .zero, oldestWaiting: .zero)
                == .digest)
    }

    /// The inbox's rows carry their bodies: a pass reads about what one transaction records.
    @Test func aPassReadsAboutOneTransactionsWorthOfPosts() {
        #expect(ReceiptDigest.readCount(statusesPerPost: nil) == ReceiptDigest.readLimit)
        #expect(ReceiptDigest.readCount(statusesPerPost: 1000) == 1)  // Huawei's POSTs
        #expect(ReceiptDigest.readCount(statusesPerPost: 100) == 10)  // HarmonyOS's
        #expect(ReceiptDigest.readCount(statusesPerPost: 5000) == 1)
        #expect(ReceiptDigest.readCount(statusesPerPost: 3) == ReceiptDigest.readLimit)
        #expect(ReceiptDigest.readCount(statusesPerPost: 0) == ReceiptDigest.readLimit)
    }

    @Test func theParseThreadRunsAtALowerPriorityThanTheCaller() async {
        let thread = LowPriorityThread(name: "test-low-priority", nice: 10)
        defer { thread.stop() }
        let callers = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        #expect(await thread.niceValue() == 10)
        #expect(await thread.run { 6 * 7 } == 42)
        // Only its own thread: the caller's (a cooperative thread, which sends) is as it was.
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == callers)
    }

    @Test func theDigestYieldsToSendingAndThenRecordsThePostOnce() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-digest-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appending(path: "tuisong.db").path)
        defer { try? store.close() }
        let app = try await store.createApp(name: "digest", bundleID: "com.example.digest", apiKeyHash: "h")
        let message = try await store.createMessage(
            PushJob(
                appID: app.id, vendor: "native",
                audience: .tokens(["IQAAAACy0kYkAAAXxFmq1nQ5dnXzWk9u3Ga8aPmYtGl3fVYJ"]),
                content: PushContent(), options: PushOptions()),
            state: .queued)
        let keys = ReceiptKeys(root: Array(repeating: 7, count: 32))
        let tag = keys.tag(appID: app.id, messageID: message.id)
        let body = Array(
            """
            {"statuses":[{"biTag":"\(tag)","appid":"1","token":"phone-1","status":0,"timestamp":1750000000000,"requestId":"r"},
            {"biTag":"\(tag)","appid":"1","token":"phone-2","status":6,"timestamp":1750000000000,"requestId":"r"},
            {"biTag":"not-ours","appid":"1","token":"phone-3","status":0,"timestamp":1750000000000,"requestId":"r"}]}
            """.utf8)
        let clock = ManualClock()
        let sending = Atomic<Bool>(true)
        let metrics = GatewayMetrics()
        let digest = ReceiptDigest(
            store: store, registry: .standard, keys: keys, metrics: metrics, clock: clock,
            logger: Logger(label: "test"),
            pacing: ReceiptDigestPacing(maxLag: .seconds(10), recheck: .milliseconds(100)),
            sending: { sending.load(ordering: .relaxed) })
        defer { Task { await digest.stop() } }
        let post = ReceiptInboxPost(channel: .huawei, appID: app.id, receivedAt: clock.now, statuses: 3, body: body)
        try await store.enqueueReceiptPosts([post, post])

        // A push is sending and the POSTs are fresh: the pass records nothing and says when to look again.
        #expect(try await digest.pass() == .milliseconds(100))
        #expect(try await store.waitingReceiptStatuses(appID: app.id) == 6)
        #expect(try await store.receiptCounts(messageID: message.id).isEmpty)

        // Sending ended: the next pass records the POSTs (the second's receipts are repeats).
        sending.store(false, ordering: .relaxed)
        #expect(try await digest.pass() == nil)
        #expect(try await store.waitingReceiptStatuses(appID: nil) == 0)
        #expect(
            try await store.receiptCounts(messageID: message.id)
                == [.huawei: ReceiptCounts(arrived: 1, reasons: ["notifications_disabled": 1])])
        let exposition = await metrics.exposition()
        #expect(exposition.contains(#"tuisong_receipts_total{channel="huawei",outcome="arrived"} 1"#))
        #expect(exposition.contains(#"tuisong_receipts_total{channel="huawei",outcome="repeated"} 2"#))
        #expect(exposition.contains(#"tuisong_receipts_total{channel="huawei",outcome="unknown"} 2"#))

        // Sending again, and a POST as old as the lag allows: digested all the same.
        sending.store(true, ordering: .relaxed)
        try await store.enqueueReceiptPosts([post])
        clock.advance(by: 10)
        #expect(try await digest.pass() == nil)
        #expect(try await store.waitingReceiptStatuses(appID: nil) == 0)
        // The inbox empty: the next look is a poll away.
        #expect(try await digest.pass() == ReceiptDigest.poll)

        // POSTs of 1,000 statuses (Huawei's): one a transaction, each pass reading about one, and
        // every one recorded in turn.
        sending.store(false, ordering: .relaxed)
        let large = ReceiptInboxPost(
            channel: .huawei, appID: app.id, receivedAt: clock.now, statuses: 1000, body: body)
        try await store.enqueueReceiptPosts([large, large, large])
        for waiting in [2000, 1000, 0] {
            #expect(try await digest.pass() == nil)
            #expect(try await store.waitingReceiptStatuses(appID: nil) == waiting)
        }

        // Nothing sending, but POSTs coming in (this node kept one just now): the pass waits out
        // the quiet, then records.
        try await store.enqueueReceiptPosts([
            ReceiptInboxPost(
                channel: .huawei, appID: app.id, receivedAt: clock.now, statuses: 3, body: body)
        ])
        digest.kept()
        #expect(try await digest.pass() == .milliseconds(100))
        #expect(try await store.waitingReceiptStatuses(appID: nil) == 3)
        clock.advance(by: 0.04)
        digest.kept()
        #expect(try await digest.pass() == .milliseconds(100), "another POST: the quiet begins again")
        clock.advance(by: 0.2)
        #expect(try await digest.pass() == nil)
        #expect(try await store.waitingReceiptStatuses(appID: nil) == 0)
    }

    /// A POST kept while the digest waits on the pacing does not wake it: a POST only makes the
    /// pacing wait longer, and the wait's own end looks again (a burst of HarmonyOS's POSTs of
    /// 100 otherwise cost a pass, a timer task and a task switch each). A POST kept while the
    /// digest is idle (the inbox empty, a poll away) wakes it.
    @Test func aPostKeptWhileThePacingWaitsDoesNotWakeTheDigest() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-digest-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appending(path: "tuisong.db").path)
        defer { try? store.close() }
        let app = try await store.createApp(name: "digest", bundleID: "com.example.digest", apiKeyHash: "h")
        let body = Array(#"{"statuses":[{"biTag":"x","token":"phone-1","status":0}]}"#.utf8)
        let clock = ManualClock()
        let digest = ReceiptDigest(
            store: store, registry: .standard, keys: ReceiptKeys(root: Array(repeating: 7, count: 32)),
            metrics: GatewayMetrics(), clock: clock, logger: Logger(label: "test"),
            pacing: ReceiptDigestPacing(maxLag: .seconds(10), recheck: .milliseconds(100), quiet: .milliseconds(100)),
            sending: { false })
        defer { Task { await digest.stop() } }

        // The inbox empty: the digest is idle, and a POST kept wakes it.
        #expect(try await digest.pass() == ReceiptDigest.poll)
        try await store.enqueueReceiptPosts([
            ReceiptInboxPost(channel: .huawei, appID: app.id, receivedAt: clock.now, statuses: 1, body: body)
        ])
        digest.kept()
        #expect(digest.wakeIsPending)

        // The POSTs keep coming: the pass waits out the quiet, and the POSTs kept meanwhile leave it waiting.
        #expect(try await digest.pass() == .milliseconds(100))
        #expect(!digest.wakeIsPending, "the pass was the look the wake asked for")
        clock.advance(by: 0.05)
        digest.kept()
        #expect(!digest.wakeIsPending)
        #expect(try await digest.pass() == .milliseconds(100), "the quiet began again at the POST kept")
        #expect(try await store.waitingReceiptStatuses(appID: nil) == 1)
        clock.advance(by: 0.1)
        #expect(try await digest.pass() == nil)
        #expect(try await store.waitingReceiptStatuses(appID: nil) == 0)
    }
}
