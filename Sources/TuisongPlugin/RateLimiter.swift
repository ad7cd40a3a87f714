import Foundation
import Synchronization
import TuisongCore

/// A token bucket per key (a vendor's API key, an app): `burst` calls at once, refilled at
/// `rate` per second. Each provider answers a refusal in its own dialect.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    private let rate: Double
    private let burst: Double
    private let clock: any TuisongCore.Clock
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(rate: Double, burst: Double, clock: any TuisongCore.Clock) {
        self.rate = rate
        self.burst = burst
        self.clock = clock
    }

    /// Takes one token for `key`; false when there is none left.
    public func allow(_ key: String) -> Bool {
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
