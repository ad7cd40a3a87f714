import Foundation
import Logging
import Synchronization
import TuisongAPNs
import TuisongCore
import TuisongCrypto

/// Sends pushes through one APNs pool per (credential, environment), opened on first use.
/// Credentials are looked up per (app, environment, device selector) and cached briefly; a failing credential
/// holds its deliveries instead of sending.
final class APNsPushSender: PushSender {
    struct Endpoints: Sendable {
        var production: APNsEndpoint
        var sandbox: APNsEndpoint
        var caFile: String?
        var extraCACertificates: [Certificate]

        func endpoint(_ environment: APNsEnvironment) -> APNsEndpoint {
            environment == .production ? production : sandbox
        }
    }

    /// The credential an app without its own uses in local mode (the bundled mock's key).
    struct Fallback: Sendable {
        var material: APNsCredentialMaterial
    }

    private struct PoolKey: Hashable {
        var appID: Int64  // 0 for the local-mode fallback, shared by every app
        var credentialID: Int64  // 0 = the local-mode fallback
        var environment: APNsEnvironment
    }

    /// Devices of one app, environment and credential selector reach APNs the same way.
    private struct RouteKey: Hashable {
        var appID: Int64
        var environment: APNsEnvironment
        var selector: String?
    }

    /// A looked-up credential and the environment its pushes go to. A class: the hot path
    /// copies only a reference per send, not the record with its sealed secret.
    private final class Resolved: Sendable {
        let credential: CredentialRecord?
        /// The device's environment, or the credential's when only a credential of the other
        /// environment carries the device's selector.
        let environment: APNsEnvironment
        /// Why nothing can be sent (a selector naming no credential).
        let refusal: String?
        let expires: Date

        init(credential: CredentialRecord?, environment: APNsEnvironment, refusal: String? = nil, expires: Date) {
            self.credential = credential
            self.environment = environment
            self.refusal = refusal
            self.expires = expires
        }
    }

    /// The hold reason of a device whose credential selector names none of the app's credentials.
    static let noCredentialForSelector = "no_credential_for_selector"

    let credentials: CredentialService
    let store: any CredentialStore
    let endpoints: Endpoints
    let poolSettings: GatewayConfig.APNs
    let fallback: Fallback?
    let clock: any Clock
    let logger: Logger
    private let pools = Mutex<[PoolKey: APNsConnectionPool]>([:])
    private let resolved = Mutex<[RouteKey: Resolved]>([:])

    init(
        credentials: CredentialService, store: any CredentialStore, endpoints: Endpoints,
        poolSettings: GatewayConfig.APNs,
        fallback: Fallback?, clock: any Clock, logger: Logger
    ) {
        self.credentials = credentials
        self.store = store
        self.endpoints = endpoints
        self.poolSettings = poolSettings
        self.fallback = fallback
        self.clock = clock
        self.logger = logger
        // Off the start-up path, before the first push needs it.
        Task.detached(priority: .utility) {
            APNsCredentialMaterial.prepareTokenContext(
                caFile: endpoints.caFile, extraCACertificates: endpoints.extraCACertificates)
        }
    }

    /// Each open pool's statistics (for metrics, read at scrape time).
    func poolStatistics() -> [(credentialID: Int64, environment: APNsEnvironment, statistics: PoolStatistics)] {
        pools.withLock { Array($0) }.map { ($0.key.credentialID, $0.key.environment, $0.value.statistics) }
    }

    /// Forget an app's cached credentials (one was added, deleted or fixed) and close the pools
    /// of its credentials that no longer exist: nothing would send through them again, and
    /// they would keep their APNs connections open.
    func credentialsChanged(appID: Int64) async {
        resolved.withLock { cache in cache = cache.filter { $0.key.appID != appID } }
        let remaining: Set<Int64>
        do {
            remaining = Set(try await store.credentials(appID: appID).map(\.id))
        } catch {
            logger.error("cannot list the credentials of app \(appID) to close unused pools: \(error)")
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

    /// How many APNs pools are open (for tests and diagnostics).
    var openPoolCount: Int { pools.withLock { $0.count } }

    /// Where an (app, environment, selector)'s pushes go now, or why they cannot go anywhere.
    private enum Route {
        case pool(APNsConnectionPool, credential: CredentialRecord?)
        case refused(SendOutcome)
    }

    func send(app: App, message: MessageRecord, token: String, environment: APNsEnvironment) async -> SendOutcome {
        await send(app: app, message: message, token: token, environment: environment, selector: nil, payload: nil)
    }

    /// Opens the pool of the app's default credential for `environment`; devices with a
    /// credential selector open theirs on their first send.
    func prepare(app: App, environment: APNsEnvironment?) async {
        if case .pool(let pool, _) = await route(app: app, environment: environment ?? .production, selector: nil) {
            pool.connect()
        }
    }

    func send(
        app: App, message: MessageRecord, token: String, environment: APNsEnvironment, selector: String?,
        payload: [UInt8]?
    ) async -> SendOutcome {
        let pool: APNsConnectionPool
        let credential: CredentialRecord?
        switch await route(app: app, environment: environment, selector: selector) {
        case .refused(let outcome): return outcome
        case .pool(let found, let foundCredential): (pool, credential) = (found, foundCredential)
        }
        var request = Self.request(message, app: app)
        request.deviceToken = token
        if let payload { request.payload = payload }
        let result: Result<APNsResponse, APNsTransportError>
        do {
            result = .success(try await pool.send(request))
        } catch {
            result = .failure(error)
        }
        let (outcome, failingReason) = Self.outcome(of: result)
        if let failingReason, let credential { await markFailing(credential, reason: failingReason) }
        return outcome
    }

    func send(
        app: App, message: MessageRecord, environment: APNsEnvironment, tokens: [String],
        report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        await send(
            app: app, message: message, environment: environment, selector: nil, tokens: tokens, payloads: nil,
            report: report)
    }

    /// The credential, pool, topic and headers are resolved once for the whole batch; the pool
    /// gets every request in one hand-off and answers on its thread, where the outcomes are
    /// classified and reported.
    func send(
        app: App, message: MessageRecord, environment: APNsEnvironment, selector: String?, tokens: [String],
        payloads: [[UInt8]?]?, report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        guard !tokens.isEmpty else { return }
        let pool: APNsConnectionPool
        let credential: CredentialRecord?
        switch await route(app: app, environment: environment, selector: selector) {
        case .refused(let outcome):
            report(tokens.indices.map { SendReport(index: $0, outcome: outcome) })
            return
        case .pool(let found, let foundCredential): (pool, credential) = (found, foundCredential)
        }
        let template = Self.request(message, app: app)
        var requests: [APNsRequest] = []
        requests.reserveCapacity(tokens.count)
        for (index, token) in tokens.enumerated() {
            var request = template
            request.deviceToken = token
            if let payloads, let own = payloads[index] { request.payload = own }
            requests.append(request)
        }
        pool.send(requests) { [self] answers in
            var reports: [SendReport] = []
            reports.reserveCapacity(answers.count)
            var failingReason: String?
            for answer in answers {
                let (outcome, failing) = Self.outcome(of: answer.result)
                if let failing { failingReason = failing }
                reports.append(SendReport(index: answer.index, outcome: outcome))
            }
            guard let failingReason, let credential else {
                report(reports)
                return
            }
            // Off the pool's thread: the credential is marked failing (a database write) before
            // these held deliveries are reported, as a single send does.
            Task {
                await markFailing(credential, reason: failingReason)
                report(reports)
            }
        }
    }

    private func route(app: App, environment: APNsEnvironment, selector: String?) async -> Route {
        let resolved: Resolved
        do {
            resolved = try await resolve(appID: app.id, environment: environment, selector: selector)
        } catch {
            return .refused(.retry(reason: "CredentialLookupFailed", after: .seconds(1)))
        }
        if let refusal = resolved.refusal { return .refused(.held(reason: refusal)) }
        let credential = resolved.credential
        if let credential, credential.isFailing {
            return .refused(.held(reason: credential.statusReason ?? "CredentialFailing"))
        }
        if credential == nil, fallback == nil { return .refused(.held(reason: "NoCredential")) }
        do {
            return .pool(
                try pool(for: credential, appID: app.id, environment: resolved.environment), credential: credential)
        } catch {
            logger.error("cannot open an APNs pool for app \(app.id) \(resolved.environment.rawValue): \(error)")
            if let credential { await markFailing(credential, reason: "CredentialUnusable") }
            return .refused(.held(reason: "CredentialUnusable"))
        }
    }

    /// The message's request with an empty device token, to be filled in per device.
    private static func request(_ message: MessageRecord, app: App) -> APNsRequest {
        let options = message.options
        return APNsRequest(
            deviceToken: "", pushType: options.pushType.rawValue,
            topic: options.pushType.topic(forBundleID: app.bundleID), priority: options.priority?.rawValue,
            expiration: options.expiration.map { Int($0.timeIntervalSince1970) }, collapseID: options.collapseID,
            // No apns-id of our own: APNs assigns one and returns it (a UUID per push cost a
            // /dev/urandom read and a format call).
            apnsID: nil, payload: message.payload)
    }

    /// What an answer means for the device, and the reason to mark the credential failing when
    /// APNs refused the credential itself.
    private static func outcome(of result: Result<APNsResponse, APNsTransportError>) -> (SendOutcome, failing: String?)
    {
        let response: APNsResponse
        switch result {
        case .success(let answered): response = answered
        case .failure(let error) where error.code == .certificateRejected:
            // APNs refused the client certificate in the TLS handshake: the certificate-auth
            // form of 403 BadCertificate, and as permanent.
            return (.held(reason: APNsReason.badCertificate.description), APNsReason.badCertificate.description)
        case .failure(let error): return (.retry(reason: "Transport\(error.code)", after: nil), nil)
        }
        switch APNsOutcome.classify(status: response.status, reason: response.reason, timestamp: response.timestamp) {
        case .delivered:
            return (.delivered(apnsID: response.apnsID), nil)
        case .invalidateDevice(let reason, let since):
            return (.invalidate(reason: reason.description, since: since), nil)
        case .retry(let reason, let after):
            return (.retry(reason: reason.description, after: after), nil)
        case .refreshProviderToken:
            // The pool already refreshed the token and retried once; try again later.
            return (.retry(reason: "ExpiredProviderToken", after: .seconds(1)), nil)
        case .credentialFailing(let reason):
            return (.held(reason: reason.description), reason.description)
        case .failed(let reason):
            return (.failed(reason: reason.description), nil)
        }
    }

    /// The credential of a device with `selector` in `environment`: with a selector, the
    /// app's newest credential carrying it in the device's environment, else in the other
    /// environment (whose endpoint is then used: the credential implies it); no such
    /// credential holds the device. Without a selector, the app's default credential.
    private func resolve(appID: Int64, environment: APNsEnvironment, selector: String?) async throws -> Resolved {
        let key = RouteKey(appID: appID, environment: environment, selector: selector)
        let now = clock.now
        if let hit = resolved.withLock({ $0[key] }), hit.expires > now { return hit }
        let expires = now.addingTimeInterval(5)
        let found: Resolved
        if let selector {
            let matching = try await store.credentials(appID: appID).filter { $0.selector == selector }
            if let own = matching.last(where: { $0.environment == environment }) {
                found = Resolved(credential: own, environment: environment, expires: expires)
            } else if let other = matching.last {
                found = Resolved(credential: other, environment: other.environment, expires: expires)
            } else {
                found = Resolved(
                    credential: nil, environment: environment, refusal: Self.noCredentialForSelector, expires: expires)
            }
        } else {
            let credential = try await store.activeCredential(appID: appID, environment: environment)
            found = Resolved(credential: credential, environment: environment, expires: expires)
        }
        resolved.withLock { $0[key] = found }
        return found
    }

    private func pool(for credential: CredentialRecord?, appID: Int64, environment: APNsEnvironment) throws
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
            throw CredentialError(.notFound, "no credential")
        }
        var configuration = APNsConnectionPool.Configuration(endpoint: endpoints.endpoint(environment))
        configuration.connections = poolSettings.connections
        configuration.connectTimeout = .seconds(poolSettings.connectTimeoutSeconds)
        configuration.requestTimeout = .seconds(poolSettings.requestTimeoutSeconds)
        configuration.caFile = endpoints.caFile
        configuration.extraCACertificates = endpoints.extraCACertificates
        configuration.tokenRefreshInterval = .seconds(poolSettings.tokenRefreshMinutes * 60)
        let created = try APNsConnectionPool(
            configuration: configuration, credential: material, clock: clock, logger: logger)
        let (pool, loser) = pools.withLock { pools -> (APNsConnectionPool, APNsConnectionPool?) in
            if let existing = pools[key] { return (existing, created) }
            pools[key] = created
            return (created, nil)
        }
        if let loser { Task { await loser.shutdown() } }
        return pool
    }

    private func markFailing(_ credential: CredentialRecord, reason: String) async {
        let now = clock.now
        let alreadyMarked = resolved.withLock { cache -> Bool in
            cache.values.contains { cached in
                guard cached.expires > now, let marked = cached.credential else { return false }
                return marked.id == credential.id && marked.isFailing && marked.statusReason == reason
            }
        }
        // Every answer of a batch on a refused credential says the same; one write is enough.
        if alreadyMarked { return }
        logger.error(
            "APNs refused credential \(credential.id) of app \(credential.appID) (\(credential.environment.rawValue)): \(reason); holding its deliveries"
        )
        do {
            try await store.setCredentialStatus(id: credential.id, status: "failing", reason: reason)
        } catch {
            logger.error("cannot mark credential \(credential.id) failing: \(error)")
        }
        var failing = credential
        failing.status = "failing"
        failing.statusReason = reason
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

    func shutdown() async {
        let all = pools.withLock { pools -> [APNsConnectionPool] in
            defer { pools.removeAll() }
            return Array(pools.values)
        }
        for pool in all { await pool.shutdown() }
    }
}
