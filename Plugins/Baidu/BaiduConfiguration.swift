import Foundation
import Synchronization
import TuisongCore
import TuisongPlugin

/// The provider's config section, all keys optional:
///
///     "baidu": {
///       "requests_per_second": 100,   // per apikey, REST calls after authentication
///       "burst": 200,                 // calls allowed at once before the rate applies
///       "signature_window_seconds": 600,
///       "report_utc_offset_hours": 8, // days of the statistics reports (Baidu: China time)
///       "report_days": 7
///     }
struct BaiduConfiguration: Sendable {
    var requestsPerSecond: Double = 100
    var burst: Double = 200
    /// A signature is valid this long around its `timestamp` (Baidu: timestamp + 10 min).
    var signatureWindow: TimeInterval = 600
    var reportUTCOffset: Int = 8 * 3600
    var reportDays: Int = 7

    init() {}

    init(_ section: JSONValue?) throws {
        guard let section else { return }
        guard case .object(let members) = section else {
            throw ProviderConfigError(provider: BaiduProvider.name, key: "", message: "must be an object")
        }
        for (key, value) in members {
            func number(_ range: ClosedRange<Double>) throws -> Double {
                guard let number = value.doubleValue, range.contains(number) else {
                    throw ProviderConfigError(
                        provider: BaiduProvider.name, key: key,
                        message: "must be a number within \(range.lowerBound)…\(range.upperBound)")
                }
                return number
            }
            switch key {
            case "requests_per_second": requestsPerSecond = try number(0.001...1_000_000)
            case "burst": burst = try number(1...10_000_000)
            case "signature_window_seconds": signatureWindow = try number(1...86_400)
            case "report_utc_offset_hours": reportUTCOffset = Int(try number(-12...14) * 3600)
            case "report_days": reportDays = Int(try number(1...90))
            default:
                throw ProviderConfigError(provider: BaiduProvider.name, key: key, message: "is not a known key")
            }
        }
    }
}

/// A token bucket per apikey: `burst` calls at once, refilled at `rate` per second.
final class RateLimiter: Sendable {
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

    /// Takes one token for `key`; false when there is none left.
    func allow(_ key: String) -> Bool {
        let now = clock.now
        return buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(burst, bucket.tokens + elapsed * rate)
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[key] = bucket
            return allowed
        }
    }
}
