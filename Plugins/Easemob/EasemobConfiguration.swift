import Foundation
import Synchronization
import TuisongCore
import TuisongPlugin

/// The `"easemob"` section of the config, all keys optional:
///
///     "easemob": {
///       "requests_per_second": 100,   // per app, authenticated REST calls (Easemob's limit)
///       "burst": 200                  // calls allowed at once before the rate applies
///     }
///
/// Over the limit a call answers Easemob's 429 `reach_limit`. `POST token` has a bucket of its
/// own per app, taken before the client secret or password is checked, so guessing is slowed
/// while nobody can use up an app's quota without its credentials.
struct EasemobConfiguration: Sendable {
    var requestsPerSecond: Double = 100
    var burst: Double = 200

    init() {}

    init(_ section: JSONValue?) throws {
        guard let section else { return }
        guard case .object(let members) = section else {
            throw ProviderConfigError(provider: EasemobAppSettings.vendor, key: "", message: "must be an object")
        }
        for (key, value) in members {
            func number(_ range: ClosedRange<Double>) throws -> Double {
                guard let number = value.doubleValue, range.contains(number) else {
                    throw ProviderConfigError(
                        provider: EasemobAppSettings.vendor, key: key,
                        message: "must be a number within \(range.lowerBound)…\(range.upperBound)")
                }
                return number
            }
            switch key {
            case "requests_per_second": requestsPerSecond = try number(0.001...1_000_000)
            case "burst": burst = try number(1...10_000_000)
            default:
                throw ProviderConfigError(
                    provider: EasemobAppSettings.vendor, key: key, message: "is not a known key")
            }
        }
    }
}

/// A token bucket per key: `burst` calls at once, refilled at `rate` per second.
final class EasemobRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    private let rate: Double
    private let burst: Double
    private let clock: any TuisongCore.Clock
    private let buckets = Mutex<[String: Bucket]>([:])

    init(rate: Double, burst: Double, clock: any TuisongCore.Clock) {
        self.rate = rate
        self.burst = burst
        self.clock = clock
    }

    /// Takes one token for `key`, or throws Easemob's 429.
    func take(_ key: String) throws(EasemobError) {
        let now = clock.now
        let allowed = buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            bucket.tokens = min(burst, bucket.tokens + max(0, now.timeIntervalSince(bucket.updated)) * rate)
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[key] = bucket
            return allowed
        }
        guard allowed else {
            throw EasemobError(status: 429, error: "reach_limit", "This request has reached api limit")
        }
    }
}
