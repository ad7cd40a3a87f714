import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit

@testable import TuisongAPNs

@Suite struct APNsReasonTests {
    @Test func everyReferenceReasonIsKnownWithItsStatus() {
        let table: [Int: [String]] = [
            400: [
                "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
                "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
                "MissingTopic", "PayloadEmpty", "TopicDisallowed",
            ],
            403: [
                "BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken", "Forbidden",
                "InvalidProviderToken",
                "MissingProviderToken", "BadEnvironmentKeyInToken",
            ],
            404: ["BadPath"], 405: ["MethodNotAllowed"], 410: ["ExpiredToken", "Unregistered"],
            413: ["PayloadTooLarge"],
            429: ["TooManyProviderTokenUpdates", "TooManyRequests"], 500: ["InternalServerError"],
            503: ["ServiceUnavailable", "Shutdown"],
        ]
        var seen = 0
        for (status, reasons) in table {
            for raw in reasons {
                let reason = APNsReason(raw)
                if case .unknown = reason { Issue.record("\(raw) is not a known reason") }
                #expect(reason.rawValue == raw)
                #expect(reason.description == raw)
                #expect(reason.status == status, "\(raw)")
                seen += 1
            }
        }
        #expect(seen == APNsReason.known.count)
        #expect(APNsReason("SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsReason("badDeviceToken") == .unknown("badDeviceToken"))  // case matters on the wire
        #expect(APNsReason("").status == nil)
    }

    @Test func errorBody() {
        let body = APNsErrorBody(parsing: Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8))
        #expect(body.reason == "Unregistered")
        #expect(body.timestamp == Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(
            APNsErrorBody(parsing: Array(#"{"reason":"BadTopic"}"#.utf8))
                == APNsErrorBody(reason: "BadTopic", timestamp: nil))
        #expect(APNsErrorBody(parsing: []) == APNsErrorBody(reason: nil, timestamp: nil))
        #expect(APNsErrorBody(parsing: Array("<html>".utf8)) == APNsErrorBody(reason: nil, timestamp: nil))
        #expect(APNsErrorBody(parsing: Array(#"{"reason":5}"#.utf8)).reason == nil)
        let written = APNsErrorBody(reason: "ExpiredToken", timestamp: Date(timeIntervalSince1970: 1_600_000_000.5))
        #expect(
            String(decoding: written.serialized(), as: UTF8.self)
                == #"{"reason":"ExpiredToken","timestamp":1600000000500}"#)
        #expect(APNsErrorBody(parsing: written.serialized()) == written)
    }
}

@Suite struct APNsOutcomeTests {
    let since = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func deliveredAndInvalidated() {
        #expect(APNsOutcome.classify(status: 200, reason: nil, timestamp: nil) == .delivered)
        #expect(
            APNsOutcome.classify(status: 410, reason: "Unregistered", timestamp: since)
                == .invalidateDevice(.unregistered, since: since))
        #expect(
            APNsOutcome.classify(status: 410, reason: "ExpiredToken", timestamp: nil)
                == .invalidateDevice(.expiredToken, since: nil))
        #expect(
            APNsOutcome.classify(status: 410, reason: nil, timestamp: since)
                == .invalidateDevice(.unknown("HTTP 410"), since: since))
        #expect(
            APNsOutcome.classify(status: 400, reason: "BadDeviceToken", timestamp: nil)
                == .invalidateDevice(.badDeviceToken, since: nil))
    }

    @Test func retries() {
        #expect(
            APNsOutcome.classify(status: 429, reason: "TooManyRequests", timestamp: nil)
                == .retry(.tooManyRequests, after: .seconds(60)))
        #expect(
            APNsOutcome.classify(status: 429, reason: "TooManyProviderTokenUpdates", timestamp: nil)
                == .retry(.tooManyProviderTokenUpdates, after: .seconds(60)))
        #expect(
            APNsOutcome.classify(status: 500, reason: "InternalServerError", timestamp: nil)
                == .retry(.internalServerError, after: nil))
        #expect(
            APNsOutcome.classify(status: 503, reason: "ServiceUnavailable", timestamp: nil)
                == .retry(.serviceUnavailable, after: nil))
        #expect(APNsOutcome.classify(status: 503, reason: "Shutdown", timestamp: nil) == .retry(.shutdown, after: nil))
        #expect(
            APNsOutcome.classify(status: 502, reason: nil, timestamp: nil) == .retry(.unknown("HTTP 502"), after: nil))
        #expect(
            APNsOutcome.classify(status: 400, reason: "IdleTimeout", timestamp: nil) == .retry(.idleTimeout, after: nil)
        )
    }

    @Test func credentials() {
        #expect(
            APNsOutcome.classify(status: 403, reason: "ExpiredProviderToken", timestamp: nil) == .refreshProviderToken)
        for raw in [
            "InvalidProviderToken", "BadCertificate", "BadCertificateEnvironment", "MissingProviderToken",
            "BadEnvironmentKeyInToken",
        ] {
            #expect(
                APNsOutcome.classify(status: 403, reason: raw, timestamp: nil) == .credentialFailing(APNsReason(raw)))
        }
        #expect(APNsOutcome.classify(status: 403, reason: "Forbidden", timestamp: nil) == .failed(.forbidden))
        #expect(APNsOutcome.classify(status: 403, reason: "NewThing", timestamp: nil) == .failed(.unknown("NewThing")))
    }

    @Test func permanentFailures() {
        for raw in [
            "DeviceTokenNotForTopic", "BadTopic", "TopicDisallowed", "PayloadEmpty", "BadCollapseId", "InvalidPushType",
        ] {
            #expect(APNsOutcome.classify(status: 400, reason: raw, timestamp: nil) == .failed(APNsReason(raw)))
        }
        #expect(
            APNsOutcome.classify(status: 413, reason: "PayloadTooLarge", timestamp: nil) == .failed(.payloadTooLarge))
        #expect(APNsOutcome.classify(status: 404, reason: "BadPath", timestamp: nil) == .failed(.badPath))
        #expect(
            APNsOutcome.classify(status: 405, reason: "MethodNotAllowed", timestamp: nil) == .failed(.methodNotAllowed))
    }

    @Test(arguments: [-1, 0, 100, 204, 302, 418, 499, 600, 999, Int.max, Int.min])
    func unknownStatusesNeverTrap(_ status: Int) {
        let outcome = APNsOutcome.classify(status: status, reason: status == 418 ? "Teapot" : nil, timestamp: nil)
        switch status {
        case 200..<300: #expect(outcome == .delivered)
        case 500...: #expect(outcome == .retry(.unknown("HTTP \(status)"), after: nil))
        case 418: #expect(outcome == .failed(.unknown("Teapot")))
        default: #expect(outcome == .failed(.unknown("HTTP \(status)")))
        }
    }
}

@Suite struct ProviderTokenCacheTests {
    @Test func reusesTheTokenUntilTheRefreshInterval() throws {
        let key = try PrivateKey.generateP256()
        let clock = ManualClock(Date(timeIntervalSince1970: 1_700_000_000.6))
        let cache = try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: clock)
        #expect(cache.refreshInterval == .seconds(3000))
        let first = try cache.providerToken()
        #expect(first.issuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        let claims = try JWT.verifyES256(first.jwt, publicKey: key.publicKey)
        #expect(claims == JWT.Token(alg: "ES256", kid: "ABC123DEFG", iss: "DEF123GHIJ", iat: 1_700_000_000))

        clock.advance(by: 49 * 60 + 59)
        #expect(try cache.token() == first.jwt)
        #expect(cache.mintedCount == 1)
        clock.advance(by: 1)
        let second = try cache.providerToken()
        #expect(second.jwt != first.jwt)
        #expect(second.issuedAt == first.issuedAt.addingTimeInterval(3000))
        #expect(try cache.token() == second.jwt)
        #expect(cache.mintedCount == 2)
    }

    @Test func refreshIntervalIsClampedTo20To60Minutes() throws {
        let key = try PrivateKey.generateP256()
        let clock = ManualClock()
        func interval(_ requested: Duration) throws -> Duration {
            try ProviderTokenCache(key: key, keyID: "K", teamID: "T", refreshInterval: requested, clock: clock)
                .refreshInterval
        }
        #expect(try interval(.seconds(60)) == .seconds(1200))
        #expect(try interval(.seconds(3 * 3600)) == .seconds(3600))
        #expect(try interval(.seconds(1800)) == .seconds(1800))

        let short = try ProviderTokenCache(
            key: key, keyID: "K", teamID: "T", refreshInterval: .seconds(1), clock: clock)
        let token = try short.token()
        clock.advance(by: 20 * 60 - 1)
        #expect(try short.token() == token)
        clock.advance(by: 1)
        #expect(try short.token() != token)
    }

    @Test func expiredProviderTokenForcesExactlyOneRefresh() throws {
        let clock = ManualClock()
        let cache = try ProviderTokenCache(key: PrivateKey.generateP256(), keyID: "K", teamID: "T", clock: clock)
        let stale = try cache.providerToken()
        clock.advance(by: 5)  // far less than 20 minutes: only a forced refresh may mint now
        #expect(try cache.token() == stale.jwt)
        cache.invalidate(ifIssuedAt: stale.issuedAt)
        let fresh = try cache.providerToken()
        #expect(fresh.jwt != stale.jwt)
        #expect(fresh.issuedAt == stale.issuedAt.addingTimeInterval(5))
        // Other streams that carried the stale token report it too: nothing more happens.
        cache.invalidate(ifIssuedAt: stale.issuedAt)
        cache.invalidate(ifIssuedAt: stale.issuedAt)
        #expect(try cache.token() == fresh.jwt)
        // A report about a token this cache never had changes nothing.
        cache.invalidate(ifIssuedAt: Date(timeIntervalSince1970: 0))
        #expect(try cache.token() == fresh.jwt)
        #expect(cache.mintedCount == 2)
        // If APNs also rejects the new token, that one is refreshed in turn.
        cache.invalidate(ifIssuedAt: fresh.issuedAt)
        #expect(try cache.token() != fresh.jwt)
        #expect(cache.mintedCount == 3)
    }

    @Test func sameSecondReplacementIsNotRefreshedAgain() throws {
        let clock = ManualClock()
        let cache = try ProviderTokenCache(key: PrivateKey.generateP256(), keyID: "K", teamID: "T", clock: clock)
        let stale = try cache.providerToken()
        cache.invalidate(ifIssuedAt: stale.issuedAt)
        let fresh = try cache.providerToken()
        #expect(fresh.issuedAt == stale.issuedAt)  // the clock did not move
        #expect(fresh.jwt != stale.jwt)
        cache.invalidate(ifIssuedAt: stale.issuedAt)  // a late report about the old one
        #expect(try cache.token() == fresh.jwt)
        #expect(cache.mintedCount == 2)
    }

    @Test func manyStreamsReportingAtOnceMintOneToken() async throws {
        let clock = ManualClock()
        let cache = try ProviderTokenCache(key: PrivateKey.generateP256(), keyID: "K", teamID: "T", clock: clock)
        let stale = try cache.providerToken()
        clock.advance(by: 30)
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    cache.invalidate(ifIssuedAt: stale.issuedAt)
                    return try cache.token()
                }
            }
            var collected: Set<String> = []
            for try await token in group { collected.insert(token) }
            return collected
        }
        #expect(cache.mintedCount == 2)
        #expect(tokens.subtracting([stale.jwt]).count == 1)
        #expect(try cache.token() != stale.jwt)
    }

    @Test func clockSteppingBackwards() throws {
        let clock = ManualClock()
        let cache = try ProviderTokenCache(key: PrivateKey.generateP256(), keyID: "K", teamID: "T", clock: clock)
        let token = try cache.token()
        clock.advance(by: -60)  // an NTP correction keeps the token
        #expect(try cache.token() == token)
        clock.advance(by: -3600)  // the token's iat would now be an hour in the future
        #expect(try cache.token() != token)
    }

    @Test func needsAP256Key() throws {
        #expect(throws: CryptoError.self) {
            _ = try ProviderTokenCache(
                key: TestKeys.rsa(0), keyID: "K", teamID: "T", clock: ManualClock())
        }
    }
}
