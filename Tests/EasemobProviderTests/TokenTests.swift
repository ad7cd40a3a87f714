import Foundation
import Testing
import TuisongCrypto

@testable import EasemobProvider

/// Signed tokens: issue/verify, expiry, tampering, bindings that revoke, bearer parsing, ttl.
@Suite struct TokenTests {
    let key = SecureRandom.bytes(32)
    let now = Date(timeIntervalSince1970: 1_700_000_000)
    let appBinding = EasemobToken.appBinding(clientID: "YXA6id", secretRotation: "sealed-1")

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
                binding: EasemobToken.appBinding(clientID: "YXA6id", secretRotation: "sealed-2"),
                now: now)
        }
    }

    @Test func bearerHeader() throws {
        #expect(try EasemobBearer.token(from: "Bearer YWMtabc") == "YWMtabc")
        #expect(try EasemobBearer.token(from: "bearer  YWMtabc ") == "YWMtabc")
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
