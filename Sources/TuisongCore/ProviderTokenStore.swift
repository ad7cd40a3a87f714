import Foundation

/// A provider token (a signed JWT a transport sends as its bearer) as the nodes of a gateway
/// share it.
public struct SharedProviderToken: Sendable, Hashable {
    /// The compact JWT.
    public var token: String
    /// Its `iat` (whole seconds).
    public var issuedAt: Date

    public init(token: String, issuedAt: Date) {
        self.token = token
        self.issuedAt = issuedAt
    }
}

/// One provider token per (team id, key id) for every node of the gateway (the key id as the
/// transport passes it carries a fingerprint of the key, so different keys never share). A
/// service may refuse a team whose token changes too often (429), which several nodes signing
/// on their own would cause: a node adopts the token another node signed while
/// it is fresh, and a token signed at the same time as another's loses to it.
public protocol ProviderTokenStore: Sendable {
    /// The stored token of the key when it was issued after `newerThan`; nil otherwise.
    func currentProviderToken(teamID: String, keyID: String, newerThan: Date) async throws -> SharedProviderToken?
    /// Offers a token just signed and returns the one stored afterwards, the same answer for
    /// every node offering at once. The offer replaces the stored token only when that one was
    /// issued more than `refreshWindow` before the offered one (it is due for replacement), or
    /// at or before `replacing` (the service reported that token expired); otherwise the stored token
    /// is kept and returned.
    func offerProviderToken(
        teamID: String, keyID: String, _ token: SharedProviderToken, refreshWindow: TimeInterval, replacing: Date?
    ) async throws -> SharedProviderToken
}
