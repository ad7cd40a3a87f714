import Foundation
import Logging
import Synchronization
import TuisongAPNs
import TuisongCore
import TuisongCrypto

/// Sends pushes through one APNs pool per (credential, environment), opened on first use.
/// Credentials are looked up per (app, environment) and cached briefly; a failing credential
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
        var credentialID: Int64  // 0 = the local-mode fallback
        var environment: APNsEnvironment
    }

    private struct AppEnvironment: Hashable {
        var appID: Int64
        var environment: APNsEnvironment
    }

    private struct Resolved {
        var credential: CredentialRecord?
        var expires: Date
    }

    let credentials: CredentialService
    let store: any CredentialStore
    let endpoints: Endpoints
    let poolSettings: GatewayConfig.APNs
    let fallback: Fallback?
    let clock: any Clock
    let logger: Logger
    private let pools = Mutex<[PoolKey: APNsConnectionPool]>([:])
    private let resolved = Mutex<[AppEnvironment: Resolved]>([:])

    init(
        credentials: CredentialService, store: any CredentialStore, endpoints: Endpoints, poolSettings: GatewayConfig.APNs,
        fallback: Fallback?, clock: any Clock, logger: Logger
    ) {
        self.credentials = credentials
        self.store = store
        self.endpoints = endpoints
        self.poolSettings = poolSettings
        self.fallback = fallback
        self.clock = clock
        self.logger = logger
    }

    /// Forget an app's cached credential (one was added, deleted or fixed) and close pools of
    /// credentials that no longer exist.
    func credentialsChanged(appID: Int64) async {
        resolved.withLock { cache in cache = cache.filter { $0.key.appID != appID } }
    }

    func send(app: App, message: MessageRecord, token: String, environment: APNsEnvironment) async -> SendOutcome {
        let credential: CredentialRecord?
        do {
            credential = try await activeCredential(appID: app.id, environment: environment)
        } catch {
            return .retry(reason: "CredentialLookupFailed", after: .seconds(1))
        }
        if let credential, credential.isFailing {
            return .held(reason: credential.statusReason ?? "CredentialFailing")
        }
        if credential == nil, fallback == nil { return .held(reason: "NoCredential") }
        let pool: APNsConnectionPool
        do {
            pool = try self.pool(for: credential, environment: environment)
        } catch {
            logger.error("cannot open an APNs pool for app \(app.id) \(environment.rawValue): \(error)")
            if let credential { await markFailing(credential, reason: "CredentialUnusable") }
            return .held(reason: "CredentialUnusable")
        }
        let options = message.options
        let request = APNsRequest(
            deviceToken: token, pushType: options.pushType.rawValue,
            topic: options.pushType.topic(forBundleID: app.bundleID), priority: options.priority?.rawValue,
            expiration: options.expiration.map { Int($0.timeIntervalSince1970) }, collapseID: options.collapseID,
            apnsID: UUID().uuidString.lowercased(), payload: message.payload)
        let response: APNsResponse
        do {
            response = try await pool.send(request)
        } catch {
            return .retry(reason: "Transport\(error.code)", after: nil)
        }
        switch APNsOutcome.classify(status: response.status, reason: response.reason, timestamp: response.timestamp) {
        case .delivered:
            return .delivered(apnsID: response.apnsID)
        case .invalidateDevice(let reason, let since):
            return .invalidate(reason: reason.description, since: since)
        case .retry(let reason, let after):
            return .retry(reason: reason.description, after: after)
        case .refreshProviderToken:
            // The pool already refreshed the token and retried once; try again later.
            return .retry(reason: "ExpiredProviderToken", after: .seconds(1))
        case .credentialFailing(let reason):
            if let credential { await markFailing(credential, reason: reason.description) }
            return .held(reason: reason.description)
        case .failed(let reason):
            return .failed(reason: reason.description)
        }
    }

    private func activeCredential(appID: Int64, environment: APNsEnvironment) async throws -> CredentialRecord? {
        let key = AppEnvironment(appID: appID, environment: environment)
        let now = clock.now
        if let hit = resolved.withLock({ $0[key] }), hit.expires > now { return hit.credential }
        let credential = try await store.activeCredential(appID: appID, environment: environment)
        resolved.withLock { $0[key] = Resolved(credential: credential, expires: now.addingTimeInterval(5)) }
        return credential
    }

    private func pool(for credential: CredentialRecord?, environment: APNsEnvironment) throws -> APNsConnectionPool {
        let key = PoolKey(credentialID: credential?.id ?? 0, environment: environment)
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
        let created = try APNsConnectionPool(configuration: configuration, credential: material, clock: clock, logger: logger)
        let (pool, loser) = pools.withLock { pools -> (APNsConnectionPool, APNsConnectionPool?) in
            if let existing = pools[key] { return (existing, created) }
            pools[key] = created
            return (created, nil)
        }
        if let loser { Task { await loser.shutdown() } }
        return pool
    }

    private func markFailing(_ credential: CredentialRecord, reason: String) async {
        logger.error("APNs refused credential \(credential.id) of app \(credential.appID) (\(credential.environment.rawValue)): \(reason); holding its deliveries")
        do {
            try await store.setCredentialStatus(id: credential.id, status: "failing", reason: reason)
        } catch {
            logger.error("cannot mark credential \(credential.id) failing: \(error)")
        }
        resolved.withLock { cache in
            let key = AppEnvironment(appID: credential.appID, environment: credential.environment)
            var failing = credential
            failing.status = "failing"
            failing.statusReason = reason
            cache[key] = Resolved(credential: failing, expires: clock.now.addingTimeInterval(5))
        }
    }

    func shutdown() async {
        let all = pools.withLock { pools -> [APNsConnectionPool] in
            defer { pools.removeAll() }
            return Array(pools.values)
        }
        for pool in all { await pool.shutdown() }
    }
}
