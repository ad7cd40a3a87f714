import Foundation
import Logging
import Synchronization
import Testing

@testable import TuisongHTTP2Client

/// The engine's parts on their own: the request queue, the timer heap, the backoff, the event
/// loop (moved here from the APNs tests with the engine).
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
                label: "Test", endpoint: HTTP2Endpoint(host: "example.com"), connections: 1,
                connectTimeout: .seconds(1),
                requestTimeout: .seconds(1), pingInterval: .seconds(60), pingTimeout: .seconds(1),
                maxRetriesOnConnectionLoss: 1, reconnectBackoffInitial: .milliseconds(100),
                reconnectBackoffMaximum: .seconds(1), reconnectBackoffMaximumWhileQueued: .seconds(1)),
            authorizer: nil, tlsContext: try .client(alpn: ["h2"]), logger: Logger(label: "test"))
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
