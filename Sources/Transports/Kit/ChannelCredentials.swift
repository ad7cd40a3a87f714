import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongDelivery

/// Opens a stored Android credential's sealed secret (the gateway's master key does). Throws
/// when the secret cannot be opened (another master key, a corrupted row).
public protocol ChannelSecretOpener: Sendable {
    func secret(of record: ChannelCredentialRecord) throws -> [UInt8]
}

/// An Android credential ready to sign in with: the stored record's public parts and its
/// opened secret (a service-account JSON, an OAuth client secret, an app secret).
/// Only ever in memory.
public struct ChannelCredential: Sendable, Hashable {
    /// The stored credential's id; 0 for local mode's fallback, which has no row.
    public var id: Int64
    public var channel: PushChannel
    /// The service's project or app id.
    public var vendorAppID: String
    /// The service account's `client_email`, the OAuth client id.
    public var clientID: String
    public var secret: [UInt8]
    /// The credential's settings that are not secret (`badge_class`).
    public var options: [String: String]

    public init(
        id: Int64, channel: PushChannel, vendorAppID: String, clientID: String, secret: [UInt8],
        options: [String: String] = [:]
    ) {
        self.id = id
        self.options = options
        self.channel = channel
        self.vendorAppID = vendorAppID
        self.clientID = clientID
        self.secret = secret
    }
}

/// Finds the credential an Android transport sends an app's pushes with, caches it briefly,
/// and marks it failing when the service refuses it. One per transport (one channel).
///
/// An app's default credential for the channel serves devices without a selector; a device's
/// selector names its own. Without any, local mode's `fallback` (the bundled look-alike's
/// account) serves; otherwise the pushes are held `no_credential`, as uploaded file credentials' are, until a
/// credential for the service is added (which releases them) or their message expires.
public final class ChannelCredentialResolver: Sendable {
    public enum Resolution: Sendable {
        case credential(ChannelCredential)
        /// Nothing can be sent: the outcome of every push of the route.
        case refused(SendOutcome)
    }

    private struct Key: Hashable {
        var appID: Int64
        var selector: String?
    }

    private struct Entry {
        var resolution: Resolution
        var expires: Date
    }

    public let channel: PushChannel
    let store: any ChannelCredentialStore
    let secrets: any ChannelSecretOpener
    let fallback: ChannelCredential?
    let clock: any Clock
    let logger: Logger
    private let cache = Mutex<[Key: Entry]>([:])
    /// How long a lookup is trusted: a credential added in the console is used within this.
    static let cacheSeconds: TimeInterval = 5

    public init(
        channel: PushChannel, store: any ChannelCredentialStore, secrets: any ChannelSecretOpener,
        fallback: ChannelCredential?, clock: any Clock, logger: Logger
    ) {
        self.channel = channel
        self.store = store
        self.secrets = secrets
        self.fallback = fallback
        self.clock = clock
        self.logger = logger
    }

    public func resolve(appID: Int64, selector: String?) async -> Resolution {
        await resolve(appID: appID, selector: selector, cached: true)
    }

    /// Whether the route's pushes could be sent now with a stored credential (looked up again,
    /// not cached; the cache keeps what was found): what ends a hold. Local mode's fallback
    /// does not: its pushes are held only when the look-alike refused it.
    public func canSend(appID: Int64, selector: String?) async -> Bool {
        if case .credential(let found) = await resolve(appID: appID, selector: selector, cached: false) {
            return found.id != 0
        }
        return false
    }

    private func resolve(appID: Int64, selector: String?, cached: Bool) async -> Resolution {
        let key = Key(appID: appID, selector: selector)
        let now = clock.now
        if cached, let hit = cache.withLock({ $0[key] }), hit.expires > now { return hit.resolution }
        let resolution: Resolution
        do {
            resolution = try await lookUp(appID: appID, selector: selector)
        } catch {
            logger.error(
                "cannot read an app's channel credential",
                metadata: ["app": "\(appID)", "channel": "\(channel.rawValue)", "error": "\(error)"])
            return .refused(.retry(.credentialLookupFailed, after: .seconds(1)))
        }
        cache.withLock { $0[key] = Entry(resolution: resolution, expires: now.addingTimeInterval(Self.cacheSeconds)) }
        return resolution
    }

    private func lookUp(appID: Int64, selector: String?) async throws -> Resolution {
        // The newest working credential; a failing one only when none works (`activeChannelCredential`).
        guard let record = try await store.activeChannelCredential(appID: appID, channel: channel, selector: selector)
        else {
            if selector != nil { return .refused(.held(.noCredentialForSelector)) }
            if let fallback { return .credential(fallback) }
            return .refused(.held(.noCredential))
        }
        if record.isFailing {
            return .refused(.held(record.statusReason.map(SendReason.init) ?? .credentialFailing))
        }
        do {
            let secret = try secrets.secret(of: record)
            return .credential(
                ChannelCredential(
                    id: record.id, channel: channel, vendorAppID: record.vendorAppID, clientID: record.clientID,
                    secret: secret, options: record.options))
        } catch {
            logger.error(
                "cannot open a channel credential",
                metadata: ["credential": "\(record.id)", "channel": "\(channel.rawValue)", "error": "\(error)"])
            return .refused(.held(.credentialUnusable))
        }
    }

    /// The service refused the credential itself (a wrong secret, a revoked account): held
    /// until an operator fixes it, shown failing in the console. Local mode's fallback has no
    /// row to mark.
    public func markFailing(_ credential: ChannelCredential, reason: SendReason) async {
        forgetAll()
        guard credential.id != 0 else {
            logger.error(
                "the local look-alike refused its own credential",
                metadata: ["channel": "\(channel.rawValue)", "reason": "\(reason)"])
            return
        }
        logger.warning(
            "channel credential refused; holding its pushes until it is fixed",
            metadata: ["credential": "\(credential.id)", "channel": "\(channel.rawValue)", "reason": "\(reason)"])
        do {
            try await store.setChannelCredentialStatus(id: credential.id, status: "failing", reason: reason.description)
        } catch {
            logger.error(
                "cannot mark a channel credential failing",
                metadata: ["credential": "\(credential.id)", "error": "\(error)"])
        }
    }

    /// An app's credentials changed: look them up again.
    public func forget(appID: Int64) {
        cache.withLock { cache in cache = cache.filter { $0.key.appID != appID } }
    }

    public func forgetAll() {
        cache.withLock { $0.removeAll() }
    }
}

extension ChannelCredentialResolver {
    /// What an Android transport needs before it sends a route's pushes: the credential and a
    /// valid access token, or the outcome every push of the route gets (no credential, one
    /// refused by the token endpoint — then marked failing — or an endpoint out of reach).
    public func signIn(
        appID: Int64, selector: String?, tokens: AccessTokenCache, fetch: @escaping AccessTokenCache.Fetch
    ) async -> Result<(ChannelCredential, AccessToken), SignInRefusal> {
        let credential: ChannelCredential
        switch await resolve(appID: appID, selector: selector) {
        case .refused(let outcome): return .failure(SignInRefusal(outcome: outcome))
        case .credential(let resolved): credential = resolved
        }
        switch await tokens.token(for: credential, fetch: fetch) {
        case .success(let token):
            return .success((credential, token))
        case .failure(.refused(let reason)):
            await markFailing(credential, reason: reason)
            return .failure(SignInRefusal(outcome: .held(reason)))
        case .failure(.unavailable(let reason, let after)):
            return .failure(SignInRefusal(outcome: .retry(reason, after: after)))
        }
    }

    /// The service refused an access token it issued (a 401): fetch a new one for one more
    /// try, or, when the token was already new, hold the push and mark the credential failing.
    public func reauthenticate(
        _ credential: ChannelCredential, refused token: AccessToken, reason: SendReason, alreadyRetried: Bool,
        tokens: AccessTokenCache, fetch: @escaping AccessTokenCache.Fetch
    ) async -> Result<AccessToken, SignInRefusal> {
        tokens.invalidate(token, of: credential)
        guard !alreadyRetried else {
            await markFailing(credential, reason: reason)
            return .failure(SignInRefusal(outcome: .held(reason)))
        }
        switch await tokens.token(for: credential, fetch: fetch) {
        case .success(let fresh):
            return .success(fresh)
        case .failure(.refused(let refusal)):
            await markFailing(credential, reason: refusal)
            return .failure(SignInRefusal(outcome: .held(refusal)))
        case .failure(.unavailable(let reason, let after)):
            return .failure(SignInRefusal(outcome: .retry(reason, after: after)))
        }
    }
}

/// Why a route's pushes cannot be sent now: the outcome each gets.
public struct SignInRefusal: Error, Sendable, Hashable {
    public var outcome: SendOutcome
}

extension PushBatch {
    /// Positions of the batch's pushes by credential selector; one group without hashing when
    /// every push has the same selector (the usual case: the engine groups a page by route).
    public func positionsBySelector() -> [(selector: String?, positions: [Int])] {
        guard let first = pushes.first else { return [] }
        if pushes.allSatisfy({ $0.selector == first.selector }) { return [(first.selector, Array(pushes.indices))] }
        return Dictionary(grouping: pushes.indices) { pushes[$0].selector }.map { ($0.key, $0.value) }
    }
}
