import Synchronization
internal import TuisongCrypto
import TuisongLookAlikeKit

/// What a verified provider token says.
struct ProviderTokenClaims: Equatable, Sendable {
    var keyID: String
    var teamID: String
    /// `iat`, seconds since 1970.
    var issuedAt: Int64
}

/// Result of checking a JWT's form, key and signature; age is checked per request by the
/// validator, because a token that was fresh an hour ago is not any more.
enum ProviderTokenVerdict: Equatable, Sendable {
    case valid(ProviderTokenClaims)
    case invalid
}

protocol ProviderTokenVerifying: Sendable {
    func verify(_ jwt: String) -> ProviderTokenVerdict
}

/// Verifies APNs provider tokens against the configured keys, remembering verdicts: clients
/// reuse one token for up to an hour, and an ECDSA verification per request would cost more
/// than everything else the mock does for it.
final class ProviderTokenVerifier: ProviderTokenVerifying {
    private struct Key {
        let teamID: String
        let publicKey: PublicKey
    }

    private static let cacheLimit = 4096
    private let keys: Mutex<[String: Key]>
    private let verdicts = Mutex<[String: ProviderTokenVerdict]>([:])

    init(tokenKeys: [LookAlikeConfiguration.APNsTokenKey]) throws(CryptoError) {
        var keys: [String: Key] = [:]
        for tokenKey in tokenKeys {
            keys[tokenKey.keyID] = Key(teamID: tokenKey.teamID, publicKey: try PublicKey(pem: tokenKey.publicKeyPEM))
        }
        self.keys = Mutex(keys)
    }

    /// Trusts one more key from now on (a gateway in local mode learning an uploaded .p8).
    func trust(_ tokenKey: LookAlikeConfiguration.APNsTokenKey) throws(CryptoError) {
        let key = Key(teamID: tokenKey.teamID, publicKey: try PublicKey(pem: tokenKey.publicKeyPEM))
        keys.withLock { $0[tokenKey.keyID] = key }
        // Earlier verdicts for this key id were "unknown key"; forget them.
        verdicts.withLock { $0.removeAll(keepingCapacity: true) }
    }

    func verify(_ jwt: String) -> ProviderTokenVerdict {
        if let known = verdicts.withLock({ $0[jwt] }) { return known }
        let verdict = freshVerdict(jwt)
        verdicts.withLock { cache in
            // Token-per-request clients would grow the cache without bound; start over instead.
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[jwt] = verdict
        }
        return verdict
    }

    /// kid picks the key, the signature must verify with it, and iss must be that key's team.
    private func freshVerdict(_ jwt: String) -> ProviderTokenVerdict {
        guard let unverified = try? JWT.decodeUnverified(jwt), let keyID = unverified.kid,
            let key = keys.withLock({ $0[keyID] }), let token = try? JWT.verifyES256(jwt, publicKey: key.publicKey),
            token.kid == keyID, token.iss == key.teamID, let issuedAt = token.iat
        else { return .invalid }
        return .valid(ProviderTokenClaims(keyID: keyID, teamID: key.teamID, issuedAt: issuedAt))
    }
}
