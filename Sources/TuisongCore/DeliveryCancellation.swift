import Foundation

/// Cancels what has not been sent yet to devices that are deleted or leave their account, inside
/// the transaction that deletes or unbinds them: their held, queued and sending delivery rows
/// become `skipped` with a reason, counted among their messages' skips, and a message left with
/// nothing else to wait for completes. A held row is never released to a device that is gone
/// (once the device is deleted its rows have no device any more, and nothing could tell them
/// from a push to a token no device registered).
///
/// A row `sending` is a retry in flight: the push may still arrive (at least once), but its
/// outcome no longer moves the row, so a service asking for another try cannot bring it back.
///
/// The store calls it for its own deletes (`Store.deleteDevice`, `AccountStore.deleteAccount`,
/// `AccountStore.unbindDevice`); a plugin that deletes core devices in its own `SharedDatabase`
/// write calls it in that write, before the `DELETE`:
///
///     try DeliveryCancellation.cancel(
///         db, devices: "SELECT device_id FROM acme_bindings WHERE channel_id = \(channelID)",
///         reason: DeliveryCancellation.deviceDeleted, now: now)
public enum DeliveryCancellation {
    /// The device was deleted (the native API, a vendor's unbind).
    public static let deviceDeleted = "device_deleted"
    /// The account the device was bound to was deleted.
    public static let accountDeleted = "account_deleted"
    /// The device left its account (a logout, or another user's login on it).
    public static let deviceUnbound = "device_unbound"

    /// Cancels the pending deliveries of the devices `devices` selects (one column of
    /// `devices.id`). Returns how many rows it cancelled.
    @discardableResult
    public static func cancel(_ db: any SQLExecutor, devices: SQLQuery, reason: String, now: Int64) throws -> Int {
        // PostgreSQL's leased slices: the row's lease, its slice, the devices locked first.
        let postgres = db.dialect.sharesWorkInSlices
        // A retry's lease (PostgreSQL) ends with the row.
        let lease = postgres ? ", owner = NULL, lease_until = NULL" : ""
        // PostgreSQL counts skips per slice: a row's slice is the one whose flush wrote it.
        let slice = postgres ? ", slice" : ""
        if postgres {
            // The devices first: a flush writing rows for them meanwhile is waited for (its rows
            // are then cancelled here), or waits and sees them gone (it locks them too).
            _ = try db.fetchAll("SELECT id FROM devices WHERE id IN (\(devices)) ORDER BY id FOR UPDATE")
        }
        // Usually there is nothing to cancel: one probe of `deliveries_by_device`.
        guard
            try db.fetchOne(
                """
                SELECT 1 FROM deliveries
                WHERE device_id IN (\(devices)) AND state IN ('held', 'queued', 'sending') LIMIT 1
                """) != nil
        else { return 0 }
        var counts: [Int64: (held: Int64, queued: Int64, sending: Int64)] = [:]
        var skips: [SkipKey: Int64] = [:]
        for state in ["held", "queued", "sending"] {
            // One statement per state: `RETURNING` gives the new values, and each row's old
            // state says which counter it leaves.
            let rows = try db.fetchAll(
                """
                UPDATE deliveries SET state = 'skipped', reason = \(reason), next_attempt_at = NULL,
                    updated_at = \(now)\(raw: lease)
                WHERE state = \(state) AND device_id IN (\(devices))
                RETURNING message_id\(raw: slice)
                """)
            for row in rows {
                let messageID = row[0].int ?? 0
                var count = counts[messageID] ?? (0, 0, 0)
                switch state {
                case "held": count.held += 1
                case "queued": count.queued += 1
                default: count.sending += 1
                }
                counts[messageID] = count
                skips[SkipKey(messageID: messageID, slice: postgres ? row[1].int ?? 0 : nil), default: 0] += 1
            }
        }
        guard !counts.isEmpty else { return 0 }
        // In id order: two transactions cancelling for the same messages take their locks in
        // one order (PostgreSQL).
        for (messageID, count) in counts.sorted(by: { $0.key < $1.key }) {
            let n = count.held + count.queued + count.sending
            // The message's own row on both databases: on PostgreSQL a message's counts are its
            // row's plus its slices' (`SQLDialect.messageCounter`), as retries count there too.
            try db.run(
                """
                UPDATE messages SET held = held - \(count.held), queued = queued - \(count.queued),
                    sending = sending - \(count.sending), skipped = skipped + \(n)
                WHERE id = \(messageID)
                """)
        }
        for (key, n) in skips.sorted(by: {
            ($0.key.messageID, $0.key.slice ?? 0) < ($1.key.messageID, $1.key.slice ?? 0)
        }) {
            if let slice = key.slice {
                try db.run(
                    """
                    INSERT INTO message_skips (message_id, slice, reason, count) VALUES (\(key.messageID), \(slice), \(reason), \(n))
                    ON CONFLICT (message_id, slice, reason) DO UPDATE SET count = message_skips.count + excluded.count
                    """)
            } else {
                try db.run(
                    """
                    INSERT INTO message_skips (message_id, reason, count) VALUES (\(key.messageID), \(reason), \(n))
                    ON CONFLICT (message_id, reason) DO UPDATE SET count = message_skips.count + excluded.count
                    """)
            }
        }
        let dialect = db.dialect
        let unfinished = ["queued", "sending", "held"].map { dialect.messageCounter($0) }.joined(separator: " + ")
        for messageID in counts.keys.sorted() {
            // Completed once its audience is sent and nothing is left to wait for.
            try db.run(
                """
                UPDATE messages SET completed_at = \(now)
                WHERE id = \(messageID) AND state = 'completed' AND completed_at IS NULL AND \(raw: unfinished) = 0
                """)
        }
        return skips.values.reduce(0) { $0 + Int($1) }
    }

    private struct SkipKey: Hashable {
        var messageID: Int64
        var slice: Int64?
    }
}
