import Foundation
import TuisongCrypto

/// Who a token speaks for.
enum EasemobPrincipal: Sendable, Hashable {
    /// The app's administrator (`client_credentials`): every REST call.
    case app
    /// One user (`password` grant): only that user's own binding.
    case user(String)
}

/// What a token says once its signature checked out.
struct EasemobTokenClaims: Sendable, Hashable {
    var appID: Int64
    var principal: EasemobPrincipal
    /// Epoch seconds.
    var issuedAt: Int64
    /// Epoch seconds; nil = never (`ttl: 0`).
    var expiresAt: Int64?
}

/// Access tokens that need no token table and survive restarts: the claims in base64url, then
/// an HMAC-SHA256 over them under a key bound to what the token stands for.
///
///     YWMt<base64url("a|3|1700000000|1705184000|")>.<base64url(HMAC)>
///
/// The MAC key is HMAC(app signing key, binding): for app tokens the binding is the app's
/// client id with its rotation and the rotation of its client secret
/// (`EasemobAppSettings.clientIDRotation`, `.clientSecretRotation`: which setting of each, not
/// its value), for user tokens the secret's rotation and the user's stored password hash. So
/// setting a new client secret revokes every token of the app for good (setting the old secret
/// again later is another rotation), changing the client id revokes app tokens for good
/// (changing it back is another rotation), changing a password revokes the user's tokens, and
/// a deleted user's tokens stay dead even when the name is registered again (a new hash has a
/// new salt). The signing key is random per app, kept sealed under the master key in
/// `easemob_token_keys`.
///
/// Tokens issued by release e167280 and earlier (`legacyAppBinding`, `legacyUserBinding`: bound
/// to the secret's value, not its rotation) are still accepted while the secret has not been
/// set to another value since the upgrade (and, for app tokens, the client id not changed):
/// `EasemobProvider.authenticate`.
enum EasemobToken {
    /// Easemob's tokens start with `YWMt` (app) or `YWMt`-like prefixes; clients only carry them.
    static let prefix = "YWMt"

    static func issue(_ claims: EasemobTokenClaims, signingKey: [UInt8], binding: String) -> String {
        let body = Base64URL.encode(Array(serialize(claims).utf8))
        let mac = HMAC.sha256(
            key: macKey(signingKey: signingKey, binding: binding), message: Array((prefix + body).utf8))
        return prefix + body + "." + Base64URL.encode(mac)
    }

    /// The claims a token carries, before its signature is checked (to find the app and the
    /// user whose binding keys the MAC). Nil when it is not a token of this format.
    static func peek(_ token: String) -> EasemobTokenClaims? {
        guard token.hasPrefix(prefix), token.utf8.count <= 1024 else { return nil }
        let parts = token.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let bytes = Base64URL.decode(String(parts[0])) else { return nil }
        return parse(String(decoding: bytes, as: UTF8.self))
    }

    /// The claims when the signature is right and the token has not expired at `now`.
    static func verify(_ token: String, signingKey: [UInt8], binding: String, now: Date) throws(EasemobError)
        -> EasemobTokenClaims
    {
        try verify(token, signingKey: signingKey, bindings: [binding], now: now)
    }

    /// The claims when the signature is right under one of `bindings` (tried in order) and the
    /// token has not expired at `now`.
    static func verify(_ token: String, signingKey: [UInt8], bindings: [String], now: Date) throws(EasemobError)
        -> EasemobTokenClaims
    {
        guard let claims = peek(token) else {
            throw .unauthorized("Unable to authenticate due to corrupt access token")
        }
        let parts = token.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard let presented = Base64URL.decode(String(parts[1])) else {
            throw .unauthorized("Unable to authenticate due to corrupt access token")
        }
        let signed = bindings.contains { binding in
            let expected = HMAC.sha256(
                key: macKey(signingKey: signingKey, binding: binding), message: Array((prefix + parts[0]).utf8))
            var difference = UInt8(presented.count == expected.count ? 0 : 1)
            for (a, b) in zip(presented, expected) { difference |= a ^ b }
            return difference == 0
        }
        guard signed else { throw .unauthorized("Unable to authenticate") }
        if let expiresAt = claims.expiresAt, Int64(now.timeIntervalSince1970.rounded(.down)) >= expiresAt {
            throw .unauthorized("Unable to authenticate due to expired access token")
        }
        return claims
    }

    /// The binding of app tokens: the client id and the rotations of the id and the secret
    /// they were granted under. A client id without a rotation marker (set before markers were
    /// recorded) leaves it out, so the tokens issued then keep their binding.
    static func appBinding(clientID: String, clientIDRotation: String, secretRotation: String) -> String {
        let binding = "app\u{0}\(clientID)\u{0}\(secretRotation)"
        return clientIDRotation.isEmpty ? binding : binding + "\u{0}\(clientIDRotation)"
    }

    /// The binding of app tokens issued before the bindings named rotations (release e167280
    /// and earlier): the client id and the secret's value.
    static func legacyAppBinding(clientID: String, clientSecret: String) -> String {
        "app\u{0}\(clientID)\u{0}\(clientSecret)"
    }

    /// The binding of users' tokens issued before the bindings named rotations: the user's
    /// stored password hash alone.
    static func legacyUserBinding(passwordHash: String) -> String {
        "user\u{0}\(passwordHash)"
    }

    /// The binding of a user's tokens: the user's stored password hash and the rotation of the
    /// app's client secret.
    static func userBinding(passwordHash: String, secretRotation: String) -> String {
        "user\u{0}\(passwordHash)\u{0}\(secretRotation)"
    }

    private static func macKey(signingKey: [UInt8], binding: String) -> [UInt8] {
        HMAC.sha256(key: signingKey, message: Array(binding.utf8))
    }

    private static func serialize(_ claims: EasemobTokenClaims) -> String {
        let expires = claims.expiresAt.map(String.init) ?? ""
        switch claims.principal {
        case .app: return "a|\(claims.appID)|\(claims.issuedAt)|\(expires)|"
        case .user(let name): return "u|\(claims.appID)|\(claims.issuedAt)|\(expires)|\(name)"
        }
    }

    private static func parse(_ text: String) -> EasemobTokenClaims? {
        let fields = text.split(separator: "|", maxSplits: 4, omittingEmptySubsequences: false)
        guard fields.count == 5, let appID = Int64(fields[1]), let issuedAt = Int64(fields[2]) else { return nil }
        let expiresAt: Int64?
        if fields[3].isEmpty {
            expiresAt = nil
        } else {
            guard let value = Int64(fields[3]) else { return nil }
            expiresAt = value
        }
        switch fields[0] {
        case "a" where fields[4].isEmpty:
            return EasemobTokenClaims(appID: appID, principal: .app, issuedAt: issuedAt, expiresAt: expiresAt)
        case "u":
            guard let name = EasemobUsername.normalize(String(fields[4])), name == fields[4] else { return nil }
            return EasemobTokenClaims(appID: appID, principal: .user(name), issuedAt: issuedAt, expiresAt: expiresAt)
        default:
            return nil
        }
    }
}

/// `Authorization: Bearer <token>` as clients send it, including SDKs that send the literal
/// `Bearer None` (Python) or `Bearer null` before they have a token.
enum EasemobBearer {
    static func token(from header: String?) throws(EasemobError) -> String {
        guard let header else {
            throw .unauthorized("Unable to authenticate due to expired access token")
        }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.count > 7, trimmed.prefix(7).lowercased() == "bearer " else {
            throw .unauthorized("Unable to authenticate: expected Authorization: Bearer <token>")
        }
        let token = trimmed.dropFirst(7).trimmingCharacters(in: .whitespaces)
        if token.isEmpty || ["none", "null", "undefined"].contains(token.lowercased()) {
            throw .unauthorized("Unable to authenticate due to expired access token")
        }
        return token
    }
}

/// `ttl` of `POST token`: seconds; absent = 60 days (Easemob's default); 0 = never expires.
enum EasemobTTL {
    static let defaultSeconds: Int64 = 60 * 24 * 3600
    /// What `expires_in` says for a token that never expires: clients compute "refresh at
    /// now + expires_in", so 0 would make them refresh on every call. Ten years.
    static let neverSeconds: Int64 = 10 * 365 * 24 * 3600

    /// The lifetime in seconds, nil = never.
    static func lifetime(_ ttl: Int64?) throws(EasemobError) -> Int64? {
        guard let ttl else { return defaultSeconds }
        guard ttl >= 0, ttl <= 100 * 365 * 24 * 3600 else {
            throw .illegalArgument("ttl must be 0 (never expires) or a number of seconds")
        }
        return ttl == 0 ? nil : ttl
    }
}
