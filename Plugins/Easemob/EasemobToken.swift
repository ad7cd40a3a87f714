import Foundation
import Synchronization
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
        try checkUnexpired(claims, now: now)
        return claims
    }

    /// Throws when the token has expired at `now`.
    static func checkUnexpired(_ claims: EasemobTokenClaims, now: Date) throws(EasemobError) {
        if let expiresAt = claims.expiresAt, Int64(now.timeIntervalSince1970.rounded(.down)) >= expiresAt {
            throw .unauthorized("Unable to authenticate due to expired access token")
        }
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
        // Spaces and tabs, the whitespace of a header's value, trimmed without Foundation's
        // Unicode walk (which was a fortieth of an Easemob message call: issue #47's profile).
        let trimmed = trimmingBlanks(Substring(header))
        let scheme = trimmed.utf8.prefix(7)
        let lowercased: (UInt8) -> UInt8 = { 65...90 ~= $0 ? $0 | 0x20 : $0 }
        guard trimmed.utf8.count > 7, scheme.elementsEqual("bearer ".utf8, by: { lowercased($0) == $1 }) else {
            throw .unauthorized("Unable to authenticate: expected Authorization: Bearer <token>")
        }
        let token = String(trimmingBlanks(trimmed.dropFirst(7)))
        if token.isEmpty || ["none", "null", "undefined"].contains(token.lowercased()) {
            throw .unauthorized("Unable to authenticate due to expired access token")
        }
        return token
    }

    private static func trimmingBlanks(_ text: Substring) -> Substring {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return text[first...last]
    }
}

/// Tokens verified before, with their claims: an app server takes one app token and sends it
/// with every call, and its two HMACs (the binding's key, then the token's) were a thirtieth of
/// an Easemob message call's work (issue #47's profile). A token is remembered with the signing
/// key and the bindings it was verified under, so a rotated secret, a changed client id or
/// password, or a new signing key verifies afresh (and fails); expiry is checked on every use.
final class VerifiedEasemobTokens: Sendable {
    struct Key: Hashable, Sendable {
        var token: String
        var signingKey: [UInt8]
        var bindings: [String]
    }

    /// Past this many tokens the memory starts again (tokens live for days; apps have few
    /// callers, and users' tokens are verified afresh after a start-over).
    let capacity: Int
    private let verified = Mutex<[Key: EasemobTokenClaims]>([:])

    init(capacity: Int = 4096) { self.capacity = capacity }

    /// `EasemobToken.verify`, remembered.
    func verify(_ token: String, signingKey: [UInt8], bindings: [String], now: Date) throws(EasemobError)
        -> EasemobTokenClaims
    {
        let key = Key(token: token, signingKey: signingKey, bindings: bindings)
        if let claims = verified.withLock({ $0[key] }) {
            try EasemobToken.checkUnexpired(claims, now: now)
            return claims
        }
        let claims = try EasemobToken.verify(token, signingKey: signingKey, bindings: bindings, now: now)
        verified.withLock { verified in
            if verified.count >= capacity { verified.removeAll(keepingCapacity: true) }
            verified[key] = claims
        }
        return claims
    }

    var count: Int { verified.withLock { $0.count } }
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
