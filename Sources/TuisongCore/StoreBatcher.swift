import Synchronization

/// Group commit for store calls (the engine's flushes and page reads, the stores' message
/// inserts): calls that arrive while a batch is at the store
/// wait for it and then go together as the next batch, so many small messages share one round
/// trip (one transaction for their flushes, one snapshot for their first pages) instead of
/// paying one each. An idle batcher adds no delay: a call that finds nothing running starts at
/// once, alone.
public final class StoreBatcher<Input: Sendable, Output: Sendable>: Sendable {
    /// Answers one result per input, in order; throwing fails the whole batch.
    public typealias Operation = @Sendable ([Input]) async throws -> [Result<Output, any Error>]

    private struct Waiting {
        var input: Input
        var continuation: CheckedContinuation<Result<Output, any Error>, Never>
    }

    private struct State {
        var queue: [Waiting] = []
        var running = 0
    }

    private let state = Mutex(State())
    private let operation: Operation
    /// Batches at the store at once (1 for writes: SQLite has one writer, and a second
    /// PostgreSQL transaction over the same rows would only wait for the first).
    private let concurrency: Int
    private let maxBatch: Int
    /// A batch's inputs weigh at most this together (its first input goes whatever it weighs):
    /// a batch of large inputs holds the store no longer than one of many small ones.
    private let maxWeight: Int
    private let weight: (@Sendable (Input) -> Int)?

    public init(
        concurrency: Int, maxBatch: Int, maxWeight: Int = .max, weight: (@Sendable (Input) -> Int)? = nil,
        operation: @escaping Operation
    ) {
        precondition(concurrency >= 1 && maxBatch >= 1)
        self.concurrency = concurrency
        self.maxBatch = maxBatch
        self.maxWeight = maxWeight
        self.weight = weight
        self.operation = operation
    }

    /// Calls waiting for the next batch (tests).
    public var queuedCount: Int { state.withLock { $0.queue.count } }

    /// Queues `input` and returns its result once its batch is done.
    public func submit(_ input: Input) async throws -> Output {
        let result = await withCheckedContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.queue.append(Waiting(input: input, continuation: continuation))
                guard state.running < concurrency else { return false }
                state.running += 1
                return true
            }
            // Not the caller's task: a run that is being cancelled must still see its flush
            // through, and the store refuses work from a cancelled task.
            if start { Task { await self.drain() } }
        }
        return try result.get()
    }

    /// Runs batches until the queue is empty.
    private func drain() async {
        while true {
            let batch = state.withLock { state -> [Waiting]? in
                guard !state.queue.isEmpty else {
                    state.running -= 1
                    return nil
                }
                var count = min(maxBatch, state.queue.count)
                if let weight {
                    var total = weight(state.queue[0].input)
                    for index in 1..<count {
                        total += weight(state.queue[index].input)
                        if total > maxWeight {
                            count = index
                            break
                        }
                    }
                }
                let batch = Array(state.queue.prefix(count))
                state.queue.removeFirst(count)
                return batch
            }
            guard let batch else { return }
            var results: [Result<Output, any Error>]
            do {
                // A closure, not `\.input`: a key path into a generic type is instantiated by
                // the runtime on every call (~1 % of a chat message's CPU at 1,000/s).
                results = try await operation(batch.map { $0.input })
                if results.count != batch.count {
                    results = Array(
                        repeating: .failure(BatchError.wrongNumberOfResults(expected: batch.count, got: results.count)),
                        count: batch.count)
                }
            } catch {
                results = Array(repeating: .failure(error), count: batch.count)
            }
            for (waiting, result) in zip(batch, results) { waiting.continuation.resume(returning: result) }
        }
    }

    enum BatchError: Error, CustomStringConvertible {
        case wrongNumberOfResults(expected: Int, got: Int)

        var description: String {
            switch self {
            case .wrongNumberOfResults(let expected, let got):
                "the store answered \(got) results for a batch of \(expected)"
            }
        }
    }
}
