import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongHTTPClient

/// Sends the outbox's events to their endpoints, as Standard Webhooks: claims due rows under a
/// lease (several nodes share the outbox; a dead node's rows come back when its lease ends and
/// are sent again with the same `webhook-id`), POSTs each with its signature through its own
/// HTTP client (never the push services'), and records every attempt with the row's next state.
///
/// A slow or dead endpoint holds at most `concurrencyPerEndpoint` requests of this node and
/// none of the delivery pipeline's: events are written by the store in the transactions that
/// cause them, and this sender only reads them afterwards.
public final class WebhookSender: Sendable {
    public struct Settings: Sendable {
        public var allowPrivateNetworks: Bool
        public var timeout: Duration
        public var concurrencyPerEndpoint: Int
        /// Rows claimed at a time.
        public var batch: Int
        public var lease: TimeInterval
        /// How long an idle sender waits before looking again (a local event wakes it sooner).
        public var idlePoll: Duration

        public init(
            allowPrivateNetworks: Bool, timeout: Duration = .seconds(10), concurrencyPerEndpoint: Int = 8,
            batch: Int = 500, lease: TimeInterval = 60, idlePoll: Duration = .seconds(1)
        ) {
            self.allowPrivateNetworks = allowPrivateNetworks
            self.timeout = timeout
            self.concurrencyPerEndpoint = concurrencyPerEndpoint
            self.batch = batch
            self.lease = lease
            self.idlePoll = idlePoll
        }
    }

    /// After the first attempt fails: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h (each
    /// ±10 %), then the event is failed.
    public static let retrySchedule: [TimeInterval] = [
        5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400,
    ]
    /// An endpoint failing this long (no success since its first failure) is disabled.
    public static let disableAfter: TimeInterval = 5 * 86_400
    /// The most answer bytes read: enough for a status page's first lines.
    public static let maxResponseBytes = 4096
    /// The answer bytes kept with an attempt for the console.
    static let keptResponseBytes = 256
    /// Failed events are kept this long for a resend; delivered ones an hour (they make a
    /// message's completion event unique per endpoint while a late duplicate flush may come).
    static let keepFailed: TimeInterval = 7 * 86_400
    static let keepDelivered: TimeInterval = 3600
    /// Rows claimed ahead per endpoint, in units of its concurrency, until its answers are
    /// timed: a finished POST starts the next queued one at once instead of waiting for a
    /// claim, and a claim fills many places in one write.
    static let claimAhead = 4
    /// The most rows claimed ahead per endpoint, in units of its concurrency: what a fast
    /// endpoint (answering in a millisecond) is given, so that one claim and one record of
    /// results serve about a hundred events.
    static let maxClaimAhead = 16
    /// Results recorded at least this often (in results), whatever the queues hold.
    static let recordEvery = 256

    private let store: any GatewayStore
    private let endpoints: WebhookEndpoints
    private let settings: Settings
    private let client: HTTPClient
    private let metrics: GatewayMetrics?
    private let logger: Logger
    private let clock: any Clock
    private let owner: String

    /// A claimed row waiting for one of its endpoint's places.
    private struct Queued {
        var delivery: WebhookDelivery
        var claimedAt: Date
    }

    private struct State {
        /// Senders per endpoint, each sending its endpoint's queue one row at a time.
        var inFlight: [Int64: Int] = [:]
        var queued: [Int64: [Queued]] = [:]
        var results: [WebhookAttemptResult] = []
        /// Each endpoint's answer time (seconds, a moving average): how far ahead to claim.
        var latency: [Int64: Double] = [:]
        var cache: [Int64: WebhookEndpoint] = [:]
        /// Opened signing keys per endpoint, while its row and the time allow them.
        var keys: [Int64: SigningKeys] = [:]
        var cacheLoaded: UInt64 = 0
        var cacheStale = true
        var wakeup: CheckedContinuation<Void, Never>?
        var woken = false
        var stopped = false
        var loop: Task<Void, Never>?
    }
    private let state = Mutex(State())

    private struct SigningKeys {
        var endpoint: WebhookEndpoint
        var keys: [[UInt8]]
        /// When the previous secret stops signing (the keys must be opened again then).
        var until: Date
    }

    /// Rows to hold (in flight and queued) for an endpoint answering in `latency` seconds:
    /// what its senders finish in a quarter of the lease, between its concurrency and
    /// `maxClaimAhead` times it (a slow endpoint's rows are not held past half their lease).
    private func ahead(latency: Double?) -> Int {
        let concurrency = settings.concurrencyPerEndpoint
        guard let latency else { return concurrency * Self.claimAhead }
        let perSender = Int(min((settings.lease / 4) / max(latency, 0.0001), Double(Self.maxClaimAhead)))
        return concurrency * max(1, perSender)
    }

    public init(
        store: any GatewayStore, endpoints: WebhookEndpoints, settings: Settings, metrics: GatewayMetrics?,
        logger: Logger, clock: any Clock = SystemClock(), owner: String
    ) throws {
        self.store = store
        self.endpoints = endpoints
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        self.owner = owner
        var policy: (@Sendable (ConnectAddress) -> Bool)?
        if !settings.allowPrivateNetworks {
            policy = { address in WebhookAddressRules.isPublic(address) }
        }
        client = try HTTPClient(
            configuration: HTTPClient.Configuration(
                connectTimeout: settings.timeout, maxConnectionsPerHost: settings.concurrencyPerEndpoint,
                maxInFlight: 2000, userAgent: "tuisong-webhooks",
                connectAddressPolicy: policy),
            label: "webhooks", logger: logger)
    }

    /// `host-pid-random`, as the cluster's node ids: the owner of a leased outbox row says
    /// which process holds it.
    public static func makeOwner() -> String {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let random = (0..<6).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement()!) }.joined()
        return "\(host)-\(getpid())-\(random)"
    }

    public func start() {
        let task = Task { [self] in await run() }
        state.withLock { $0.loop = task }
    }

    /// Stops claiming, waits for the loop, records what was answered and closes the client.
    /// Rows in flight keep their lease and are sent again after it (same `webhook-id`).
    public func stop() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.stopped = true
            let wakeup = state.wakeup
            state.wakeup = nil
            wakeup?.resume()
            return state.loop
        }
        await task?.value
        await flushResults()
        client.shutdown()
    }

    /// Look for due events now (one was written, or an endpoint changed).
    public func wake() {
        state.withLock { state in
            state.woken = true
            state.wakeup?.resume()
            state.wakeup = nil
        }
    }

    /// The endpoints changed (this node or another): read them again before the next send.
    public func endpointsChanged() {
        state.withLock { $0.cacheStale = true }
        wake()
    }

    private func run() async {
        var lastPrune = Date.distantPast
        while !state.withLock({ $0.stopped }) {
            var claimed: [WebhookDelivery] = []
            do {
                await flushResults()
                if clock.now.timeIntervalSince(lastPrune) > 60 {
                    lastPrune = clock.now
                    try await prune()
                }
                let (held, latency) = state.withLock { state in
                    (state.inFlight.merging(state.queued.mapValues(\.count), uniquingKeysWith: +), state.latency)
                }
                let claimedAt = clock.now
                claimed = try await store.claimWebhookDeliveries(
                    owner: owner, now: claimedAt, leaseFor: settings.lease, limit: settings.batch
                ) { [self] endpoint in ahead(latency: latency[endpoint]) - (held[endpoint] ?? 0) }
                if !claimed.isEmpty {
                    try await refreshEndpoints()
                    dispatch(claimed, claimedAt: claimedAt)
                }
            } catch {
                logger.warning("webhook outbox unavailable", metadata: ["error": "\(error)"])
            }
            if claimed.count < settings.batch { await waitForWork() }
        }
    }

    /// Queues the claimed rows and starts senders for their endpoints, at most
    /// `concurrencyPerEndpoint` each.
    private func dispatch(_ claimed: [WebhookDelivery], claimedAt: Date) {
        let started = state.withLock { state -> [Int64] in
            for delivery in claimed {
                state.queued[delivery.endpointID, default: []].append(Queued(delivery: delivery, claimedAt: claimedAt))
            }
            var started: [Int64] = []
            for (endpoint, queue) in state.queued {
                let idle = min(queue.count, settings.concurrencyPerEndpoint - (state.inFlight[endpoint] ?? 0))
                guard idle > 0 else { continue }
                state.inFlight[endpoint, default: 0] += idle
                started += Array(repeating: endpoint, count: idle)
            }
            return started
        }
        for endpoint in started {
            Task { [self] in await sendQueued(endpoint: endpoint) }
        }
    }

    /// One of an endpoint's senders: sends its queued rows until none is left or the sender
    /// stops (the rows left keep their lease and are sent again after it, same `webhook-id`).
    private func sendQueued(endpoint: Int64) async {
        while let next = nextQueued(endpoint: endpoint) {
            // A row that waited past half its lease could be claimed again before its answer is
            // recorded: it is left to the claim after its lease instead.
            guard clock.now.timeIntervalSince(next.claimedAt) < settings.lease / 2 else { continue }
            let result = await send(next.delivery)
            // The claim loop is woken when this endpoint's queue runs low (a quarter of what it
            // holds ahead) or results pile up, not after every answer: then one claim and one
            // record of results serve many events.
            let refill = state.withLock { state -> Bool in
                guard let result else { return true }
                state.results.append(result)
                let seconds = Double(result.latencyMilliseconds) / 1000
                state.latency[endpoint] = state.latency[endpoint].map { $0 * 0.8 + seconds * 0.2 } ?? seconds
                if result.disableEndpoint != nil {
                    // Nothing more to it: its queued rows stay leased, and the claim skips it.
                    state.queued[endpoint] = nil
                    state.cache[endpoint] = nil
                    return true
                }
                let queued = state.queued[endpoint]?.count ?? 0
                return queued <= ahead(latency: state.latency[endpoint]) / 4 || state.results.count >= Self.recordEvery
            }
            if refill { wake() }
        }
    }

    /// The endpoint's next queued row; nil ends the calling sender (counted out of `inFlight`).
    private func nextQueued(endpoint: Int64) -> Queued? {
        state.withLock { state -> Queued? in
            if !state.stopped, var queue = state.queued[endpoint], !queue.isEmpty {
                let next = queue.removeFirst()
                state.queued[endpoint] = queue.isEmpty ? nil : queue
                return next
            }
            state.inFlight[endpoint, default: 1] -= 1
            if state.inFlight[endpoint] == 0 { state.inFlight[endpoint] = nil }
            return nil
        }
    }

    /// Until woken, or `idlePoll` passes.
    private func waitForWork() async {
        let timer = Task { [self, poll = settings.idlePoll] in
            guard (try? await clock.sleep(for: poll)) != nil else { return }
            wake()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.woken || state.stopped { return true }
                state.wakeup = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        timer.cancel()
        state.withLock { $0.woken = false }
    }

    private func flushResults() async {
        let results = state.withLock { state -> [WebhookAttemptResult] in
            defer { state.results = [] }
            return state.results
        }
        guard !results.isEmpty else { return }
        do {
            try await store.recordWebhookAttempts(results)
            if results.contains(where: { $0.disableEndpoint != nil }) {
                await store.publish(.webhooks(appID: 0))
            }
        } catch {
            // The rows keep their lease and are sent again after it (same id): at least once.
            logger.warning(
                "cannot record webhook attempts; their events will be sent again",
                metadata: ["count": "\(results.count)", "error": "\(error)"])
        }
    }

    private func refreshEndpoints() async throws {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { $0.cacheStale || now &- $0.cacheLoaded > 5_000_000_000 }
        guard due else { return }
        let all = try await store.webhookEndpoints(appID: nil)
        state.withLock { state in
            state.cache = Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) })
            state.cacheLoaded = now
            state.cacheStale = false
        }
    }

    private func prune() async throws {
        let now = clock.now
        let pruned = try await store.pruneWebhookOutbox(
            deliveredBefore: now.addingTimeInterval(-Self.keepDelivered),
            failedBefore: now.addingTimeInterval(-Self.keepFailed), keepAttempts: 100)
        if pruned > 0 { logger.debug("webhook outbox pruned", metadata: ["rows": "\(pruned)"]) }
    }

    // MARK: one attempt

    /// One POST and what follows from its answer; nil when the endpoint is gone or disabled
    /// (the row stays as it is: deleted with the endpoint, or kept for when it is enabled).
    func send(_ delivery: WebhookDelivery) async -> WebhookAttemptResult? {
        guard let endpoint = state.withLock({ $0.cache[delivery.endpointID] }), endpoint.isEnabled else { return nil }
        let started = clock.now
        let timestamp = Int64(started.timeIntervalSince1970)
        let body = Array(delivery.body.utf8)
        let signature: String
        do {
            signature = WebhookSignature.header(
                id: delivery.eventID, timestamp: timestamp, body: body, keys: try signingKeys(of: endpoint, at: started)
            )
        } catch {
            logger.error("cannot open a webhook secret", metadata: ["endpoint": "\(endpoint.id)", "error": "\(error)"])
            return nil
        }
        let request = HTTPClientRequest(
            method: "POST", url: endpoint.url,
            headers: [
                ("Content-Type", "application/json"), ("webhook-id", delivery.eventID),
                ("webhook-timestamp", String(timestamp)), ("webhook-signature", signature),
            ],
            body: body, timeout: settings.timeout, responseHeaders: ["retry-after"],
            maxResponseBytes: Self.maxResponseBytes)
        let result: Result<HTTPClientResponse, HTTPClientError>
        if !settings.allowPrivateNetworks, !endpoint.url.lowercased().hasPrefix("https://") {
            result = .failure(HTTPClientError(code: "AddressRefused", detail: "only https endpoints are allowed"))
        } else {
            result = await client.execute(request)
        }
        let finished = clock.now
        let latency = Int64((finished.timeIntervalSince(started) * 1000).rounded())
        let outcome = Self.decide(
            result, attemptsBefore: delivery.attempts, endpoint: endpoint, now: finished,
            jitter: Double.random(in: 0.9...1.1))
        metrics?.webhookEvents.increment([delivery.type, outcome.metric])
        if outcome.disable != nil {
            logger.warning(
                "webhook endpoint disabled",
                metadata: ["endpoint": "\(endpoint.id)", "app": "\(endpoint.appID)", "reason": "\(outcome.disable!)"])
        }
        return WebhookAttemptResult(
            outboxID: delivery.id, endpointID: delivery.endpointID, eventID: delivery.eventID, type: delivery.type,
            attemptedAt: finished, status: outcome.status, latencyMilliseconds: latency, response: outcome.response,
            next: outcome.next, disableEndpoint: outcome.disable)
    }

    /// The endpoint's opened keys, opened once per endpoint row (not per event) while the
    /// previous secret's time does not run out.
    private func signingKeys(of endpoint: WebhookEndpoint, at now: Date) throws -> [[UInt8]] {
        if let cached = state.withLock({ $0.keys[endpoint.id] }), cached.endpoint == endpoint, now < cached.until {
            return cached.keys
        }
        let keys = try endpoints.signingKeys(of: endpoint, at: now)
        var until = Date.distantFuture
        if let previous = endpoint.previousSecretUntil, previous > now { until = previous }
        state.withLock { $0.keys[endpoint.id] = SigningKeys(endpoint: endpoint, keys: keys, until: until) }
        return keys
    }

    struct Outcome: Equatable {
        var status: Int?
        var response: String
        var next: WebhookAttemptResult.Next
        var disable: String?
        var metric: String
    }

    /// What an answer means: 2xx done; 410 Gone disables the endpoint; anything else is retried
    /// on the schedule (no sooner than a 429's or 503's `Retry-After`) until it runs out, and an
    /// endpoint failing for five days is disabled.
    static func decide(
        _ result: Result<HTTPClientResponse, HTTPClientError>, attemptsBefore: Int, endpoint: WebhookEndpoint,
        now: Date, jitter: Double
    ) -> Outcome {
        var status: Int?
        var response: String
        var retryAfter: TimeInterval?
        var refused = false
        switch result {
        case .success(let answer):
            status = answer.status
            response = String(decoding: answer.body.prefix(keptResponseBytes), as: UTF8.self)
            if (200..<300).contains(answer.status) {
                return Outcome(status: answer.status, response: response, next: .delivered, metric: "delivered")
            }
            if answer.status == 410 {
                return Outcome(
                    status: 410, response: response, next: .failed, disable: "the endpoint answered 410 Gone",
                    metric: "failed")
            }
            if answer.status == 429 || answer.status == 503, let header = answer.header("retry-after") {
                retryAfter = parseRetryAfter(header, now: now)
            }
        case .failure(let error):
            response = error.description
            refused = error.code == "AddressRefused"
        }
        let failingSince = endpoint.failingSince ?? now
        if now.timeIntervalSince(failingSince) >= disableAfter {
            return Outcome(
                status: status, response: response, next: .failed,
                disable: "the endpoint failed every attempt for 5 days", metric: "failed")
        }
        guard attemptsBefore < retrySchedule.count else {
            return Outcome(status: status, response: response, next: .failed, metric: refused ? "refused" : "failed")
        }
        var delay = retrySchedule[attemptsBefore] * jitter
        if let retryAfter { delay = max(delay, min(retryAfter, 86_400)) }
        return Outcome(
            status: status, response: response, next: .retry(at: now.addingTimeInterval(delay)),
            metric: refused ? "refused" : "retry")
    }

    /// Seconds, or an HTTP date.
    static func parseRetryAfter(_ text: String, now: Date) -> TimeInterval? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return TimeInterval(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: trimmed).map { max(0, $0.timeIntervalSince(now)) }
    }
}
