import Foundation
import Logging
import Synchronization
import TuisongAPNs
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongTransportKit

/// Where an APNs transport gets a credential's key or certificate: the gateway's sealed
/// credential store opens it. Throws when the stored secret cannot be used.
public protocol APNsCredentialSource: Sendable {
    func material(_ record: CredentialRecord) throws -> APNsCredentialMaterial
}

/// How the APNs transport opens its pools (`apns.*` of the config).
public struct APNsPoolSettings: Sendable, Hashable {
    public var connections: Int
    public var connectTimeout: Duration
    public var requestTimeout: Duration
    public var tokenRefreshInterval: Duration

    public init(connections: Int, connectTimeout: Duration, requestTimeout: Duration, tokenRefreshInterval: Duration) {
        self.connections = connections
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.tokenRefreshInterval = tokenRefreshInterval
    }
}

/// Sends pushes through one APNs pool per (credential, environment), opened on first use.
/// Credentials are looked up per (app, environment, device selector) and cached briefly; a failing credential
/// holds its deliveries instead of sending.
public final class APNsPushTransport: PushTransport {
    public struct Endpoints: Sendable {
        public var production: APNsEndpoint
        public var sandbox: APNsEndpoint
        public var caFile: String?
        public var extraCACertificates: [Certificate]

        public init(
            production: APNsEndpoint, sandbox: APNsEndpoint, caFile: String? = nil,
            extraCACertificates: [Certificate] = []
        ) {
            self.production = production
            self.sandbox = sandbox
            self.caFile = caFile
            self.extraCACertificates = extraCACertificates
        }

        public func endpoint(_ environment: PushEnvironment) -> APNsEndpoint {
            environment == .production ? production : sandbox
        }
    }

    /// The credential an app without its own uses in local mode (the bundled mock's key).
    public struct Fallback: Sendable {
        public var material: APNsCredentialMaterial

        public init(material: APNsCredentialMaterial) {
            self.material = material
        }
    }

    private struct PoolKey: Hashable {
        var appID: Int64  // 0 for the local-mode fallback, shared by every app
        var credentialID: Int64  // 0 = the local-mode fallback
        var environment: PushEnvironment
    }

    /// Devices of one app, environment and credential selector reach APNs the same way.
    private struct RouteKey: Hashable {
        var appID: Int64
        var environment: PushEnvironment
        var selector: String?
    }

    /// A looked-up credential and the environment its pushes go to. A class: the hot path
    /// copies only a reference per send, not the record with its sealed secret.
    private final class Resolved: Sendable {
        let credential: CredentialRecord?
        /// The device's environment, or the credential's when only a credential of the other
        /// environment carries the device's selector.
        let environment: PushEnvironment
        /// Why nothing can be sent (a selector naming no credential).
        let refusal: SendReason?
        let expires: Date

        init(credential: CredentialRecord?, environment: PushEnvironment, refusal: SendReason? = nil, expires: Date) {
            self.credential = credential
            self.environment = environment
            self.refusal = refusal
            self.expires = expires
        }
    }

    let credentials: any APNsCredentialSource
    let store: any ChannelCredentialStore
    public let endpoints: Endpoints
    let poolSettings: APNsPoolSettings
    let fallback: Fallback?
    let clock: any Clock
    let logger: Logger
    /// Where the gateway's nodes share APNs provider tokens (nil: each pool signs its own).
    let providerTokens: (any ProviderTokenStore)?
    /// The receipt tokens of the apps that post their own receipts (a custom key beside `aps`).
    let appReceipts: AppReceiptTokens?
    private let pools = Mutex<[PoolKey: APNsConnectionPool]>([:])
    private let resolved = Mutex<[RouteKey: Resolved]>([:])

    /// Builds the token credentials' TLS context ahead of the first pool (`init`).
    private let warmUp: Task<Void, Never>

    public init(
        credentials: any APNsCredentialSource, store: any ChannelCredentialStore, endpoints: Endpoints,
        poolSettings: APNsPoolSettings, fallback: Fallback?, clock: any Clock,
        providerTokens: (any ProviderTokenStore)? = nil, appReceipts: AppReceiptTokens? = nil, logger: Logger
    ) {
        self.appReceipts = appReceipts
        self.providerTokens = providerTokens
        self.credentials = credentials
        self.store = store
        self.endpoints = endpoints
        self.poolSettings = poolSettings
        self.fallback = fallback
        self.clock = clock
        self.logger = logger
        // Off the start-up path, before the first push needs it. Kept, so that `shutdown` waits
        // for it: a process that exits while it is inside OpenSSL (a CLI's one probe, a gateway
        // stopped at once) crashed in OpenSSL's exit-time clean-up.
        warmUp = Task.detached(priority: .utility) {
            APNsCredentialMaterial.prepareTokenContext(
                caFile: endpoints.caFile, extraCACertificates: endpoints.extraCACertificates)
        }
    }

    /// Each open pool's statistics (for metrics, read at scrape time).
    public func poolStatistics() -> [(credentialID: Int64, environment: PushEnvironment, statistics: PoolStatistics)] {
        pools.withLock { Array($0) }.map { ($0.key.credentialID, $0.key.environment, $0.value.statistics) }
    }

    /// Forget an app's cached credentials (one was added, deleted or fixed) and close the pools
    /// of its credentials that no longer exist: nothing would send through them again, and
    /// they would keep their APNs connections open.
    public func credentialsChanged(appID: Int64) async {
        resolved.withLock { cache in cache = cache.filter { $0.key.appID != appID } }
        let remaining: Set<Int64>
        do {
            remaining = Set(try await store.credentials(appID: appID).map(\.id))
        } catch {
            logger.error(
                "cannot list an app's credentials to close unused pools",
                metadata: ["app": "\(appID)", "error": "\(error)"])
            return
        }
        let closed = pools.withLock { pools -> [APNsConnectionPool] in
            let gone = pools.keys.filter {
                $0.appID == appID && $0.credentialID != 0 && !remaining.contains($0.credentialID)
            }
            return gone.compactMap { pools.removeValue(forKey: $0) }
        }
        for pool in closed { await pool.shutdown() }
    }

    /// Whether pushes of the route could be sent now with a stored credential (looked up again,
    /// not cached; the cache keeps what was found): what ends a hold. Local mode's fallback
    /// does not: its pushes are held only when the mock refused it.
    public func canSend(appID: Int64, environment: PushEnvironment, selector: String?) async -> Bool {
        guard let found = try? await resolve(appID: appID, environment: environment, selector: selector, cached: false),
            found.refusal == nil, let credential = found.credential
        else { return false }
        return !credential.isFailing
    }

    /// How many APNs pools are open (for tests and diagnostics).
    public var openPoolCount: Int { pools.withLock { $0.count } }

    /// Where an (app, environment, selector)'s pushes go now, or why they cannot go anywhere.
    private enum Route {
        case pool(APNsConnectionPool, credential: CredentialRecord?)
        case refused(SendOutcome)
    }

    /// Opens the pool of the app's default credential for `environment`; devices with a
    /// credential selector open theirs on their first send.
    public func prepare(app: App, environment: PushEnvironment?) async {
        if case .pool(let pool, _) = await route(app: app, environment: environment ?? .production, selector: nil) {
            pool.connect()
        }
    }

    /// Pushes of one environment and selector share a credential and pool, resolved once;
    /// each group's requests go to its pool in one hand-off, answered on the pool's thread,
    /// where the outcomes are classified and reported. A batch is usually one group (the
    /// engine groups a page by route), found without hashing every push.
    /// Content APNs would refuse for every device (over the push type's limit, not JSON).
    public func check(_ content: PushContent, options: PushOptions) throws {
        _ = try APNsPayload.build(content, pushType: options.pushType)
    }

    public func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async {
        let pushes = batch.pushes
        guard let first = pushes.first else { return }
        if pushes.allSatisfy({ $0.environment == first.environment && $0.selector == first.selector }) {
            await send(
                pushes, indices: nil, app: batch.app, environment: first.environment, selector: first.selector,
                report: report)
            return
        }
        var groups: [RouteKey: [Int]] = [:]
        for (index, push) in pushes.enumerated() {
            groups[RouteKey(appID: batch.app.id, environment: push.environment, selector: push.selector), default: []]
                .append(index)
        }
        for (key, indices) in groups {
            await send(
                indices.map { pushes[$0] }, indices: indices, app: batch.app, environment: key.environment,
                selector: key.selector, report: report)
        }
    }

    /// Sends pushes of one route; `indices` maps their positions back to the batch's (nil: the
    /// same positions).
    private func send(
        _ pushes: [OutgoingPush], indices: [Int]?, app: App, environment: PushEnvironment, selector: String?,
        report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        @Sendable func position(_ index: Int) -> Int { indices.map { $0[index] } ?? index }
        let pool: APNsConnectionPool
        let credential: CredentialRecord?
        switch await route(app: app, environment: environment, selector: selector) {
        case .refused(let outcome):
            report(pushes.indices.map { SendReport(index: position($0), outcome: outcome) })
            return
        case .pool(let found, let foundCredential): (pool, credential) = (found, foundCredential)
        }
        var templateHeaders = pushes[0].headers
        var template = Self.request(templateHeaders, app: app)
        var requests: [APNsRequest] = []
        requests.reserveCapacity(pushes.count)
        // The pushes sent, by position in `pushes`, once one was refused (nil: all, in order).
        var sentIndices: [Int]?
        var refused: [SendReport] = []
        // The pushes of a message share one content: its bytes are looked up once per run of it.
        var lastContent: SharedContent?
        var lastPayload: [UInt8] = []
        for (index, push) in pushes.enumerated() {
            if push.headers != templateHeaders {
                templateHeaders = push.headers
                template = Self.request(templateHeaders, app: app)
            }
            // Rendered once per content: the pushes of a message share it.
            if lastContent !== push.content {
                lastContent = push.content
                lastPayload = push.content.rendered(for: .apns, APNsPayload.render)
            }
            var payload = lastPayload
            if let receiptToken = appReceipts?.token(for: push, app: app) {
                payload = Self.payload(payload, carrying: receiptToken)
            }
            if payload.count > push.headers.pushType.apnsPayloadLimit {
                if sentIndices == nil { sentIndices = Array(0..<index) }
                refused.append(SendReport(index: position(index), outcome: .failed(.payloadTooLarge)))
                continue
            }
            sentIndices?.append(index)
            var request = template
            request.deviceToken = push.token
            request.payload = payload
            requests.append(request)
        }
        if !refused.isEmpty { report(refused) }
        guard !requests.isEmpty else { return }
        let sent = sentIndices
        pool.send(requests) { [self] answers in
            var reports: [SendReport] = []
            reports.reserveCapacity(answers.count)
            var failingReason: SendReason?
            for answer in answers {
                let (outcome, failing) = Self.outcome(of: answer.result)
                if let failing { failingReason = failing }
                let index = sent.map { $0[answer.index] } ?? answer.index
                reports.append(SendReport(index: position(index), outcome: outcome))
            }
            guard let failingReason, let credential else {
                report(reports)
                return
            }
            // Off the pool's thread: the credential is marked failing (a database write) before
            // these held deliveries are reported.
            Task {
                await markFailing(credential, reason: failingReason)
                report(reports)
            }
        }
    }

    private func route(app: App, environment: PushEnvironment, selector: String?) async -> Route {
        let resolved: Resolved
        do {
            resolved = try await resolve(appID: app.id, environment: environment, selector: selector)
        } catch {
            return .refused(.retry(.credentialLookupFailed, after: .seconds(1)))
        }
        if let refusal = resolved.refusal { return .refused(.held(refusal)) }
        let credential = resolved.credential
        if let credential, credential.isFailing {
            return .refused(.held(credential.statusReason.map(SendReason.init) ?? .credentialFailing))
        }
        if credential == nil, fallback == nil { return .refused(.held(.noCredential)) }
        do {
            return .pool(
                try await pool(for: credential, appID: app.id, environment: resolved.environment),
                credential: credential)
        } catch {
            logger.error(
                "cannot open an APNs pool",
                metadata: ["app": "\(app.id)", "environment": "\(resolved.environment.rawValue)", "error": "\(error)"])
            if let credential { await markFailing(credential, reason: .credentialUnusable) }
            return .refused(.held(.credentialUnusable))
        }
    }

    /// The message's rendered payload with the app's receipt token as a custom key beside
    /// `aps` (`{"tuisong_receipt":"…",…}`): written into the shared bytes after the opening
    /// brace, so the message is still rendered once per message, not per device.
    static func payload(_ payload: [UInt8], carrying token: String) -> [UInt8] {
        guard payload.first == UInt8(ascii: "{") else { return payload }
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(payload.count + token.utf8.count + 24)
        out.append(contentsOf: JSONValue.string(AppReceiptTokens.key).serialized())
        out.append(UInt8(ascii: ":"))
        out.append(contentsOf: JSONValue.string(token).serialized())
        if payload.count > 2 { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: payload.dropFirst())
        return out
    }

    /// A request with `headers`, to be given each device's token and payload.
    private static func request(_ headers: PushHeaders, app: App) -> APNsRequest {
        APNsRequest(
            deviceToken: "", pushType: headers.pushType.rawValue,
            topic: headers.pushType.topic(forBundleID: app.bundleID), priority: headers.priority?.rawValue,
            expiration: headers.expiration.map { Int($0.timeIntervalSince1970) }, collapseID: headers.collapseID,
            // No apns-id of our own: APNs assigns one and returns it (a UUID per push cost a
            // /dev/urandom read and a format call).
            apnsID: nil, payload: [])
    }

    /// What an answer means for the device, and the reason to mark the credential failing when
    /// APNs refused the credential itself.
    private static func outcome(of result: Result<APNsResponse, APNsTransportError>) -> (
        SendOutcome, failing: SendReason?
    ) {
        let response: APNsResponse
        switch result {
        case .success(let answered): response = answered
        case .failure(let error) where error.code == .certificateRejected:
            // APNs refused the client certificate in the TLS handshake: the certificate-auth
            // form of 403 BadCertificate, and as permanent.
            return (.held(.apns(.badCertificate)), .apns(.badCertificate))
        case .failure(let error): return (.retry(.transport("\(error.code)"), after: nil), nil)
        }
        switch APNsOutcome.classify(status: response.status, reason: response.reason, timestamp: response.timestamp) {
        case .delivered:
            return (.delivered(serviceMessageID: response.apnsID), nil)
        case .invalidateDevice(let reason, let since):
            return (.invalidate(.apns(reason), since: since), nil)
        case .retry(let reason, let after):
            return (.retry(.apns(reason), after: after), nil)
        case .refreshProviderToken:
            // The pool already refreshed the token and retried once; try again later.
            return (.retry(.apns(.expiredProviderToken), after: .seconds(1)), nil)
        case .credentialFailing(let reason):
            return (.held(.apns(reason)), .apns(reason))
        case .failed(let reason):
            return (.failed(.apns(reason)), nil)
        }
    }

    /// The credential of a device with `selector` in `environment`: with a selector, the
    /// app's newest credential carrying it serving the device's environment (its own, or both:
    /// a `.p8` key, a universal certificate), else in the other
    /// environment (whose endpoint is then used: the credential implies it); no such
    /// credential holds the device. Without a selector, the app's default credential.
    private func resolve(appID: Int64, environment: PushEnvironment, selector: String?, cached: Bool = true)
        async throws -> Resolved
    {
        let key = RouteKey(appID: appID, environment: environment, selector: selector)
        let now = clock.now
        if cached, let hit = resolved.withLock({ $0[key] }), hit.expires > now { return hit }
        let expires = now.addingTimeInterval(5)
        let found: Resolved
        if let selector {
            let matching = try await store.credentials(appID: appID).filter {
                $0.channel == .apns && $0.selector == selector
            }
            // A working credential before a failing one (as `activeCredential` orders them): one
            // the service refused does not replace one that works.
            func newest(_ candidates: [CredentialRecord]) -> CredentialRecord? {
                candidates.last { !$0.isFailing } ?? candidates.last
            }
            if let own = newest(matching.filter { $0.serves(environment) }) {
                found = Resolved(credential: own, environment: environment, expires: expires)
            } else if let other = newest(matching) {
                found = Resolved(credential: other, environment: other.environment, expires: expires)
            } else {
                found = Resolved(
                    credential: nil, environment: environment, refusal: .noCredentialForSelector, expires: expires)
            }
        } else {
            let credential = try await store.activeCredential(appID: appID, channel: .apns, environment: environment)
            found = Resolved(credential: credential, environment: environment, expires: expires)
        }
        resolved.withLock { $0[key] = found }
        return found
    }

    private func pool(for credential: CredentialRecord?, appID: Int64, environment: PushEnvironment) async throws
        -> APNsConnectionPool
    {
        let key = PoolKey(
            appID: credential == nil ? 0 : appID, credentialID: credential?.id ?? 0, environment: environment)
        if let pool = pools.withLock({ $0[key] }) { return pool }
        let material: APNsCredentialMaterial
        if let credential {
            material = try credentials.material(credential)
        } else if let fallback {
            material = fallback.material
        } else {
            throw NoCredentialError()
        }
        var configuration = APNsConnectionPool.Configuration(endpoint: endpoints.endpoint(environment))
        configuration.connections = poolSettings.connections
        configuration.connectTimeout = poolSettings.connectTimeout
        configuration.requestTimeout = poolSettings.requestTimeout
        configuration.caFile = endpoints.caFile
        configuration.extraCACertificates = endpoints.extraCACertificates
        configuration.tokenRefreshInterval = poolSettings.tokenRefreshInterval
        let created = try APNsConnectionPool(
            configuration: configuration, credential: material, clock: clock, providerTokens: providerTokens,
            logger: logger)
        // The token the other nodes use, before the first request would sign one of its own.
        await created.prepareProviderToken()
        let (pool, loser) = pools.withLock { pools -> (APNsConnectionPool, APNsConnectionPool?) in
            if let existing = pools[key] { return (existing, created) }
            pools[key] = created
            return (created, nil)
        }
        if let loser { Task { await loser.shutdown() } }
        return pool
    }

    private func markFailing(_ credential: CredentialRecord, reason: SendReason) async {
        let now = clock.now
        let alreadyMarked = resolved.withLock { cache -> Bool in
            cache.values.contains { cached in
                guard cached.expires > now, let marked = cached.credential else { return false }
                return marked.id == credential.id && marked.isFailing && marked.statusReason == reason.description
            }
        }
        // Every answer of a batch on a refused credential says the same; one write is enough.
        if alreadyMarked { return }
        logger.error(
            "APNs refused a credential; holding its deliveries",
            metadata: [
                "credential": "\(credential.id)", "app": "\(credential.appID)",
                "environment": "\(credential.environment.rawValue)", "reason": "\(reason)",
            ])
        do {
            try await store.setCredentialStatus(id: credential.id, status: "failing", reason: reason.description)
        } catch {
            logger.error(
                "cannot mark a credential failing", metadata: ["credential": "\(credential.id)", "error": "\(error)"])
        }
        var failing = credential
        failing.status = "failing"
        failing.statusReason = reason.description
        let expires = clock.now.addingTimeInterval(5)
        // Every route that resolved to this credential now sees it failing; the default route
        // of its environment too, should it not have been looked up yet.
        resolved.withLock { cache in
            for (key, cached) in cache where cached.credential?.id == credential.id {
                cache[key] = Resolved(credential: failing, environment: cached.environment, expires: expires)
            }
            if credential.selector == nil {
                let key = RouteKey(appID: credential.appID, environment: credential.environment, selector: nil)
                cache[key] = Resolved(credential: failing, environment: credential.environment, expires: expires)
                // A key serving both environments: the other's default route too, unless it is
                // already known to go elsewhere.
                for other in credential.environments where other != credential.environment {
                    let otherKey = RouteKey(appID: credential.appID, environment: other, selector: nil)
                    if cache[otherKey] == nil {
                        cache[otherKey] = Resolved(credential: failing, environment: other, expires: expires)
                    }
                }
            }
        }
        // Nothing is routed to the refused credential's pools any more; without this they
        // would keep reconnecting to APNs with it. A later send opens a new pool if the
        // credential is made active again.
        let refused = pools.withLock { pools -> [APNsConnectionPool] in
            let keys = pools.keys.filter { $0.credentialID == credential.id }
            return keys.compactMap { pools.removeValue(forKey: $0) }
        }
        // Not awaited: the caller reports its held deliveries meanwhile.
        for pool in refused { Task { await pool.shutdown() } }
    }

    public func shutdown() async {
        await warmUp.value
        let all = pools.withLock { pools -> [APNsConnectionPool] in
            defer { pools.removeAll() }
            return Array(pools.values)
        }
        for pool in all { await pool.shutdown() }
    }
}

/// The local-mode fallback is absent and the app has no credential.
private struct NoCredentialError: Error, CustomStringConvertible {
    var description: String { "no credential" }
}

extension SendReason {
    /// APNs's own reason, as the delivery pipeline keeps every service's: verbatim.
    static func apns(_ reason: APNsReason) -> SendReason { .service(reason.description) }
}
