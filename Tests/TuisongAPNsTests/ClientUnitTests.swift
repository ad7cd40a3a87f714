import Foundation
import Synchronization
import Testing

@testable import TuisongAPNs

@Suite struct ClientEndpointTests {
    @Test func parsesAppleURLs() {
        #expect(APNsEndpoint(url: "https://api.push.apple.com:443") == .production)
        #expect(APNsEndpoint(url: "https://api.sandbox.push.apple.com") == .sandbox)
        #expect(
            APNsEndpoint(url: "https://api.push.apple.com:2197/")
                == APNsEndpoint(host: "api.push.apple.com", port: 2197))
        #expect(
            APNsEndpoint(url: "HTTPS://localhost:8443")
                == APNsEndpoint(host: "localhost", port: 8443))
        #expect(APNsEndpoint(url: "https://[::1]:9443") == APNsEndpoint(host: "::1", port: 9443))
    }

    @Test func rejectsWhatIsNotAnHTTPSOrigin() {
        for text in [
            "http://api.push.apple.com", "api.push.apple.com:443", "https://", "https://:443",
            "https://host:0", "https://host:70000", "https://host:x", "https://host/3/device",
            "https://user@host", "https://[::1", "https://[::1]x",
        ] {
            #expect(APNsEndpoint(url: text) == nil, "\(text)")
        }
    }

    @Test func authorityOmitsTheDefaultPort() {
        #expect(APNsEndpoint.production.authority == "api.push.apple.com")
        #expect(APNsEndpoint(host: "localhost", port: 2197).authority == "localhost:2197")
        #expect(APNsEndpoint(host: "::1", port: 9443).authority == "[::1]:9443")
        #expect(APNsEndpoint(host: "::1", port: 9443).description == "https://[::1]:9443")
    }
}

@Suite struct ClientResponseParsingTests {
    @Test func readsReasonAndMillisecondTimestamp() {
        let body = Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8)
        let response = APNsResponse(status: 410, apnsID: "abc", body: body)
        #expect(response.reason == "Unregistered")
        #expect(response.apnsID == "abc")
        #expect(response.timestamp == Date(timeIntervalSince1970: 1_700_000_000.123))
    }

    @Test func toleratesBodiesThatAreNotTheErrorJSON() {
        #expect(APNsResponse(status: 400, apnsID: nil, body: Array("<html>".utf8)).reason == nil)
        #expect(
            APNsResponse(status: 400, apnsID: nil, body: Array(#"{"reason":5}"#.utf8)).reason == nil
        )
        #expect(APNsResponse(status: 500, apnsID: nil, body: []).reason == nil)
        // A 200 body is not an error report.
        #expect(
            APNsResponse(status: 200, apnsID: nil, body: Array(#"{"reason":"x"}"#.utf8)).reason
                == nil)
    }

    @Test func onlyAnswersPastTheTokenCheckLiftTheOneStreamLimit() {
        for status in [200, 400, 404, 405, 410, 413, 429] {
            #expect(HTTP2Stream.provesTokenAccepted(status: status), "\(status)")
        }
        for status in [0, 403, 500, 503] {
            #expect(!HTTP2Stream.provesTokenAccepted(status: status), "\(status)")
        }
    }

    @Test func errorDescriptionNamesTheCode() {
        let error = APNsTransportError(.alpnNotNegotiated, "server selected none")
        #expect(error.description == "APNs alpnNotNegotiated: server selected none")
        #expect(error.code != .tlsFailed)
    }
}

@Suite struct ClientQueueAndTimerTests {
    @Test func ringDequeKeepsOrderAcrossGrowthAndFrontInsertion() {
        var deque = RingDeque<Int>()
        for value in 0..<20 { deque.append(value) }
        for _ in 0..<15 { _ = deque.popFirst() }
        for value in 20..<60 { deque.append(value) }
        deque.prepend(-1)
        deque.prepend(-2)
        #expect(deque.count == 47)
        #expect(deque.first == -2)
        var drained: [Int] = []
        while let value = deque.popFirst() { drained.append(value) }
        #expect(drained == [-2, -1] + Array(15..<60))
        #expect(deque.isEmpty)
        deque.prepend(7)
        #expect(deque.removeAll() == [7])
    }

    @Test func timerHeapPopsInDeadlineOrderAndSkipsCancelled() {
        final class Log { var fired: [Int] = [] }
        let log = Log()
        var heap = TimerHeap()
        var ids: [TimerID] = []
        for (index, deadline) in [50, 10, 40, 20, 30, 10].enumerated() {
            ids.append(heap.insert(deadline: UInt64(deadline)) { log.fired.append(index) })
        }
        heap.cancel(ids[2])
        #expect(heap.nextDeadline() == 10)
        while let action = heap.popDue(now: 35) { action() }
        // Equal deadlines fire in insertion order.
        #expect(log.fired == [1, 5, 3, 4])
        #expect(heap.nextDeadline() == 50)
        #expect(heap.popDue(now: 49) == nil)
    }

    @Test func backoffDoublesUpToTheCapWithJitter() throws {
        let core = try PoolCore(
            settings: PoolCore.Settings(
                endpoint: .sandbox, connections: 1, connectTimeout: .seconds(1),
                requestTimeout: .seconds(1), pingInterval: .seconds(60), pingTimeout: .seconds(1),
                maxRetriesOnConnectionLoss: 1, reconnectBackoffInitial: .milliseconds(100),
                reconnectBackoffMaximum: .seconds(1), reconnectBackoffMaximumWhileQueued: .seconds(1)),
            authentication: .certificate,
            tlsContext: try .client(alpn: ["h2"]), logger: clientTestLogger)
        for (failures, ceiling) in [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1000), (40, 1000)] {
            for _ in 0..<20 {
                let delay = core.backoffDelay(failures: failures, maximum: .seconds(1))
                #expect(delay <= .milliseconds(ceiling))
                #expect(delay >= .milliseconds(ceiling) / 2)
            }
        }
        core.shutdownDetached()
    }
}

@Suite(.timeLimit(.minutes(1))) struct ClientEventLoopTests {
    @Test func runsSubmittedTasksInOrderOnItsThread() async throws {
        let loop = try EventLoop(name: "test loop named at most 15 bytes")
        loop.start()
        let seen = Mutex<[Int]>([])
        let onLoop = Mutex(true)
        let threadName = Mutex("")
        loop.execute {
            let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
            threadName.withLock { $0 = name ?? "" }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            for index in 0..<1000 {
                loop.execute {
                    if !loop.isLoopThread { onLoop.withLock { $0 = false } }
                    seen.withLock { $0.append(index) }
                    if index == 999 { continuation.resume() }
                }
            }
        }
        #expect(seen.withLock { $0 } == Array(0..<1000))
        #expect(onLoop.withLock { $0 })
        #expect(threadName.withLock { $0 } == "test loop named\n", "the thread carries the loop's name (15 bytes)")
        #expect(!loop.isLoopThread)
        await loop.shutdown()
        // After shutdown submissions are refused rather than run or leaked into a dead loop:
        // `execute` says so at once and keeps nothing, so nothing can run the task later.
        let ranLate = Mutex(false)
        #expect(!loop.execute { ranLate.withLock { $0 = true } })
        #expect(!ranLate.withLock { $0 })
    }

    @Test func timersFireAfterTheirDelayAndCancelledOnesNever() async throws {
        let loop = try EventLoop(name: "timer loop")
        loop.start()
        let fired = Mutex<[String]>([])
        let started = ContinuousClock.now
        let elapsed = Mutex<Duration?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                let cancelled = loop.schedule(after: .milliseconds(30)) {
                    fired.withLock { $0.append("cancelled") }
                }
                loop.schedule(after: .milliseconds(80)) {
                    fired.withLock { $0.append("late") }
                    elapsed.withLock { $0 = ContinuousClock.now - started }
                    continuation.resume()
                }
                loop.schedule(after: .milliseconds(10)) { fired.withLock { $0.append("early") } }
                loop.cancel(cancelled)
            }
        }
        #expect(fired.withLock { $0 } == ["early", "late"])
        #expect(try #require(elapsed.withLock { $0 }) >= .milliseconds(80))
        await loop.shutdown()
    }
}
