import Foundation
import Synchronization

/// The rules of an idempotency key (`PushJob.idempotencyKey`, the native API's
/// `Idempotency-Key` header): a client that retries a send it saw fail sends the same key, and
/// the gateway answers the message the first attempt created instead of sending it twice.
public enum IdempotencyKey {
    /// How long an app's key answers its first message; afterwards the key may be used again.
    public static let lifetime: TimeInterval = 24 * 60 * 60

    /// The longest key, in bytes.
    public static let maxLength = 255

    /// 1–255 bytes of printable ASCII (0x20–0x7E): what fits a header value unchanged, and
    /// compares the same in every database collation.
    public static func isValid(_ key: String) -> Bool {
        let bytes = key.utf8
        return (1...maxLength).contains(bytes.count) && bytes.allSatisfy { (0x20...0x7E).contains($0) }
    }

    /// Expired keys a store deletes in one transaction when it sweeps on its own.
    public static let sweepLimit = 1000
}

/// When a store deletes expired idempotency keys on its own: after creating a message with a
/// key, at most once a minute, or at once again while the last sweep found a full batch (keys
/// are created faster than a sweep a minute removes them). No timer and no task of its own:
/// a gateway that receives no keys has nothing to forget.
public final class IdempotencyKeySweeper: Sendable {
    private static let interval: TimeInterval = 60
    /// When the next sweep is due; nil: none ran yet.
    private let next = Mutex<Date?>(nil)

    public init() {}

    /// Runs `forget(before, limit)` when a sweep is due at `now`. A failure is left for the next
    /// sweep: the message was committed, and an expired key is ignored until it is deleted.
    public func sweepIfDue(now: Date, _ forget: (_ before: Date, _ limit: Int) async throws -> Int) async {
        let due = next.withLock { next -> Bool in
            if let due = next, due > now { return false }
            next = now.addingTimeInterval(Self.interval)
            return true
        }
        guard due else { return }
        let limit = IdempotencyKey.sweepLimit
        guard let deleted = try? await forget(now.addingTimeInterval(-IdempotencyKey.lifetime), limit),
            deleted >= limit
        else { return }
        next.withLock { $0 = now }
    }
}
