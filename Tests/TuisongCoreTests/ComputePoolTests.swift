import Foundation
import Synchronization
import Testing
import TuisongCore

/// The compute pool: jobs on its own threads, a bounded queue, waiting jobs of cancelled callers
/// skipped.
@Suite struct ComputePoolTests {
    /// A job that holds the pool's thread until `open()`.
    final class Gate: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        let entered = Atomic<Bool>(false)

        func hold() {
            entered.store(true, ordering: .releasing)
            semaphore.wait()
        }

        func open() { semaphore.signal() }

        func waitEntered() async {
            while !entered.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(5)) }
        }
    }

    /// What jobs did, in the order they did it.
    final class Recorded: Sendable {
        let values = Mutex<[Int]>([])
    }

    @Test func jobsRunOnThePoolsThreadsInOrder() async throws {
        let pool = ComputePool(threads: 1, queueLimit: 8, name: "test-compute")
        let gate = Gate()
        let holding = Task { try await pool.run { gate.hold() } }
        await gate.waitEntered()
        let order = Recorded()
        var jobs: [Task<String, any Error>] = []
        for index in 0..<4 {
            jobs.append(
                Task {
                    try await pool.run {
                        order.values.withLock { $0.append(index) }
                        // The kernel's name of the running thread.
                        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                        return comm.trimmingCharacters(in: .newlines)
                    }
                })
            // Queued one after the other, so the queue's order is known.
            while pool.waiting < index + 1 { await Task.yield() }
        }
        gate.open()
        try await holding.value
        for job in jobs {
            let name = try await job.value
            #expect(name == "test-compute-0", "\(name)")
        }
        #expect(order.values.withLock { $0 } == [0, 1, 2, 3])
    }

    @Test func aFullQueueRefusesAtOnceAndAcceptsAgainOnceItDrains() async throws {
        let pool = ComputePool(threads: 1, queueLimit: 1)
        let gate = Gate()
        let holding = Task { try await pool.run { gate.hold() } }
        await gate.waitEntered()
        let queued = Task { try await pool.run { 42 } }
        while pool.waiting < 1 { await Task.yield() }
        await #expect(throws: ComputePool.Busy.self) { try await pool.run { 0 } }
        gate.open()
        try await holding.value
        #expect(try await queued.value == 42)
        #expect(try await pool.run { 7 } == 7)
    }

    @Test func aWaitingJobWhoseCallerIsCancelledDoesNotRun() async throws {
        let pool = ComputePool(threads: 1, queueLimit: 4)
        let gate = Gate()
        let holding = Task { try await pool.run { gate.hold() } }
        await gate.waitEntered()
        let ran = Recorded()
        let waiting = Task { try await pool.run { ran.values.withLock { $0.append(1) } } }
        while pool.waiting < 1 { await Task.yield() }
        waiting.cancel()
        gate.open()
        try await holding.value
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(ran.values.withLock { $0 }.isEmpty)
    }
}
