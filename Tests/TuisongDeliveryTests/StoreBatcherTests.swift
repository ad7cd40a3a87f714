import Synchronization
import Testing
import TuisongCore

/// The engine's group commit: calls that arrive while a batch is at the store go together in
/// the next one, each answered with its own result.
@Suite struct StoreBatcherTests {
    /// A store that holds its first batch until told, and records every batch it is given.
    final class GatedOperation: Sendable {
        let batches = Mutex<[[Int]]>([])
        private let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
        private let firstArrived = Mutex<CheckedContinuation<Void, Never>?>(nil)
        private let held = Atomic<Bool>(false)

        func run(_ inputs: [Int]) async throws -> [Result<Int, any Error>] {
            batches.withLock { $0.append(inputs) }
            if !held.exchange(true, ordering: .acquiringAndReleasing) {
                await withCheckedContinuation { continuation in
                    gate.withLock { $0 = continuation }
                    firstArrived.withLock { $0?.resume() }
                }
            }
            return inputs.map { $0 < 0 ? .failure(Negative(value: $0)) : .success($0 * 10) }
        }

        func waitForFirstBatch() async {
            await withCheckedContinuation { continuation in
                let arrived = gate.withLock { $0 != nil }
                if arrived {
                    continuation.resume()
                } else {
                    firstArrived.withLock { $0 = continuation }
                }
            }
        }

        func release() { gate.withLock { $0 }?.resume() }
    }

    struct Negative: Error, Equatable { var value: Int }

    @Test func callsArrivingWhileABatchIsAtTheStoreGoTogetherInTheNext() async throws {
        let operation = GatedOperation()
        let batcher = StoreBatcher<Int, Int>(concurrency: 1, maxBatch: 100) { try await operation.run($0) }
        let first = Task { try await batcher.submit(1) }
        await operation.waitForFirstBatch()
        // Ten more calls while the first batch is held at the store.
        let rest = (2...11).map { value in Task { try await batcher.submit(value == 7 ? -7 : value) } }
        try await waitUntil(queued: 10, in: batcher)
        operation.release()
        #expect(try await first.value == 10)
        for (offset, task) in rest.enumerated() {
            let value = offset + 2
            if value == 7 {
                await #expect(throws: Negative(value: -7)) { try await task.value }
            } else {
                #expect(try await task.value == value * 10)
            }
        }
        let batches = operation.batches.withLock { $0 }
        #expect(batches.count == 2, "one store call for the ten that waited: \(batches)")
        #expect(batches.first == [1])
        #expect(Set(batches.last ?? []) == Set((2...11).map { $0 == 7 ? -7 : $0 }))
    }

    @Test func aBatchThatFailsFailsEachOfItsCalls() async throws {
        struct Down: Error {}
        let batcher = StoreBatcher<Int, Int>(concurrency: 1, maxBatch: 10) { _ in throw Down() }
        await #expect(throws: Down.self) { try await batcher.submit(1) }
        // The batcher carries on after a failed batch.
        await #expect(throws: Down.self) { try await batcher.submit(2) }
    }

    @Test func batchesAreCutAtTheirLimit() async throws {
        let operation = GatedOperation()
        let batcher = StoreBatcher<Int, Int>(concurrency: 1, maxBatch: 4) { try await operation.run($0) }
        let first = Task { try await batcher.submit(0) }
        await operation.waitForFirstBatch()
        let rest = (1...10).map { value in Task { try await batcher.submit(value) } }
        try await waitUntil(queued: 10, in: batcher)
        operation.release()
        _ = try await first.value
        for task in rest { _ = try await task.value }
        let sizes = operation.batches.withLock { $0.map(\.count) }
        #expect(sizes == [1, 4, 4, 2])
    }

    /// With a weight, a batch takes calls until the next would pass `maxWeight`; a call heavier
    /// than that goes alone rather than never.
    @Test(arguments: [(3, [1, 3, 3, 3, 1]), (50, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])])
    func batchesAreCutAtTheirWeight(_ each: Int, _ expected: [Int]) async throws {
        let operation = GatedOperation()
        let batcher = StoreBatcher<Int, Int>(concurrency: 1, maxBatch: 100, maxWeight: 10, weight: { _ in each }) {
            try await operation.run($0)
        }
        let first = Task { try await batcher.submit(0) }
        await operation.waitForFirstBatch()
        let rest = (1...10).map { value in Task { try await batcher.submit(value) } }
        try await waitUntil(queued: 10, in: batcher)
        operation.release()
        #expect(try await first.value == 0)
        for (offset, task) in rest.enumerated() { #expect(try await task.value == (offset + 1) * 10) }
        let sizes = operation.batches.withLock { $0.map(\.count) }
        #expect(sizes == expected)
    }

    /// Waits (bounded) until `count` calls are queued behind the batch at the store.
    private func waitUntil(queued count: Int, in batcher: StoreBatcher<Int, Int>) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while batcher.queuedCount < count {
            guard ContinuousClock.now < deadline else {
                Issue.record("only \(batcher.queuedCount) of \(count) calls queued")
                return
            }
            await Task.yield()
        }
    }
}
