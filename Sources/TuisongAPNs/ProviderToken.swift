import Foundation
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
public final class ProviderTokenCache: Sendable {
    public static let minimumRefreshInterval: Duration = .seconds(20 * 60)
    public static let maximumRefreshInterval: Duration = .seconds(60 * 60)
    public static let defaultRefreshInterval: Duration = .seconds(50 * 60)

    public let keyID: String
    public let teamID: String
    /// How old a token may get before the next request gets a fresh one; within 20…60 min.
    public let refreshInterval: Duration

    private let key: PrivateKey
    private let clock: any TuisongCore.Clock
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
    }

    /// `key` must be a P-256 key (`CryptoError.wrongKind` otherwise). `refreshInterval` is
    /// clamped into 20…60 minutes.
    public init(
        key: PrivateKey, keyID: String, teamID: String, refreshInterval: Duration = defaultRefreshInterval,
        clock: any TuisongCore.Clock
    ) throws(CryptoError) {
        guard key.kind == .ecP256 else {
            throw CryptoError(
                .wrongKind, "APNs token authentication needs an EC P-256 (.p8) key, this one is \(key.kind)")
        }
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.clock = clock
        self.refreshInterval = min(max(refreshInterval, Self.minimumRefreshInterval), Self.maximumRefreshInterval)
    }

    /// The current JWT, minted anew when it is `refreshInterval` old or APNs reported it expired.
    public func token() throws(CryptoError) -> String {
        try providerToken().jwt
    }

    /// The current token with its `iat`, which the caller passes back to `invalidate(ifIssuedAt:)`.
    public func providerToken() throws(CryptoError) -> ProviderToken {
        let now = clock.now
        // Minting happens under the lock so concurrent callers that all find the token stale
        // produce one new token between them, not one each.
        return try state.withLock { (state: inout State) throws(CryptoError) -> ProviderToken in
            if let current = state.current, !state.refreshForced, isFresh(current, now: now) {
                return current
            }
            let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
            let jwt = try JWT.apnsProviderToken(keyID: keyID, teamID: teamID, issuedAt: issuedAt, key: key)
            if state.refreshForced { state.lastForcedIssuedAt = state.current?.issuedAt }
            let token = ProviderToken(jwt: jwt, issuedAt: issuedAt)
            state.current = token
            state.refreshForced = false
            state.minted += 1
            return token
        }
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

    private func isFresh(_ token: ProviderToken, now: Date) -> Bool {
        let age = now.timeIntervalSince(token.issuedAt)
        let (seconds, attoseconds) = refreshInterval.components
        let limit = Double(seconds) + Double(attoseconds) / 1e18
        // A small backward step (NTP) keeps the token; a large one would leave an `iat` in
        // the future, which APNs rejects, so that counts as stale.
        return age >= -Self.backwardClockTolerance && age < limit
    }
}
