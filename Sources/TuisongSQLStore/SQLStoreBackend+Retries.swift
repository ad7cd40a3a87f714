import Foundation
import TuisongCore

// Retried deliveries' outcomes and expired holds, written once. What differs between the
// databases is said by the dialect and the backend, not written twice: where a delivery's
// counts live (`SQLDialect.sharesWorkInSlices`: SQLite keeps them on the message's row;
// PostgreSQL on the slice row whose flush wrote the delivery, its per-reason rows keyed by that
// slice, and a retry's on the message's row), a retry's lease (`sqlRetryLease`: PostgreSQL
// only, measured by the database's clock, `SQLDialect.currentTimeMilliseconds`), who may take
// retries (`sqlTakesRetries`: on SQLite the file's dispatcher alone) and `SKIP LOCKED`
// (`SQLDialect.skipLocked`).
extension SQLStoreBackend {
    /// Claims due retry rows, and rows whose lease ended (a dead node was sending them, where
    /// retries are leased), marking them `sending` under this store's lease; oldest due first.
    public func claimDueDeliveries(now: Date, limit: Int) async throws -> [DeliveryRecord] {
        guard sqlTakesRetries() else { return [] }
        let nowMs = SQLTime.milliseconds(now)
        let lease = sqlRetryLease
        return try await sqlWrite { db in
            let clock = db.dialect.currentTimeMilliseconds
            let leaseEnded: SQLQuery = lease == nil ? "" : " OR (state = 'sending' AND lease_until < \(raw: clock))"
            // Picked and locked first (skipping rows another node is claiming), then marked: the
            // state each was in says which counter it leaves.
            let picked = try db.fetchAll(
                """
                SELECT id, state FROM deliveries WHERE (state = 'queued' AND next_attempt_at <= \(nowMs))\(leaseEnded)
                ORDER BY next_attempt_at LIMIT \(limit)\(raw: db.dialect.skipLocked)
                """)
            guard !picked.isEmpty else { return [] }
            let leasing: SQLQuery =
                lease.map { ", owner = \($0.owner), lease_until = \(raw: clock) + \($0.milliseconds)" } ?? ""
            let claimed = try db.fetchAll(
                """
                UPDATE deliveries SET state = 'sending', updated_at = \(nowMs)\(leasing)
                WHERE id IN (SELECT value FROM \(db.dialect.list(picked.map { $0[0].int ?? 0 })))
                RETURNING \(raw: Rows.deliveryColumns)
                """
            ).map { try Rows.delivery(columns: $0) }
            let wasQueued = Set(picked.filter { $0[1].string == "queued" }.map { $0[0].int ?? 0 })
            var perMessage: [Int64: Int64] = [:]
            for record in claimed where wasQueued.contains(record.id) { perMessage[record.messageID, default: 0] += 1 }
            let move = db.prepare(MessageCounterStatements.moveQueuedToSending)
            for (messageID, n) in perMessage.sorted(by: { $0.key < $1.key }) {
                try move.run([.integer(n), .integer(messageID)])
            }
            return claimed.sorted {
                ($0.nextAttemptAt ?? .distantPast, $0.id) < ($1.nextAttemptAt ?? .distantPast, $1.id)
            }
        }
    }

    /// Retry rows left `sending` go back to `queued`, due now: every one on SQLite (called when
    /// this store becomes the file's dispatcher, the one that sends them); where retries are
    /// leased, those whose lease ended (rows another live node is sending are left alone).
    public func requeueInterruptedDeliveries() async throws -> Int {
        guard sqlTakesRetries() else { return 0 }
        return try await requeueSendingDeliveries()
    }

    /// `requeueInterruptedDeliveries` without asking whether this store takes retries (SQLite's
    /// dispatcher asks once, when it takes the role).
    package func requeueSendingDeliveries() async throws -> Int {
        let now = nowMilliseconds
        let leased = sqlRetryLease != nil
        return try await sqlWrite { db in
            let leaseEnded: SQLQuery =
                leased
                ? " AND (lease_until IS NULL OR lease_until < \(raw: db.dialect.currentTimeMilliseconds))" : ""
            let rows = try db.fetchAll(
                """
                UPDATE deliveries SET state = 'queued', next_attempt_at = \(now), updated_at = \(now)\(raw: leased ? ", owner = NULL, lease_until = NULL" : "")
                WHERE state = 'sending'\(leaseEnded)
                RETURNING message_id
                """)
            var perMessage: [Int64: Int64] = [:]
            for row in rows { perMessage[row[0].int ?? 0, default: 0] += 1 }
            let move = db.prepare(MessageCounterStatements.moveSendingToQueued)
            for (messageID, n) in perMessage.sorted(by: { $0.key < $1.key }) {
                try move.run([.integer(n), .integer(messageID)])
            }
            return rows.count
        }
    }

    /// Applies retried deliveries' outcomes; a row this store no longer holds (PostgreSQL: its
    /// lease ended and another node took it) is left to the one that does.
    public func applyDeliveryUpdates(_ updates: [DeliveryUpdate], at: Date) async throws {
        guard !updates.isEmpty else { return }
        let now = SQLTime.milliseconds(at)
        let owner = sqlRetryLease?.owner
        let webhooks = webhookOutbox
        try await sqlWrite { db in
            let slices = db.dialect.sharesWorkInSlices
            var failedRows: [Int64] = []
            var deltas: [Int64: DeliveryCounts] = [:]
            var failures: [ReasonKey: [String: Int]] = [:]
            var invalidations: [DeviceInvalidation] = []
            let apply = db.prepare(owner == nil ? Self.applyDeliveryUpdate : Self.applyLeasedDeliveryUpdate)
            // In id order: writers side by side (PostgreSQL) lock the rows in one order.
            for update in updates.sorted(by: { $0.deliveryID < $1.deliveryID }) {
                var values: [SQLValue] = [
                    .text(update.to.rawValue), SQLValue(update.reason), SQLValue(update.serviceMessageID),
                    .integer(Int64(update.attempts)), SQLValue(update.nextAttemptAt.map(SQLTime.milliseconds)),
                    .integer(now), .integer(update.deliveryID), .text(update.from.rawValue),
                ]
                if let owner { values.append(.text(owner)) }
                guard let row = try apply.fetchAll(values).first else { continue }
                deltas[update.messageID, default: DeliveryCounts()][update.from] -= 1
                deltas[update.messageID, default: DeliveryCounts()][update.to] += 1
                if update.to == .failed {
                    failedRows.append(update.deliveryID)
                    if let reason = update.reason {
                        let key = ReasonKey(messageID: update.messageID, slice: slices ? row[0].int ?? 0 : nil)
                        failures[key, default: [:]][reason, default: 0] += 1
                    }
                }
                if let invalidation = update.invalidation { invalidations.append(invalidation) }
            }
            // The per-reason counts and the devices before the messages' rows, in the order a
            // flush takes them (PostgreSQL: a flush finishing a message holds its reason rows
            // and devices when it locks the message's row).
            try MessageReasonCounts.addFailures(db, failures)
            try DeviceInvalidations.apply(db, invalidations, now: now, webhooks: webhooks)
            try webhooks.deliveryRowsFailed(db, failedRows, now: now)
            let addCounts = db.prepare(MessageCounterStatements.addCounts)
            for (messageID, c) in deltas.sorted(by: { $0.key < $1.key }) {
                try addCounts.run(
                    [c.queued, c.sending, c.delivered, c.failed, c.skipped, c.held].map { .integer(Int64($0)) }
                        + [.integer(messageID)])
            }
            try Self.finishWaitingMessages(db, Array(deltas.keys), now: now, webhooks: webhooks)
        }
    }

    /// A retried delivery's outcome: state, reason, service message id, attempts, next attempt,
    /// now, the row, the state it was in. Returns a row when it applied (the row's slice where
    /// work is shared in slices, else its message).
    static var applyDeliveryUpdate: SQLStatement {
        """
        UPDATE deliveries SET state = \(parameter: 1), reason = \(parameter: 2),
            service_message_id = coalesce(\(parameter: 3), service_message_id), attempts = \(parameter: 4),
            next_attempt_at = \(parameter: 5), updated_at = \(parameter: 6)
        WHERE id = \(parameter: 7) AND state = \(parameter: 8)
        RETURNING message_id
        """
    }

    /// `applyDeliveryUpdate` where retries are leased (PostgreSQL), if this node still holds the
    /// row (parameter 9, this node); the lease ends with the attempt. Returns the row's slice.
    static var applyLeasedDeliveryUpdate: SQLStatement {
        """
        UPDATE deliveries SET state = \(parameter: 1), reason = \(parameter: 2),
            service_message_id = coalesce(\(parameter: 3), service_message_id), attempts = \(parameter: 4),
            next_attempt_at = \(parameter: 5), updated_at = \(parameter: 6), owner = NULL, lease_until = NULL
        WHERE id = \(parameter: 7) AND state = \(parameter: 8)
            AND (state <> 'sending' OR owner IS NULL OR owner = \(parameter: 9))
        RETURNING slice
        """
    }

    /// Held deliveries whose hold ran out (`next_attempt_at`) fail, up to `limit` of them, oldest
    /// first, with their messages' counters; a message left with nothing to wait for completes.
    /// Returns how many failed.
    public func expireHeldDeliveries(now: Date, limit: Int) async throws -> Int {
        let nowMs = SQLTime.milliseconds(now)
        let webhooks = webhookOutbox
        return try await sqlWrite { db in
            let slices = db.dialect.sharesWorkInSlices
            let rows = try db.fetchAll(
                """
                WITH picked AS (
                    SELECT id FROM deliveries WHERE state = 'held' AND next_attempt_at <= \(nowMs)
                    ORDER BY next_attempt_at LIMIT \(max(1, limit))\(raw: db.dialect.skipLocked))
                UPDATE deliveries SET state = 'failed', next_attempt_at = NULL, updated_at = \(nowMs)
                WHERE id IN (SELECT id FROM picked)
                RETURNING id, message_id, reason\(raw: slices ? ", slice" : "")
                """)
            var failed: [ReasonKey: [String: Int]] = [:]
            for row in rows {
                let key = ReasonKey(messageID: row[1].int ?? 0, slice: slices ? row[3].int ?? 0 : nil)
                failed[key, default: [:]][row[2].string ?? "held", default: 0] += 1
            }
            let onSlice = db.prepare(Self.moveSliceHeldToFailed)
            let onMessage = db.prepare(MessageCounterStatements.moveHeldToFailed)
            for (key, reasons) in failed.sorted(by: { $0.key < $1.key }) {
                let n = SQLValue.integer(Int64(reasons.values.reduce(0, +)))
                // The counters of the slice row the rows belong to, else the message's.
                if let slice = key.slice, try onSlice.run([n, .integer(key.messageID), .integer(slice)]) > 0 {
                    continue
                }
                try onMessage.run([n, .integer(key.messageID)])
            }
            try MessageReasonCounts.addFailures(db, failed)
            try webhooks.deliveryRowsFailed(db, rows.map { $0[0].int ?? 0 }, now: nowMs)
            try Self.finishWaitingMessages(
                db, Array(Set(failed.keys.map(\.messageID))), now: nowMs, webhooks: webhooks)
            return rows.count
        }
    }

    /// `n` of a slice's held deliveries failed (their hold expired): n, the message, the slice.
    static var moveSliceHeldToFailed: SQLStatement {
        """
        UPDATE message_slices SET held = held - \(parameter: 1), failed = failed + \(parameter: 1)
        WHERE message_id = \(parameter: 2) AND slice = \(parameter: 3)
        """
    }

    /// Completes those of `messageIDs` whose audience is sent and that have nothing queued,
    /// sending or held left (`SQLDialect.messageCounter`: on PostgreSQL the row's counts plus its
    /// slices'), in id order.
    static func finishWaitingMessages(
        _ db: any SQLExecutor, _ messageIDs: [Int64], now: Int64, webhooks: WebhookOutbox
    ) throws {
        guard !messageIDs.isEmpty else { return }
        let unfinished = ["queued", "sending", "held"].map { db.dialect.messageCounter($0) }.joined(separator: " + ")
        let finish = db.prepare(
            """
            UPDATE messages SET completed_at = \(parameter: 1)
            WHERE id = \(parameter: 2) AND state = 'completed' AND completed_at IS NULL AND \(raw: unfinished) = 0
            """)
        var finished: [Int64] = []
        for id in messageIDs.sorted() {
            if try finish.run([.integer(now), .integer(id)]) > 0 { finished.append(id) }
        }
        try webhooks.messagesCompleted(db, finished, now: now)
    }
}

/// Where per-reason counts of a message go: its own (SQLite) or one of its slices' (PostgreSQL).
struct ReasonKey: Hashable, Comparable {
    var messageID: Int64
    var slice: Int64?

    static func < (lhs: ReasonKey, rhs: ReasonKey) -> Bool {
        (lhs.messageID, lhs.slice ?? 0) < (rhs.messageID, rhs.slice ?? 0)
    }
}

/// Per-reason counts (`message_failures`), keyed by message, and by slice where the database
/// shares work in slices.
enum MessageReasonCounts {
    static func addFailures(_ db: any SQLExecutor, _ counts: [ReasonKey: [String: Int]]) throws {
        guard !counts.isEmpty else { return }
        let perMessage = db.prepare(
            """
            INSERT INTO message_failures (message_id, reason, count) VALUES (\(parameter: 1), \(parameter: 2), \(parameter: 3))
            ON CONFLICT (message_id, reason) DO UPDATE SET count = message_failures.count + excluded.count
            """)
        let perSlice = db.prepare(
            """
            INSERT INTO message_failures (message_id, slice, reason, count)
            VALUES (\(parameter: 1), \(parameter: 4), \(parameter: 2), \(parameter: 3))
            ON CONFLICT (message_id, slice, reason) DO UPDATE SET count = message_failures.count + excluded.count
            """)
        for (key, reasons) in counts.sorted(by: { $0.key < $1.key }) {
            for (reason, n) in reasons.sorted(by: { $0.key < $1.key }) where n != 0 {
                let values: [SQLValue] = [.integer(key.messageID), .text(reason), .integer(Int64(n))]
                if let slice = key.slice {
                    try perSlice.run(values + [.integer(slice)])
                } else {
                    try perMessage.run(values)
                }
            }
        }
    }
}

/// A service's word that a device's token is dead, applied unless the device registered again
/// after the service's moment; a device invalidated tells the webhooks.
package enum DeviceInvalidations {
    package static func apply(
        _ db: any SQLExecutor, _ invalidations: [DeviceInvalidation], now: Int64, webhooks: WebhookOutbox
    ) throws {
        guard !invalidations.isEmpty else { return }
        let invalidate = db.prepare(
            """
            UPDATE devices SET invalidated_at = \(parameter: 1), invalid_reason = \(parameter: 2)
            WHERE id = \(parameter: 3) AND updated_at <= \(parameter: 4) AND invalidated_at IS NULL
            """)
        // In id order: writers side by side (PostgreSQL) lock the rows in one order.
        for invalidation in invalidations.sorted(by: { $0.deviceID < $1.deviceID }) {
            let values: [SQLValue] = [
                .integer(now), .text(invalidation.reason), .integer(invalidation.deviceID), .time(invalidation.at),
            ]
            if try invalidate.run(values) > 0 {
                try webhooks.deviceInvalidated(
                    db, deviceID: invalidation.deviceID, reason: invalidation.reason, now: now)
            }
        }
    }
}
