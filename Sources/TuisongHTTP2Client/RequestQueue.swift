/// A growable ring buffer: O(1) push at either end and pop at the front. Requests waiting for a
/// stream go at the back; requests to retry go back at the front so they keep their turn.
struct RingDeque<Element> {
    private var storage: [Element?] = []
    private var head = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    var first: Element? { count == 0 ? nil : storage[head] }

    mutating func append(_ element: Element) {
        growIfFull()
        storage[(head + count) % storage.count] = element
        count += 1
    }

    mutating func prepend(_ element: Element) {
        growIfFull()
        head = (head - 1 + storage.count) % storage.count
        storage[head] = element
        count += 1
    }

    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = storage[head]
        storage[head] = nil
        head = (head + 1) % storage.count
        count -= 1
        if count == 0 { head = 0 }
        return element
    }

    /// Removes and returns everything, front first.
    mutating func removeAll() -> [Element] {
        var all: [Element] = []
        all.reserveCapacity(count)
        while let element = popFirst() { all.append(element) }
        storage = []
        head = 0
        return all
    }

    private mutating func growIfFull() {
        guard count == storage.count else { return }
        let newCapacity = Swift.max(16, storage.count * 2)
        var grown = [Element?](repeating: nil, count: newCapacity)
        for index in 0..<count {
            grown[index] = storage[(head + index) % storage.count]
        }
        storage = grown
        head = 0
    }
}

/// One request travelling through the pool: queued, in flight on a stream, possibly retried,
/// finished exactly once. Its answer goes to a continuation (`send(_:)`) or to the sink of the
/// batch it came in (`send(_:onAnswers:)`).
final class PendingRequest: @unchecked Sendable {
    // @unchecked Sendable: the sender creates it and installs the continuation or sink before
    // handing it to the pool's inbox (a Mutex, so those writes happen-before the loop reads
    // them); from then on every field is read and written only on the pool's event loop thread.

    /// The request's headers, written on its connection's header block when it gets a stream.
    let head: any HTTP2RequestHead
    /// The request body (DATA frames), read by nghttp2 in pieces.
    let body: [UInt8]
    /// Monotonic ns after which the request fails with a timeout.
    let deadline: UInt64
    var continuation: UnsafeContinuation<Result<HTTP2Response, HTTP2ClientError>, Never>?
    /// The batch this request belongs to, and its position there.
    let sink: BatchSink?
    let index: Int
    private(set) var isFinished = false

    /// Attempts lost with a broken connection (the server may have seen them).
    var connectionLossRetries = 0
    /// Set once the request was retried after its authorization was refused as expired.
    var retriedAfterAuthorizationExpiry = false
    /// The pool's authorization sent with the latest attempt, so only that one is invalidated
    /// when the server refuses it as expired.
    var authorizationUsed: HTTP2Authorization?
    /// Set when the caller's task was cancelled before the loop saw the request.
    var cancellationRequested = false

    /// Completions are handed out in batches (`CompletionBatch`) once the pool has finished its
    /// loop iteration; `nil` before the pool took the request.
    var batch: CompletionBatch?

    /// Where the current attempt is in flight. Strong, but only while in flight: cleared when
    /// the stream closes, the connection closes, or the request finishes.
    var connection: HTTP2Connection?
    var streamID: Int32 = 0

    init(head: any HTTP2RequestHead, deadline: UInt64, sink: BatchSink? = nil, index: Int = 0) {
        self.head = head
        body = head.body
        self.deadline = deadline
        self.sink = sink
        self.index = index
    }

    func finish(_ result: Result<HTTP2Response, HTTP2ClientError>) {
        guard !isFinished else { return }
        isFinished = true
        connection = nil
        if let sink {
            if let batch {
                batch.add(HTTP2BatchAnswer(index: index, result: result), to: sink)
            } else {
                // Refused before the loop took it (the pool was shut down): nothing to batch with.
                sink.handler([HTTP2BatchAnswer(index: index, result: result)])
            }
            return
        }
        guard let continuation else { return }
        self.continuation = nil
        if let batch {
            batch.completions.append((continuation, result))
        } else {
            continuation.resume(returning: result)
        }
    }
}

/// The receiving end of one `send(_:onAnswers:)` call: its handler, and the answers gathered in
/// the current loop iteration.
final class BatchSink: @unchecked Sendable {
    // @unchecked Sendable: `handler` is immutable and Sendable; `answers` and `isScheduled` are
    // touched only on the pool's event loop thread (by `CompletionBatch`).

    let handler: @Sendable ([HTTP2BatchAnswer]) -> Void
    fileprivate var answers: [HTTP2BatchAnswer] = []
    fileprivate var isScheduled = false

    init(handler: @escaping @Sendable ([HTTP2BatchAnswer]) -> Void) {
        self.handler = handler
    }
}

/// Answers finished during one event-loop iteration, handed out together at its end: after
/// the next requests went out on the wire and the statistics were published, so a caller that
/// got its answer sees counters that include it. Continuations are resumed one by one; each
/// batch's handler is called once with all of its answers of the iteration.
final class CompletionBatch {
    var completions:
        [(
            UnsafeContinuation<Result<HTTP2Response, HTTP2ClientError>, Never>,
            Result<HTTP2Response, HTTP2ClientError>
        )] = []
    private var sinks: [BatchSink] = []

    func add(_ answer: HTTP2BatchAnswer, to sink: BatchSink) {
        sink.answers.append(answer)
        if !sink.isScheduled {
            sink.isScheduled = true
            sinks.append(sink)
        }
    }

    func resumeAll() {
        if !sinks.isEmpty {
            let ready = sinks
            sinks.removeAll(keepingCapacity: true)
            for sink in ready {
                var answers: [HTTP2BatchAnswer] = []
                swap(&answers, &sink.answers)
                sink.isScheduled = false
                sink.handler(answers)
            }
        }
        guard !completions.isEmpty else { return }
        let ready = completions
        completions.removeAll(keepingCapacity: true)
        for (continuation, result) in ready { continuation.resume(returning: result) }
    }
}

@available(*, unavailable)
extension CompletionBatch: Sendable {}
