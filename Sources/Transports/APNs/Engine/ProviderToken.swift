import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongCrypto

/// A signed APNs provider token and when it was issued (its `iat`).
public struct ProviderToken: Sendable, Hashable {
    /// The compact JWT, sent as `authorization: bearer <jwt>`.
    public let jwt: String
    public let issuedAt: Date
}

/// The provider token (JWT) of one signing key, shared by every connection and stream that
/// uses the key. APNs throttles token changes (429 TooManyProviderTokenUpdates if more often
/// than every 20 minutes) and rejects tokens older than an hour (403 ExpiredProviderToken), so
/// a token is reused until `refreshInterval` old, never minted per request.
///
///     let tokens = try ProviderTokenCache(key: p8, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: SystemClock())
///     let token = try tokens.providerToken()      // header: "bearer \(token.jwt)"
///     // on 403 ExpiredProviderToken for a request sent with `token`:
///     tokens.invalidate(ifIssuedAt: token.issuedAt)
///
/// With a `shared` store (several gateway nodes on one database), the nodes use one token per
/// (team id, key id): `prepare()` (awaited when a pool opens) adopts the token another node
/// signed while it is fresh, or signs one and offers it, using whichever the store kept. From
/// then on `providerToken()` never touches the database: once the token is within
/// `refreshLead` of `refreshInterval`, a background exchange adopts a newer token or signs,
/// offers and adopts one, while requests keep the current token (up to `hardLimit` old, after
/// which, or after APNs reported it expired, a token is signed on the spot as without a store
/// and offered in the background).
public final class ProviderTokenCache: Sendable {
    public static let minimumRefreshInterval: Duration = .seconds(20 * 60)
    public static let maximumRefreshInterval: Duration = .seconds(60 * 60)
    public static let defaultRefreshInterval: Duration = .seconds(50 * 60)
    /// After a failed exchange with the shared store, the next waits this long.
    static let sharedRetryDelay: TimeInterval = 10

    public let keyID: String
    public let teamID: String
    /// The key id as the shared store knows it: with the first 8 bytes of the SHA-256 of the
    /// public key, so only nodes holding the same key share tokens. A key uploaded again under
    /// the same id, or two test apps' keys with one id, never adopt each other's tokens (APNs
    /// would answer InvalidProviderToken).
    let sharedKeyID: String
    /// How old a token may get before the next request gets a fresh one; within 20…60 min.
    public let refreshInterval: Duration

    private let key: PrivateKey
    private let clock: any TuisongCore.Clock
    private let shared: (any ProviderTokenStore)?
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var current: ProviderToken?
        /// Set by `invalidate` when APNs said the current token expired.
        var refreshForced = false
        /// The `iat` of the last token a forced refresh replaced: a late report about it
        /// (from one of many streams that carried it) must not force another refresh, even
        /// when the replacement happens to carry the same `iat` second.
        var lastForcedIssuedAt: Date?
        var minted = 0
        /// An exchange with the shared store is under way.
        var sharing = false
        /// A token signed on the spot, to offer once the running exchange ends.
        var pendingOffer: (token: ProviderToken, replacing: Date?)?
        /// No exchange starts before this (after a failed one).
        var nextShareAttempt = Date.distantPast
    }

    private enum Exchange {
        /// Adopt a newer token from the store, or sign one and offer it.
        case refresh
        /// Offer a token signed on the spot.
        case offer(ProviderToken, replacing: Date?)
    }

    /// `key` must be a P-256 key (`CryptoError.wrongKind` otherwise). `refreshInterval` is
    /// clamped into 20…60 minutes. `shared`: the store the gateway's nodes share tokens
    /// through (nil: this cache signs alone).
    public init(
        key: PrivateKey, keyID: String, teamID: String, refreshInterval: Duration = defaultRefreshInterval,
        clock: any TuisongCore.Clock, shared: (any ProviderTokenStore)? = nil,
        logger: Logger = Logger(label: "tuisong.apns.token")
    ) throws(CryptoError) {
        guard key.kind == .ecP256 else {
            throw CryptoError(
                .wrongKind, "APNs token authentication needs an EC P-256 (.p8) key, this one is \(key.kind)")
        }
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        let publicKey = (try? key.publicKey.der()) ?? []
        self.sharedKeyID = keyID + "#" + Hex.encode(Array(Digest.sha256(publicKey).prefix(8)))
        self.clock = clock
        self.shared = shared
        self.logger = logger
        self.refreshInterval = min(max(refreshInterval, Self.minimumRefreshInterval), Self.maximumRefreshInterval)
    }

    /// The current JWT, minted anew when it is `refreshInterval` old or APNs reported it expired.
    public func token() throws(CryptoError) -> String {
        try providerToken().jwt
    }

    /// The current token with its `iat`, which the caller passes back to `invalidate(ifIssuedAt:)`.
    /// Never waits for the shared store (see the type's comment).
    public func providerToken() throws(CryptoError) -> ProviderToken {
        let now = clock.now
        let sharing = shared != nil
        var launch: Exchange?
        // Minting happens under the lock so concurrent callers that all find the token stale
        // produce one new token between them, not one each.
        let token = try state.withLock { (state: inout State) throws(CryptoError) -> ProviderToken in
            if let current = state.current, !state.refreshForced {
                let age = now.timeIntervalSince(current.issuedAt)
                if isFresh(current, now: now) {
                    if sharing, age >= refreshSeconds - refreshLead, Self.startExchange(&state, now: now) {
                        launch = .refresh
                    }
                    return current
                }
                // Due: with a store, keep using it while an exchange finds or makes the next.
                if sharing, age >= -Self.backwardClockTolerance, age < hardLimit {
                    if Self.startExchange(&state, now: now) { launch = .refresh }
                    return current
                }
            }
            let replaced = state.refreshForced ? state.current?.issuedAt : nil
            if state.refreshForced { state.lastForcedIssuedAt = state.current?.issuedAt }
            let token = try sign(now, &state)
            state.current = token
            state.refreshForced = false
            if sharing {
                if Self.startExchange(&state, now: now) {
                    launch = .offer(token, replacing: replaced)
                } else {
                    state.pendingOffer = (token, replaced)
                }
            }
            return token
        }
        if let launch {
            Task.detached { await self.runExchanges(launch) }
        }
        return token
    }

    /// With a shared store: unless a token is at hand and not yet within `refreshLead` of its
    /// refresh, adopts a fresh token another node signed, or signs one and offers it (and
    /// uses the one the store kept). Returns when done; a store error is logged and leaves
    /// `providerToken()` to sign on its own. Without a store, does nothing.
    public func prepare() async {
        guard shared != nil else { return }
        let now = clock.now
        let start = state.withLock { state -> Bool in
            if let current = state.current, !state.refreshForced, !isDue(current, now: now) { return false }
            return Self.startExchange(&state, now: now)
        }
        if start { await runExchanges(.refresh) }
    }

    /// After APNs answered 403 ExpiredProviderToken to a request carrying the token issued at
    /// `issuedAt`: the next `token()` mints a new one, even within 20 minutes of the last.
    /// Reports about a token that was already replaced, or repeated reports about the same
    /// one (many streams fail at once), cause no further refresh.
    public func invalidate(ifIssuedAt issuedAt: Date) {
        state.withLock { state in
            guard let current = state.current, current.issuedAt == issuedAt, state.lastForcedIssuedAt != issuedAt else {
                return
            }
            state.refreshForced = true
        }
    }

    /// How many tokens this cache has signed (for metrics and tests).
    public var mintedCount: Int { state.withLock { $0.minted } }

    /// How far the clock may step backwards before the token counts as issued in the future.
    static let backwardClockTolerance: TimeInterval = 300

    private var refreshSeconds: TimeInterval {
        let (seconds, attoseconds) = refreshInterval.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// With a shared store, how long before `refreshInterval` the background exchange starts:
    /// five minutes, less when that would make the offer come before the 20 minutes the store
    /// keeps a token (`minimumRefreshInterval`).
    var refreshLead: TimeInterval { max(0, min(300, refreshSeconds - 20 * 60)) }

    /// With a shared store, the age up to which requests keep the current token while an
    /// exchange runs: 55 minutes (APNs refuses tokens older than an hour), or
    /// `refreshInterval` when longer.
    var hardLimit: TimeInterval { max(refreshSeconds, 55 * 60) }

    private func isFresh(_ token: ProviderToken, now: Date) -> Bool {
        let age = now.timeIntervalSince(token.issuedAt)
        // A small backward step (NTP) keeps the token; a large one would leave an `iat` in
        // the future, which APNs rejects, so that counts as stale.
        return age >= -Self.backwardClockTolerance && age < refreshSeconds
    }

    /// Whether a shared-store exchange should replace the token now.
    private func isDue(_ token: ProviderToken, now: Date) -> Bool {
        let age = now.timeIntervalSince(token.issuedAt)
        return age < -Self.backwardClockTolerance || age >= refreshSeconds - refreshLead
    }

    private func sign(_ now: Date, _ state: inout State) throws(CryptoError) -> ProviderToken {
        let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let jwt = try JWT.es256Token(keyID: keyID, issuer: teamID, issuedAt: issuedAt, key: key)
        state.minted += 1
        return ProviderToken(jwt: jwt, issuedAt: issuedAt)
    }

    /// Marks an exchange as under way unless one is, or the last failed too recently.
    private static func startExchange(_ state: inout State, now: Date) -> Bool {
        guard !state.sharing, now >= state.nextShareAttempt else { return false }
        state.sharing = true
        return true
    }

    /// Runs `first`, then any token signed on the spot meanwhile, then ends the exchange.
    private func runExchanges(_ first: Exchange) async {
        var next: Exchange? = first
        while let exchange = next {
            await run(exchange)
            next = state.withLock { state -> Exchange? in
                if let pending = state.pendingOffer {
                    state.pendingOffer = nil
                    return .offer(pending.token, replacing: pending.replacing)
                }
                state.sharing = false
                return nil
            }
        }
    }

    private func run(_ exchange: Exchange) async {
        guard let shared else { return }
        let now = clock.now
        do {
            var offered: ProviderToken
            var replacing: Date?
            switch exchange {
            case .offer(let token, let replaced):
                offered = token
                replacing = replaced
            case .refresh:
                let current = state.withLock { $0.current }
                if let stored = try await shared.currentProviderToken(
                    teamID: teamID, keyID: sharedKeyID, newerThan: current?.issuedAt ?? .distantPast),
                    !isDue(ProviderToken(jwt: stored.token, issuedAt: stored.issuedAt), now: now)
                {
                    adopt(stored, offered: nil, now: now)
                    return
                }
                offered = try state.withLock { (state: inout State) throws(CryptoError) -> ProviderToken in
                    try sign(now, &state)
                }
                replacing = nil
            }
            let kept = try await shared.offerProviderToken(
                teamID: teamID, keyID: sharedKeyID, SharedProviderToken(token: offered.jwt, issuedAt: offered.issuedAt),
                refreshWindow: 20 * 60, replacing: replacing)
            adopt(kept, offered: offered, now: now)
        } catch {
            state.withLock { $0.nextShareAttempt = now.addingTimeInterval(Self.sharedRetryDelay) }
            logger.warning(
                "cannot share the APNs provider token through the database; signing alone for now",
                metadata: ["team": "\(teamID)", "key": "\(keyID)", "error": "\(error)"])
        }
    }

    /// Uses `stored` unless it is stale, APNs reported it expired, or this cache holds a newer
    /// one of its own (other than the one it just offered).
    private func adopt(_ stored: SharedProviderToken, offered: ProviderToken?, now: Date) {
        let token = ProviderToken(jwt: stored.token, issuedAt: stored.issuedAt)
        let age = now.timeIntervalSince(token.issuedAt)
        guard age >= -Self.backwardClockTolerance, age < hardLimit else { return }
        state.withLock { state in
            guard !state.refreshForced else { return }
            if let expired = state.lastForcedIssuedAt, token.issuedAt <= expired { return }
            if let current = state.current, current != offered, current.issuedAt >= token.issuedAt { return }
            state.current = token
        }
    }
}

/// A token-authenticated pool's authorization: the cache's provider token on every request
/// (`authorization: bearer <JWT>`), one stream per connection until APNs accepted it, and a
/// request refused `403 ExpiredProviderToken` sent once more with a new one.
final class ProviderTokenAuthorizer: HTTP2Authorizer {
    let cache: ProviderTokenCache

    init(cache: ProviderTokenCache) {
        self.cache = cache
    }

    func currentAuthorization() throws(HTTP2ClientError) -> HTTP2Authorization {
        do {
            let token = try cache.providerToken()
            return HTTP2Authorization(value: token.jwt, issuedAt: token.issuedAt)
        } catch {
            throw HTTP2ClientError(.credentialFailed, "could not sign the provider token: \(error.message)")
        }
    }

    func answerProvesAuthorized(status: Int) -> Bool {
        Self.provesTokenAccepted(status: status)
    }

    /// Whether an answer shows APNs accepted the provider token: a 200, or a 4xx about the
    /// request itself (APNs checks the token first, so 400 BadDeviceToken or 410 Unregistered
    /// also got past it). 403 is the token's (or certificate's) own rejection; a 5xx proves
    /// nothing.
    static func provesTokenAccepted(status: Int) -> Bool {
        status == 200 || (400..<500).contains(status) && status != 403
    }

    func answerRefusesAsExpired(status: Int, body: [UInt8]) -> Bool {
        status == 403 && APNsErrorBody(parsing: body).reason == "ExpiredProviderToken"
    }

    func invalidate(_ authorization: HTTP2Authorization) {
        cache.invalidate(ifIssuedAt: authorization.issuedAt)
    }
}
