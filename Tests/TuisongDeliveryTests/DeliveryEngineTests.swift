import Foundation
import Logging
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongStore

@testable import TuisongDelivery

func token(_ n: Int, prefix: String) -> String { testToken(n, prefix: prefix) }

@Suite(.serialized) struct DeliveryEngineTests {
    @Test(arguments: PluginStoreBackend.allCases) func tagFanOutDeliversEveryDeviceOnce(_ backend: PluginStoreBackend)
        async throws
    {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(1050)
        let sender = ScriptedTransport()
        let engine = f.engine(sender)
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("all-users")))
        #expect(record.state == .queued)
        let status = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        #expect(status.counts.delivered == 1050)
        #expect(status.counts.failed == 0)
        #expect(status.record.total == 1050)
        #expect(sender.totalAttempts == 1050)
        #expect(sender.attempts.withLock { $0.values.allSatisfy { $0 == 1 } })
        // Delivered-first-time entries leave no rows.
        let rows = try await f.store.deliveries(messageID: record.id, state: nil, cursor: nil, limit: 10)
        #expect(rows.items.isEmpty)
    }

    @Test(arguments: PluginStoreBackend.allCases) func retriesInvalidationsHoldsAndFailuresAreRecorded(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(40)
        let sender = ScriptedTransport { token, attempt in
            let n = Int(token.suffix(4), radix: 16)!
            switch n % 5 {
            case 1:
                return attempt < 3 ? .retry(.service("TooManyRequests"), after: nil) : .delivered(serviceMessageID: "a")
            case 2:
                return .invalidate(
                    .service("Unregistered"), since: Date(timeIntervalSince1970: 0).addingTimeInterval(4_000_000_000))
            case 3: return .failed(.service("PayloadTooLarge"))
            default: return .delivered(serviceMessageID: nil)
            }
        }
        let engine = f.engine(sender)
        try await engine.start()
        let record = try await engine.submit(f.job(.all))
        let status = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        #expect(status.counts.delivered == 24)  // n%5 in {0,4} (16) + retried (8)
        #expect(status.counts.failed == 16)
        #expect(status.failures == ["Unregistered": 8, "PayloadTooLarge": 8])
        let retried = try await f.store.deliveries(messageID: record.id, state: .delivered, cursor: nil, limit: 100)
        #expect(retried.items.count == 8)
        #expect(retried.items.allSatisfy { $0.attempts == 3 })
        let invalidated = try await f.store.device(appID: f.appID, token: DeviceToken(token(2, prefix: "cd"))!)
        #expect(invalidated?.invalidatedAt != nil)
        #expect(invalidated?.invalidReason == "Unregistered")
    }

    @Test(arguments: PluginStoreBackend.allCases) func pagesAreSentInBatchesOfOneEnvironmentAndAnsweredByIndex(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(300)
        var sandbox: [DeviceRegistration] = []
        for n in 1...200 {
            sandbox.append(
                DeviceRegistration(
                    token: DeviceToken(token(n, prefix: "5a"))!, environment: .sandbox, tags: [TagName("all-users")!],
                    channel: .apns))
        }
        _ = try await f.store.registerDevices(appID: f.appID, sandbox)
        let sender = ScriptedTransport(answering: .laterInTwoParts) { token, _ in
            token.hasPrefix("5a") && Int(token.suffix(4), radix: 16)! % 4 == 0
                ? .invalidate(.service("Unregistered"), since: nil) : .delivered(serviceMessageID: nil)
        }
        let engine = f.engine(sender, pageSize: 100, workers: 64)
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("all-users")))
        let status = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        #expect(status.counts.delivered == 450)
        #expect(status.counts.failed == 50)
        #expect(status.failures == ["Unregistered": 50])
        let failed = try await f.store.deliveries(messageID: record.id, state: .failed, cursor: nil, limit: 100)
        #expect(failed.items.allSatisfy { $0.token.hasPrefix("5a") && Int($0.token.suffix(4), radix: 16)! % 4 == 0 })
        let batches = sender.batches.withLock { $0 }
        let sent = batches.flatMap { $0.pushes.map(\.token) }
        #expect(sent.count == 500 && Set(sent).count == 500, "each device handed over once")
        #expect(
            batches.allSatisfy { batch in
                let environment = batch.pushes[0].environment
                return batch.pushes.allSatisfy {
                    $0.environment == environment && $0.token.hasPrefix("5a") == (environment == .sandbox)
                }
            }, "a batch holds one environment")
        // Chunks, not devices: at least a quarter of the 64 permits per hand-over.
        #expect(batches.count <= 500 / 16, "\(batches.count) batches")
    }

    @Test(arguments: PluginStoreBackend.allCases) func aRunStartsWithASmallPageSoTheFirstDevicesDoNotWaitForAWholeOne(
        _ backend: PluginStoreBackend
    ) async throws {
        for count in [250, MessageRun.firstPageSize] {
            let f = try await EngineFixture.make(backend)
            defer { f.cleanUp() }
            try await f.seed(count)
            let sender = ScriptedTransport(answering: .laterInTwoParts)
            let engine = f.engine(sender, pageSize: 1000, workers: 1000)
            try await engine.start()
            let record = try await engine.submit(f.job(.tag("all-users")))
            let status = try await f.waitUntilCompleted(engine, record.id)
            await engine.stop()
            #expect(status.counts.delivered == count)
            let batches = sender.batches.withLock { $0 }
            #expect(batches.first?.pushes.count == MessageRun.firstPageSize, "the first page, then full ones")
            let sent = batches.flatMap { $0.pushes.map(\.token) }
            #expect(sent.count == count && Set(sent).count == count, "each device handed over once")
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func finishedPagesAreFlushedWithoutWaitingForTheFlushInterval(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(300)
        // 30 pages through a window of 3, on a clock that does not move: were pages flushed
        // only every 30 s (on that clock), the message would never complete.
        let clock = ManualClock(Date())
        let engine = f.engine(ScriptedTransport(), pageSize: 10, flushInterval: .seconds(30), clock: clock)
        try await engine.start()
        let record = try await engine.submit(f.job(.tag("all-users")))
        let status = try await f.waitUntilCompleted(engine, record.id, timeout: .seconds(20))
        await engine.stop()
        #expect(status.counts.delivered == 300)
        let stored = try #require(try await f.store.message(id: record.id))
        #expect(stored.state == .completed)
        #expect(stored.counts.delivered == 300)
    }

    @Test(arguments: PluginStoreBackend.allCases) func reRegistrationAfterThe410TimestampWins(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(2)
        // APNs says the token died long ago; the device registered since, so it stays valid.
        let sender = ScriptedTransport { _, _ in
            .invalidate(.service("Unregistered"), since: Date(timeIntervalSince1970: 1_000_000))
        }
        let engine = f.engine(sender)
        try await engine.start()
        let record = try await engine.submit(f.job(.all))
        _ = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        let device = try await f.store.device(appID: f.appID, token: DeviceToken(token(1, prefix: "cd"))!)
        #expect(device?.invalidatedAt == nil)
    }

    @Test(arguments: PluginStoreBackend.allCases) func heldDeliveriesAreKeptAndReleased(_ backend: PluginStoreBackend)
        async throws
    {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(10)
        let healthy = Atomic<Bool>(false)
        let sender = ScriptedTransport { _, _ in
            healthy.load(ordering: .relaxed)
                ? .delivered(serviceMessageID: nil) : .held(.service("InvalidProviderToken"))
        }
        let engine = f.engine(sender)
        try await engine.start()
        let record = try await engine.submit(f.job(.all))
        var status = try await f.waitUntilCompleted(engine, record.id)
        #expect(status.counts.held == 10)
        let held = try await f.store.deliveries(messageID: record.id, state: .held, cursor: nil, limit: 100)
        #expect(held.items.count == 10)
        #expect(held.items.allSatisfy { $0.reason == "InvalidProviderToken" })
        healthy.store(true, ordering: .relaxed)
        #expect(try await f.store.releaseHeldDeliveries(appID: f.appID, environment: .production, now: Date()) == 10)
        engine.wake()
        status = try await DeliveryWait.until(engine, record.id, timeout: .seconds(20)) { $0.counts.delivered >= 10 }
        await engine.stop()
        #expect(status.counts.delivered == 10)
        #expect(status.counts.held == 0)
    }

    @Test(arguments: PluginStoreBackend.allCases) func anInterruptedMessageResumesWithoutLosingAnything(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(2000)
        // First engine: slow sends, stopped mid-way (as a shutdown or crash would).
        let slow = ScriptedTransport(answering: .after(.milliseconds(5)))
        let first = f.engine(slow, pageSize: 100, workers: 16)
        try await first.start()
        let record = try await first.submit(f.job(.tag("all-users")))
        try await waitUntil("the first 300 sends", within: .seconds(20)) { slow.totalAttempts >= 300 }
        await first.stop()
        let partial = try #require(try await f.store.message(id: record.id))
        #expect(partial.state == .sending)
        #expect(partial.counts.delivered < 2000)

        let fast = ScriptedTransport()
        let second = f.engine(fast, pageSize: 100, workers: 16)
        try await second.start()
        let status = try await f.waitUntilCompleted(second, record.id)
        await second.stop()
        #expect(status.counts.delivered == 2000, "every device is accounted for exactly once")
        let firstRun = slow.attempts.withLock { $0 }
        let secondRun = fast.attempts.withLock { $0 }
        #expect(Set(firstRun.keys).union(secondRun.keys).count == 2000, "nothing lost")
        // A stopped run commits the outcomes of every send it launched (keepWhatWasLaunched),
        // so the second engine sends none of them again.
        let duplicates = Set(firstRun.keys).intersection(secondRun.keys).count
        #expect(duplicates == 0, "sent twice: \(duplicates)")
    }

    /// A run halted in the middle of a page (here stopped; a lease about to end halts it the
    /// same way) commits the outcomes of what it launched, so the next claim of the message sends
    /// nothing twice. Its segment used to stay unfinished, and what it had sent was sent again.
    @Test(arguments: PluginStoreBackend.allCases) func aRunHaltedMidPageCommitsWhatItSentAndNothingIsSentTwice(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(2000)
        // After the first page (100), one page of the rest in segments of 256 outcomes: the
        // stop lands inside a page and inside a segment.
        let slow = ScriptedTransport(answering: .after(.milliseconds(5)))
        let first = f.engine(slow, pageSize: 2000, workers: 16)
        try await first.start()
        let record = try await first.submit(f.job(.tag("all-users")))
        try await waitUntil("the first 300 sends", within: .seconds(20)) { slow.totalAttempts >= 300 }
        await first.stop()

        let fast = ScriptedTransport()
        let second = f.engine(fast, pageSize: 2000, workers: 16)
        try await second.start()
        let status = try await f.waitUntilCompleted(second, record.id)
        await second.stop()
        #expect(status.counts.delivered == 2000)
        let firstRun = Set(slow.attempts.withLock { $0.keys })
        let secondRun = Set(fast.attempts.withLock { $0.keys })
        #expect(firstRun.union(secondRun).count == 2000, "nothing lost")
        let sentTwice = firstRun.intersection(secondRun).count
        #expect(sentTwice == 0, "sent twice: \(sentTwice)")
    }

    /// The same with a page of several routes (environments and credential selectors
    /// interleaved, as a tag of sandbox and production phones is) and skipped entries among
    /// them: a page is sent in audience order, so what the halted run launched is a prefix and
    /// is committed exactly. Sent route by route, a device of an earlier route past the first one
    /// not launched was sent again by the next claim.
    @Test(arguments: PluginStoreBackend.allCases) func aRunHaltedMidPageOfSeveralRoutesSendsNothingTwice(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        var batch: [DeviceRegistration] = []
        for n in 1...2100 {
            batch.append(
                DeviceRegistration(
                    token: DeviceToken(testToken(n, prefix: "ee"))!, environment: n % 2 == 0 ? .sandbox : .production,
                    tags: [TagName("mixed")!], credentialSelector: n % 3 == 0 ? "second" : nil, channel: .apns))
        }
        _ = try await f.store.registerDevices(appID: f.appID, batch)
        var ids: [Int64] = []
        var cursor: String?
        repeat {
            let page = try await f.store.devices(appID: f.appID, tag: TagName("mixed")!, cursor: cursor, limit: 1000)
            ids += page.items.map(\.id)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(ids.count == 2100)
        // Every seventh device is gone by the time the push is sent: skipped `UnknownDevice`
        // between the devices sent.
        let gone = Set(ids.sorted().enumerated().filter { $0.offset % 7 == 3 }.map(\.element))
        for device in try await f.store.devices(appID: f.appID, ids: Array(gone)) {
            #expect(try await f.store.deleteDevice(appID: f.appID, token: DeviceToken(device.token)!))
        }
        let sendable = ids.count - gone.count

        let slow = ScriptedTransport(answering: .after(.milliseconds(5)))
        let first = f.engine(slow, pageSize: 2100, workers: 16)
        try await first.start()
        let record = try await first.submit(f.job(.devices(ids)))
        try await waitUntil("the first 300 sends", within: .seconds(20)) { slow.totalAttempts >= 300 }
        await first.stop()
        let firstRun = Set(slow.attempts.withLock { $0.keys })
        #expect(firstRun.count < sendable, "the run was halted mid-page (sent \(firstRun.count))")
        // The halted page held several routes: the first run sent both environments.
        let batches = slow.batches.withLock { $0 }
        #expect(Set(batches.flatMap { $0.pushes.map(\.environment) }) == [.production, .sandbox])

        let fast = ScriptedTransport()
        let second = f.engine(fast, pageSize: 2100, workers: 16)
        try await second.start()
        let status = try await f.waitUntilCompleted(second, record.id)
        await second.stop()
        #expect(status.counts.delivered == sendable)
        #expect(status.counts.skipped == gone.count, "each gone device is accounted once")
        let secondRun = Set(fast.attempts.withLock { $0.keys })
        #expect(firstRun.union(secondRun).count == sendable, "nothing lost")
        let sentTwice = firstRun.intersection(secondRun).count
        #expect(sentTwice == 0, "sent twice: \(sentTwice)")
    }

    @Test(arguments: PluginStoreBackend.allCases) func scheduledMessagesWaitAndCanBeCancelled(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(3)
        // The engine's time is the test's: the cancelled message comes due only when the clock is
        // moved, and `idle()` says the engine has looked since.
        let clock = ManualClock(Date())
        let sender = ScriptedTransport()
        let engine = f.engine(sender, clock: clock)
        try await engine.start()
        var later = f.job(.all)
        later.sendAt = clock.now.addingTimeInterval(3600)
        let scheduled = try await engine.submit(later)
        #expect(scheduled.state == .scheduled)
        var soon = f.job(.all)
        soon.sendAt = clock.now.addingTimeInterval(60)
        let due = try await engine.submit(soon)
        #expect(due.state == .scheduled)
        await engine.idle()
        #expect(sender.totalAttempts == 0, "nothing is sent before it is due")
        // Time moves; the engine, asked, looks at once (its polls wait on this clock).
        clock.advance(by: 61)
        await engine.idle()
        _ = try await f.waitUntilCompleted(engine, due.id)
        #expect(try await engine.cancel(messageID: scheduled.id))
        #expect(try await engine.cancel(messageID: due.id) == false)
        // The cancelled message's time comes: the engine looks, finds nothing to send, and is idle.
        clock.advance(by: 7200)
        await engine.idle()
        #expect(sender.totalAttempts == 3)
        await engine.stop()
        #expect(try await f.store.message(id: scheduled.id)?.state == .cancelled)
        #expect(sender.totalAttempts == 3)
    }

    /// `idle()` waits for what is due (a run in flight, retries once the clock makes them due)
    /// and not for what is not: the check the nothing-happened tests rely on.
    @Test(arguments: PluginStoreBackend.allCases) func idleReturnsOnceWhatIsDueWasSent(_ backend: PluginStoreBackend)
        async throws
    {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        try await f.seed(20)
        let clock = ManualClock(Date())
        // Every fourth device is asked to come back in a minute; answers take 20 ms.
        let sender = ScriptedTransport(answering: .after(.milliseconds(20))) { token, attempt in
            Int(token.suffix(4), radix: 16)! % 4 == 0 && attempt == 1
                ? .retry(.service("TooManyRequests"), after: .seconds(60)) : .delivered(serviceMessageID: nil)
        }
        let engine = f.engine(sender, clock: clock)
        try await engine.start()
        let record = try await engine.submit(f.job(.all))
        await engine.idle()
        #expect(sender.totalAttempts == 20, "the run was sent and answered before idle() returned")
        #expect(try await engine.status(messageID: record.id)?.counts.delivered == 15)
        await engine.idle()
        #expect(sender.totalAttempts == 20, "the retries are not due yet")
        clock.advance(by: 61)
        await engine.idle()
        #expect(sender.totalAttempts == 25, "the retries came due and were sent before idle() returned")
        let status = try await f.waitUntilCompleted(engine, record.id)
        await engine.stop()
        #expect(status.counts.delivered == 20)
        await engine.idle()  // a stopped engine: at once
    }

    @Test(arguments: PluginStoreBackend.allCases) func payloadTooLargeIsRefusedBeforeAnythingIsStored(
        _ backend: PluginStoreBackend
    ) async throws {
        let f = try await EngineFixture.make(backend)
        defer { f.cleanUp() }
        // The engine asks its transport, here through a router as in the gateway; the scripted
        // transport refuses what the gateway's APNs transport refuses.
        let engine = f.engine(ChannelRouter([.apns: ScriptedTransport(), .fcm: ScriptedTransport()]))
        var job = f.job(.all)
        job.content.data["blob"] = .string(String(repeating: "x", count: 5000))
        await #expect(throws: PayloadError.self) { try await engine.submit(job) }
        #expect(try await f.store.messages(appID: f.appID, limit: 10).isEmpty)
    }
}
