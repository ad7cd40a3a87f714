import Foundation
import Testing
import TuisongCrypto

@testable import EasemobProvider

/// Signed tokens: issue/verify, expiry, tampering, bindings that revoke, bearer parsing, ttl.
@Suite struct TokenTests {
    let key = SecureRandom.bytes(32)
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    let appBinding = EasemobToken.appBinding(clientID: "YXA6id", clientIDRotation: "", secretRotation: "sealed-1")

    @Test func appTokenVerifiesUntilItExpires() throws {
        let claims = EasemobTokenClaims(appID: 7, principal: .app, issuedAt: 1_700_000_000, expiresAt: 1_700_000_001)
        let token = EasemobToken.issue(claims, signingKey: key, binding: appBinding)
        #expect(token.hasPrefix("YWMt"))
        #expect(try EasemobToken.verify(token, signingKey: key, binding: appBinding, now: now) == claims)
        #expect(EasemobToken.peek(token) == claims)
        let expired = #expect(throws: EasemobError.self) {
            try EasemobToken.verify(token, signingKey: key, binding: appBinding, now: now.addingTimeInterval(1))
        }
        #expect(expired?.status == 401 && expired?.error == "unauthorized")
        #expect(expired?.errorDescription.contains("expired") == true)
    }

    @Test func neverExpiringToken() throws {
        let claims = EasemobTokenClaims(appID: 7, principal: .app, issuedAt: 1, expiresAt: nil)
        let token = EasemobToken.issue(claims, signingKey: key, binding: appBinding)
        #expect(try EasemobToken.verify(token, signingKey: key, binding: appBinding, now: .distantFuture) == claims)
    }

    @Test func userTokenCarriesTheUser() throws {
        let binding = EasemobToken.userBinding(passwordHash: "pbkdf2-sha256$1$a$b", secretRotation: "sealed-1")
        let claims = EasemobTokenClaims(appID: 7, principal: .user("bob.1"), issuedAt: 1, expiresAt: nil)
        let token = EasemobToken.issue(claims, signingKey: key, binding: binding)
        #expect(try EasemobToken.verify(token, signingKey: key, binding: binding, now: now).principal == .user("bob.1"))
        // Another password hash (a new password, or the user deleted and registered again): dead.
        #expect(throws: EasemobError.self) {
            try EasemobToken.verify(
                token, signingKey: key,
                binding: EasemobToken.userBinding(passwordHash: "other", secretRotation: "sealed-1"),
                now: now)
        }
        // Another setting of the app's client secret: dead too.
        #expect(throws: EasemobError.self) {
            try EasemobToken.verify(
                token, signingKey: key,
                binding: EasemobToken.userBinding(passwordHash: "pbkdf2-sha256$1$a$b", secretRotation: "sealed-2"),
                now: now)
        }
    }

    /// Each binding a release issued under stays what it was, or its tokens die at the upgrade:
    /// e167280's (the secret's value; the password hash alone), the secret's rotation without a
    /// client id marker, and with one. A token verifies under any binding it is offered, and
    /// none other.
    @Test func bindingsKeepTheFormsTheyWereIssuedUnder() throws {
        #expect(EasemobToken.legacyAppBinding(clientID: "id", clientSecret: "s") == "app\u{0}id\u{0}s")
        #expect(EasemobToken.legacyUserBinding(passwordHash: "h") == "user\u{0}h")
        #expect(
            EasemobToken.appBinding(clientID: "id", clientIDRotation: "", secretRotation: "r") == "app\u{0}id\u{0}r")
        #expect(
            EasemobToken.appBinding(clientID: "id", clientIDRotation: "m", secretRotation: "r")
                == "app\u{0}id\u{0}r\u{0}m")
        let claims = EasemobTokenClaims(appID: 7, principal: .app, issuedAt: 1, expiresAt: nil)
        let old = EasemobToken.issue(
            claims, signingKey: key, binding: EasemobToken.legacyAppBinding(clientID: "id", clientSecret: "s"))
        let current = EasemobToken.appBinding(clientID: "id", clientIDRotation: "", secretRotation: "r")
        #expect(throws: EasemobError.self) { try EasemobToken.verify(old, signingKey: key, binding: current, now: now) }
        let accepted = try EasemobToken.verify(
            old, signingKey: key,
            bindings: [current, EasemobToken.legacyAppBinding(clientID: "id", clientSecret: "s")], now: now)
        #expect(accepted == claims)
        #expect(throws: EasemobError.self) {
            try EasemobToken.verify(
                old, signingKey: key,
                bindings: [current, EasemobToken.legacyAppBinding(clientID: "id", clientSecret: "other")], now: now)
        }
    }

    @Test func tamperedOrForeignTokensAreRefused() {
        let claims = EasemobTokenClaims(appID: 7, principal: .app, issuedAt: 1, expiresAt: nil)
        let token = EasemobToken.issue(claims, signingKey: key, binding: appBinding)
        // Claims of another app spliced onto this signature.
        let other = EasemobToken.issue(
            EasemobTokenClaims(appID: 8, principal: .app, issuedAt: 1, expiresAt: nil), signingKey: key,
            binding: appBinding)
        let spliced = String(other.prefix { $0 != "." }) + String(token.drop { $0 != "." })
        for bad in [
            spliced, token + "x", "YWMt", "YWMtabc", "garbage", String(token.dropLast(2)),
            EasemobToken.issue(claims, signingKey: SecureRandom.bytes(32), binding: appBinding),
        ] {
            #expect(throws: EasemobError.self) {
                try EasemobToken.verify(bad, signingKey: key, binding: appBinding, now: now)
            }
        }
        // A rotated client secret revokes app tokens.
        #expect(throws: EasemobError.self) {
            try EasemobToken.verify(
                token, signingKey: key,
                binding: EasemobToken.appBinding(clientID: "YXA6id", clientIDRotation: "", secretRotation: "sealed-2"),
                now: now)
        }
    }

    /// A remembered token answers as a fresh verification would: under another binding (a
    /// rotated secret, a changed password) or another signing key it is refused, and it expires
    /// on time.
    @Test func rememberedTokensAreCheckedAsFreshOnes() throws {
        let tokens = VerifiedEasemobTokens(capacity: 2)
        let claims = EasemobTokenClaims(appID: 7, principal: .app, issuedAt: 1_700_000_000, expiresAt: 1_700_000_100)
        let token = EasemobToken.issue(claims, signingKey: key, binding: appBinding)
        func verified(
            _ token: String, bindings: [String]? = nil, key signingKey: [UInt8]? = nil, at: Date? = nil
        ) -> EasemobTokenClaims? {
            try? tokens.verify(
                token, signingKey: signingKey ?? key, bindings: bindings ?? [appBinding], now: at ?? now)
        }
        #expect(verified(token) == claims)
        #expect(tokens.count == 1)
        #expect(verified(token) == claims, "from memory")
        #expect(tokens.count == 1)
        let rotated = EasemobToken.appBinding(clientID: "YXA6id", clientIDRotation: "", secretRotation: "sealed-2")
        #expect(verified(token, bindings: [rotated]) == nil)
        #expect(verified(token, bindings: [rotated, appBinding]) == claims, "the old binding still listed")
        #expect(verified(token, key: SecureRandom.bytes(32)) == nil)
        // Remembered or not, it expires.
        #expect(verified(token, at: now.addingTimeInterval(99)) == claims)
        let expired = #expect(throws: EasemobError.self) {
            try tokens.verify(token, signingKey: key, bindings: [appBinding], now: now.addingTimeInterval(100))
        }
        #expect(expired?.errorDescription.contains("expired") == true)
        // A forged token is never remembered.
        let forged = String(token.dropLast(2)) + (token.hasSuffix("AA") ? "AB" : "AA")
        #expect(verified(forged) == nil)
        #expect(verified(forged) == nil)
        // Past its capacity the memory starts again, and still verifies.
        let other = EasemobToken.issue(
            EasemobTokenClaims(appID: 7, principal: .user("bob"), issuedAt: 1_700_000_000, expiresAt: nil),
            signingKey: key, binding: appBinding)
        #expect(tokens.count == 2)
        #expect(verified(other)?.principal == .user("bob"))
        #expect(tokens.count == 1)
        #expect(verified(token) == claims)
    }

    @Test func bearerHeader() throws {
        #expect(try EasemobBearer.token(from: "Bearer YWMtabc") == "YWMtabc")
        #expect(try EasemobBearer.token(from: "bearer  YWMtabc ") == "YWMtabc")
        #expect(try EasemobBearer.token(from: "\tBEARER YWMtabc\t") == "YWMtabc")
        #expect(try EasemobBearer.token(from: " BeArEr 天YWMt ") == "天YWMt")
        for bad in [nil, "", "Bearer", "Bearer ", "Bearer None", "Bearer null", "Basic abc", "YWMtabc"] as [String?] {
            let error = #expect(throws: EasemobError.self) { try EasemobBearer.token(from: bad) }
            #expect(error?.status == 401 && error?.error == "unauthorized")
        }
    }

    @Test func ttl() throws {
        #expect(try EasemobTTL.lifetime(nil) == 60 * 24 * 3600)
        #expect(try EasemobTTL.lifetime(1) == 1)
        #expect(try EasemobTTL.lifetime(0) == nil)
        #expect(throws: EasemobError.self) { try EasemobTTL.lifetime(-1) }
    }
}
