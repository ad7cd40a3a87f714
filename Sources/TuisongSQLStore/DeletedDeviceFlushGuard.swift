import Foundation
import TuisongCore

/// The flush's side of `DeliveryCancellation`: a page of the audience is read, then its outcomes
/// flushed; a device deleted in between had no row yet for the delete to cancel. Each backend
/// reads which of the flush's devices still exist, in the flush's transaction (PostgreSQL locks
/// them `FOR KEY SHARE`, so a delete waits for the flush or the flush for the delete), and
/// writes the flush this gives: a held or queued row of a device that is gone would otherwise
/// be stored without its device, and released or retried to it later.
package enum DeletedDeviceFlushGuard {
    /// The devices the flush's delivery rows name, each once, in id order (the order
    /// PostgreSQL locks them in); with `pendingOnly`, those of its held and queued rows.
    package static func deviceIDs(_ progress: MessageProgress, pendingOnly: Bool) -> [Int64] {
        Set(
            progress.deliveries.lazy.filter { !pendingOnly || $0.state == .held || $0.state == .queued }
                .compactMap(\.deviceID)
        ).sorted()
    }

    /// `progress` with its held and queued rows of devices not in `existing` skipped
    /// `device_deleted`, moved from their counts to the skips.
    package static func cancellingDeleted(_ progress: MessageProgress, existing: Set<Int64>) -> MessageProgress {
        var guarded = progress
        for index in guarded.deliveries.indices {
            let delivery = guarded.deliveries[index]
            guard let deviceID = delivery.deviceID, !existing.contains(deviceID),
                delivery.state == .held || delivery.state == .queued
            else { continue }
            guarded.counts[delivery.state] -= 1
            guarded.counts.skipped += 1
            guarded.skips[DeliveryCancellation.deviceDeleted, default: 0] += 1
            guarded.deliveries[index].state = .skipped
            guarded.deliveries[index].reason = DeliveryCancellation.deviceDeleted
            guarded.deliveries[index].nextAttemptAt = nil
        }
        return guarded
    }
}
