import Foundation
import Synchronization
import TuisongCore

/// This node's share of a limit meant for the whole gateway. With several `tuisong serve`
/// nodes on one database, a limit configured for the gateway (a vendor's requests per second)
/// holds for the cluster: each node takes `limit / live nodes`, the live nodes counted from the
/// heartbeat table (`WorkQueue.liveNodeCount()`, 1 on SQLite). The gateway runtime refreshes
/// the count in the background every few seconds; a node that just started or stopped shifts
/// the shares within that interval.
///
/// A share never drops below one request (or the whole limit, when that is less than one):
/// with more nodes than requests allowed, each node still lets one through, so the cluster may
/// then exceed the configured limit by that rounding.
public final class NodeShare: Sendable {
    private let nodes: Atomic<Int>

    /// `liveNodes` until the first `update` (1: the whole limit).
    public init(liveNodes: Int = 1) {
        nodes = Atomic(max(1, liveNodes))
    }

    /// How many nodes share the limits now (at least 1).
    public var liveNodes: Int { nodes.load(ordering: .relaxed) }

    /// Records how many nodes are live; fewer than 1 counts as 1 (this one is).
    public func update(liveNodes: Int) {
        nodes.store(max(1, liveNodes), ordering: .relaxed)
    }

    /// This node's part of `limit`: `limit / liveNodes`, never below `min(limit, 1)`.
    public func share(of limit: Double) -> Double {
        Self.share(of: limit, liveNodes: liveNodes)
    }

    /// `limit / liveNodes`, never below `min(limit, 1)`; `liveNodes` below 1 counts as 1.
    public static func share(of limit: Double, liveNodes: Int) -> Double {
        max(min(limit, 1), limit / Double(max(1, liveNodes)))
    }
}

/// A token bucket per key (a vendor's API key, an app): `burst` calls at once, refilled at
/// `rate` per second. Each provider answers a refusal in its own dialect.
///
/// `rate` and `burst` are the gateway's; with a `NodeShare`, this node allows its share of
/// both (see `NodeShare`), read on every call so a change in live nodes applies at once.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Date
    }

    private let rate: Double
    private let burst: Double
    private let share: NodeShare?
    private let clock: any TuisongCore.Clock
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Keys kept at most: past it, full buckets (the same as none) are forgotten, and if that
    /// is not enough, all of them: keys from the network (a client's address) must not grow
    /// the table without bound, and a key forgotten only starts again with a full bucket.
    private let maxKeys: Int

    public init(
        rate: Double, burst: Double, clock: any TuisongCore.Clock, share: NodeShare? = nil, maxKeys: Int = 100_000
    ) {
        self.rate = rate
        self.burst = burst
        self.share = share
        self.clock = clock
        self.maxKeys = maxKeys
    }

    /// This node's refill rate (per second) and bucket size now.
    public var effectiveLimits: (rate: Double, burst: Double) {
        guard let share else { return (rate, burst) }
        return (share.share(of: rate), share.share(of: burst))
    }

    /// Takes one token for `key`; false when there is none left.
    public func allow(_ key: String) -> Bool { waitTime(taking: key) == nil }

    /// Takes one token for `key`: nil when it had one, else the seconds until it has one again
    /// (what a refusal's `Retry-After` says, rounded up).
    public func waitTime(taking key: String) -> TimeInterval? {
        let now = clock.now
        let (rate, burst) = effectiveLimits
        return buckets.withLock { buckets in
            if buckets[key] == nil && buckets.count >= maxKeys {
                buckets = buckets.filter { $0.value.tokens + now.timeIntervalSince($0.value.updated) * rate < burst }
                if buckets.count >= maxKeys { buckets.removeAll() }
            }
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.updated))
            bucket.tokens = min(burst, bucket.tokens + elapsed * rate)
            bucket.updated = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[key] = bucket
            return allowed ? nil : (1 - bucket.tokens) / max(rate, .leastNonzeroMagnitude)
        }
    }

    /// Keys with a bucket now (what `maxKeys` bounds).
    public var keyCount: Int { buckets.withLock { $0.count } }
}
