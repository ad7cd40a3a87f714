internal import CCurl
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// curl_global_init must run once before any other curl call, and is not thread-safe against
/// itself; a Swift global is initialised exactly once, on first use, under `swift_once`.
private let curlGlobalInit: CURLcode = tuisong_curl_global_init_default()

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`): request deadlines must not move with the wall clock.
enum MonotonicTime {
    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Clamped to 0 below and to about a century above, so a deadline never wraps around.
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        guard seconds < 3_000_000_000 else { return 3_000_000_000 * 1_000_000_000 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }

    static func milliseconds(_ duration: Duration) -> Int {
        Int(min(nanoseconds(duration) / 1_000_000, UInt64(Int32.max)))
    }
}

/// The curl multi handle and the one thread that drives it.
///
/// Other threads only append to `inbox` and wake the thread (`curl_multi_wakeup`); the thread
/// moves submissions into its FIFO, hands at most `maxInFlight` of them to curl, runs
/// `curl_multi_perform`, answers finished transfers and sleeps in `curl_multi_poll`.
final class CurlEngine: @unchecked Sendable {
    // @unchecked Sendable: `inbox` and `joinable` are Mutexes and `counters`/`eventThread` atomics;
    // `multi` is immutable and used off the event thread only by `curl_multi_wakeup` (made for
    // that) under the inbox lock while no stop was requested. `waiting`, `waitingHead`, `active`,
    // `idle`, `nextSweep`, `finished` and `unflushed` are touched only on the event thread, between `start()` and the end
    // of `run()`.

    struct Submission {
        var request: HTTPClientRequest
        var deadline: UInt64
        var receiver: Receiver
    }

    private struct Inbox {
        var submissions: [Submission] = []
        var wakePending = false
        var stopRequested = false
    }

    let counters: ClientCounters
    private let multi: UnsafeMutableRawPointer
    private let settings: TransferSettings
    private let maxInFlight: Int
    private let maxIdleHandles: Int
    private let name: String
    private let logger: Logger
    private let inbox = Mutex(Inbox())
    private let joinable = Mutex<pthread_t?>(nil)
    private let eventThread = Atomic<UInt>(0)

    // Event-thread state.
    private var waiting: [Submission?] = []
    private var waitingHead = 0
    private var active: [UnsafeMutableRawPointer: EasyHandle] = [:]
    private var idle: [EasyHandle] = []
    private var nextSweep: UInt64 = 0
    /// The transfers one `collectFinished` found ended (kept for its capacity).
    private var finished: [(UnsafeMutableRawPointer, CURLcode)] = []
    /// Batch receivers holding answers not yet handed over (see `flushBatches`).
    private var unflushed: [BatchReceiver] = []

    /// How long past its deadline a transfer curl has not ended is failed by the client itself.
    /// curl enforces CURLOPT_TIMEOUT_MS only once a transfer has a connection; one parked waiting
    /// for a connection (PENDING in 7.88) is not timed out by curl.
    private static let sweepGrace: UInt64 = 1_000_000_000

    init(configuration: HTTPClient.Configuration, label: String, logger: Logger) throws(HTTPClientError) {
        guard curlGlobalInit == CURLE_OK else {
            throw HTTPClientError(
                code: "Other", detail: "curl_global_init failed (curl error \(curlGlobalInit.rawValue))")
        }
        guard let multi = curl_multi_init() else {
            throw HTTPClientError(code: "Other", detail: "curl_multi_init failed")
        }
        self.multi = multi
        self.logger = logger
        name = label
        maxInFlight = max(1, configuration.maxInFlight)
        counters = ClientCounters(addressPolicy: configuration.connectAddressPolicy)
        maxIdleHandles = min(maxInFlight, 256)
        settings = TransferSettings(
            connectTimeoutMilliseconds: max(1, MonotonicTime.milliseconds(configuration.connectTimeout)),
            caFile: configuration.caFile, userAgent: configuration.userAgent)
        let options: [(CURLMoption, Int)] = [
            (CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)),
            (CURLMOPT_MAX_HOST_CONNECTIONS, max(1, configuration.maxConnectionsPerHost)),
            (CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, configuration.maxConcurrentStreams)),
        ]
        for (option, value) in options {
            let code = tuisong_curl_multi_setopt_long(multi, option, value)
            guard code == CURLM_OK else {
                curl_multi_cleanup(multi)
                throw HTTPClientError(
                    code: "Other", detail: "curl_multi_setopt: \(String(cString: curl_multi_strerror(code)))")
            }
        }
    }

    /// Starts the event thread, which keeps the engine alive until it ends.
    func start() throws(HTTPClientError) {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { context in
                let engine = Unmanaged<CurlEngine>.fromOpaque(context!).takeRetainedValue()
                engine.run()
                return nil
            }, context)
        guard result == 0 else {
            Unmanaged<CurlEngine>.fromOpaque(context).release()
            curl_multi_cleanup(multi)
            throw HTTPClientError(code: "Other", detail: "pthread_create: \(String(cString: strerror(result)))")
        }
        joinable.withLock { $0 = thread }
    }

    var isEventThread: Bool {
        let id = eventThread.load(ordering: .acquiring)
        return id != 0 && pthread_equal(pthread_t(id), pthread_self()) != 0
    }

    /// Queues `request`; from any thread. After a stop was requested, answers "Shutdown" at once
    /// on the calling thread.
    func submit(_ request: HTTPClientRequest, completion: @escaping Completion) {
        let deadline = MonotonicTime.now() &+ MonotonicTime.nanoseconds(request.timeout)
        if !enqueueFromCaller([Submission(request: request, deadline: deadline, receiver: .single(completion))]) {
            counters.requestsFailed.add(1, ordering: .relaxed)
            completion(.failure(.shutdown()))
        }
    }

    /// Queues `requests` with one lock and at most one wakeup; their answers reach `completion`
    /// in groups (see `BatchReceiver`). After a stop was requested, answers them all "Shutdown"
    /// at once on the calling thread.
    func submit(_ requests: [HTTPClientRequest], completion: @escaping BatchCompletion) {
        guard !requests.isEmpty else { return }
        let receiver = BatchReceiver(completion)
        let now = MonotonicTime.now()
        var submissions: [Submission] = []
        submissions.reserveCapacity(requests.count)
        for (index, request) in requests.enumerated() {
            submissions.append(
                Submission(
                    request: request, deadline: now &+ MonotonicTime.nanoseconds(request.timeout),
                    receiver: .batch(receiver, index)))
        }
        if !enqueueFromCaller(submissions) {
            counters.requestsFailed.add(requests.count, ordering: .relaxed)
            completion(requests.indices.map { (index: $0, result: .failure(.shutdown())) })
        }
    }

    /// Appends to the inbox and wakes the event thread unless a wakeup is already on its way;
    /// false once a stop was requested.
    private func enqueueFromCaller(_ submissions: [Submission]) -> Bool {
        inbox.withLock { inbox -> Bool in
            guard !inbox.stopRequested else { return false }
            if inbox.submissions.isEmpty {
                inbox.submissions = submissions
            } else {
                inbox.submissions.append(contentsOf: submissions)
            }
            if !inbox.wakePending {
                inbox.wakePending = true
                curl_multi_wakeup(multi)
            }
            return true
        }
    }

    /// Asks the thread to stop and, unless called on it, waits until it has ended (every request
    /// answered, every connection closed). Safe to call any number of times from any thread.
    func shutdown(releasingClient: Bool = false) {
        inbox.withLock { inbox in
            guard !inbox.stopRequested else { return }
            inbox.stopRequested = true
            curl_multi_wakeup(multi)
        }
        if isEventThread {
            // The thread cannot join itself: it ends on its own once this completion returns.
            // A later shutdown() from another thread joins it; when the client itself is going
            // away (its last reference dropped in a completion), nobody will, so it is detached.
            if releasingClient {
                _ = joinable.withLockIfAvailable { thread in
                    if let running = thread { pthread_detach(running) }
                    thread = nil
                }
            }
            return
        }
        // Held while joining so a second caller returns only once the thread has ended too.
        joinable.withLock { thread in
            guard let running = thread else { return }
            pthread_join(running, nil)
            thread = nil
        }
    }

    // MARK: The event thread

    private func run() {
        eventThread.store(UInt(pthread_self()), ordering: .releasing)
        _ = tuisong_curl_name_current_thread(String(name.prefix(15)))
        logger.debug("HTTP client started", metadata: ["client": "\(name)"])
        nextSweep = MonotonicTime.now() &+ 1_000_000_000
        while true {
            let (incoming, stop) = inbox.withLock { inbox -> ([Submission], Bool) in
                inbox.wakePending = false
                var taken: [Submission] = []
                swap(&taken, &inbox.submissions)
                return (taken, inbox.stopRequested)
            }
            enqueue(incoming)
            if stop { break }
            admitWaiting()
            var running: Int32 = 0
            let performed = curl_multi_perform(multi, &running)
            if performed != CURLM_OK {
                logger.error(
                    "curl_multi_perform failed",
                    metadata: ["client": "\(name)", "error": "\(String(cString: curl_multi_strerror(performed)))"])
            }
            collectFinished()
            flushBatches()
            // Slots freed by finished transfers go to the queue now; curl runs new handles at
            // once (they carry a zero timeout), so the poll below does not sleep on them.
            admitWaiting()
            let now = MonotonicTime.now()
            if now >= nextSweep {
                sweepExpired(now: now)
                nextSweep = now &+ 1_000_000_000
            }
            flushBatches()
            let untilSweep = Int32(min(1000, (nextSweep &- min(now, nextSweep)) / 1_000_000 + 1))
            curl_multi_poll(multi, nil, 0, untilSweep, nil)
        }
        tearDown()
    }

    private func enqueue(_ incoming: [Submission]) {
        guard !incoming.isEmpty else { return }
        if waitingHead == waiting.count {
            waiting = incoming
            waitingHead = 0
        } else {
            waiting.append(contentsOf: incoming.lazy.map { Optional($0) })
        }
    }

    private func takeWaiting() -> Submission? {
        while waitingHead < waiting.count {
            let submission = waiting[waitingHead]
            waiting[waitingHead] = nil
            waitingHead += 1
            if let submission { return submission }
        }
        return nil
    }

    private func compactWaiting() {
        if waitingHead == waiting.count {
            waiting = []
            waitingHead = 0
        } else if waitingHead > 4096 && waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    private func admitWaiting() {
        defer { compactWaiting() }
        guard active.count < maxInFlight, waitingHead < waiting.count else { return }
        // One clock read per pass: the pass takes microseconds, timeouts are in milliseconds.
        let now = MonotonicTime.now()
        while active.count < maxInFlight, let submission = takeWaiting() {
            guard submission.deadline > now else {
                fail(
                    submission.receiver,
                    HTTPClientError(code: "Timeout", detail: "the request waited in the queue past its timeout"))
                continue
            }
            let handle: EasyHandle
            if let reused = idle.popLast() {
                handle = reused
            } else {
                do throws(HTTPClientError) {
                    handle = try EasyHandle(
                        settings: settings, counters: Unmanaged.passUnretained(counters).toOpaque())
                } catch {
                    fail(submission.receiver, error)
                    continue
                }
            }
            let remaining = Int(max(1, (submission.deadline - now) / 1_000_000))
            if let refused = handle.prepare(
                submission.request, timeoutMilliseconds: remaining,
                connectTimeoutMilliseconds: settings.connectTimeoutMilliseconds)
            {
                recycle(handle)
                fail(submission.receiver, refused)
                continue
            }
            let added = curl_multi_add_handle(multi, handle.curl)
            guard added == CURLM_OK else {
                recycle(handle)
                fail(
                    submission.receiver,
                    HTTPClientError(
                        code: "Other", detail: "curl_multi_add_handle: \(String(cString: curl_multi_strerror(added)))"))
                continue
            }
            handle.receiver = submission.receiver
            handle.deadline = submission.deadline
            active[handle.curl] = handle
            counters.requestsStarted.add(1, ordering: .relaxed)
            counters.inFlight.add(1, ordering: .relaxed)
        }
    }

    private func collectFinished() {
        // Every message first, then the removals: curl_multi_remove_handle (7.88) walks the
        // messages still queued looking for the handle's, so removing each handle as its message
        // is read costs a pass over the rest — quadratic in the transfers that ended together.
        var left: Int32 = 0
        finished.removeAll(keepingCapacity: true)
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            // Read before removing the handle: the message belongs to it.
            finished.append((easy, message.pointee.data.result))
        }
        for (easy, result) in finished {
            guard let handle = active.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(multi, easy)
            finish(handle, handle.outcome(result))
        }
    }

    /// Ends `handle`'s transfer with `outcome`: counters first (a completion may read them), then
    /// the handle goes back to the free list, then the caller hears.
    private func finish(_ handle: EasyHandle, _ outcome: Result<HTTPClientResponse, HTTPClientError>) {
        let receiver = handle.receiver
        counters.inFlight.subtract(1, ordering: .relaxed)
        if case .success = outcome {
            counters.requestsCompleted.add(1, ordering: .relaxed)
        } else {
            counters.requestsFailed.add(1, ordering: .relaxed)
        }
        recycle(handle)
        if let receiver { deliver(outcome, to: receiver) }
    }

    private func fail(_ receiver: Receiver, _ error: HTTPClientError) {
        counters.requestsFailed.add(1, ordering: .relaxed)
        deliver(.failure(error), to: receiver)
    }

    /// A single request's completion runs now; a batch's answer waits for `flushBatches`.
    private func deliver(_ outcome: Result<HTTPClientResponse, HTTPClientError>, to receiver: Receiver) {
        switch receiver {
        case .single(let completion):
            completion(outcome)
        case .batch(let batch, let index):
            batch.pending.append((index: index, result: outcome))
            if !batch.enlisted {
                batch.enlisted = true
                unflushed.append(batch)
            }
        }
    }

    /// Hands each batch the answers gathered since the last flush, in one call per batch.
    private func flushBatches() {
        while !unflushed.isEmpty {
            let receivers = unflushed
            unflushed = []
            for receiver in receivers {
                let answers = receiver.pending
                receiver.pending = []
                receiver.enlisted = false
                receiver.completion(answers)
            }
        }
    }

    private func recycle(_ handle: EasyHandle) {
        handle.clear()
        if idle.count < maxIdleHandles { idle.append(handle) }
    }

    /// The client's own deadline check, once a second: queued requests past their timeout, and
    /// transfers curl has not ended a second after theirs (see `sweepGrace`).
    private func sweepExpired(now: UInt64) {
        var expired: [EasyHandle] = []
        for handle in active.values where handle.deadline &+ Self.sweepGrace <= now {
            expired.append(handle)
        }
        for handle in expired {
            active[handle.curl] = nil
            curl_multi_remove_handle(multi, handle.curl)
            finish(
                handle,
                .failure(HTTPClientError(code: "Timeout", detail: "no answer within the request's timeout")))
        }
        for index in waitingHead..<waiting.count {
            guard let submission = waiting[index], submission.deadline <= now else { continue }
            waiting[index] = nil
            fail(
                submission.receiver,
                HTTPClientError(code: "Timeout", detail: "the request waited in the queue past its timeout"))
        }
        compactWaiting()
    }

    private func tearDown() {
        while let submission = takeWaiting() {
            fail(submission.receiver, .shutdown())
        }
        waiting = []
        let stopped = active.values
        active = [:]
        for handle in stopped {
            curl_multi_remove_handle(multi, handle.curl)
            finish(handle, .failure(.shutdown()))
        }
        flushBatches()
        // Easy handles first (removed from the multi handle above), then the multi handle, which
        // closes the connections it kept alive.
        idle = []
        curl_multi_cleanup(multi)
        logger.debug("HTTP client stopped", metadata: ["client": "\(name)"])
    }
}
