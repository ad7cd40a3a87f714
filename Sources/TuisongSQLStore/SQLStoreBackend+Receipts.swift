import Foundation
import TuisongCore

// Receipts are written once for both backends: `delivery_receipts` holds one row per (message,
// token) with when it arrived and was clicked, or why it was not shown; `message_receipt_counts`
// the totals per (message, channel, outcome). Each change is one upsert whose `WHERE` lets it
// through only when the column is still empty, so `RETURNING` says whether it counted: a
// repeated receipt (a service's retry, a second node receiving it) changes nothing. On
// PostgreSQL a concurrent upsert of the same row waits for the first and then finds the column
// set; the counters are summed by upsert, so nodes never overwrite each other's counts.
extension SQLStoreBackend {
    public func recordReceipts(appID: Int64, _ receipts: [DeliveryReceipt]) async throws -> ReceiptRecording {
        guard !receipts.isEmpty else { return ReceiptRecording() }
        let webhooks = webhookOutbox
        let now = nowMilliseconds
        return try await sqlWrite { db in
            let messageIDs = Array(Set(receipts.map(\.messageID)))
            var known = Set<Int64>()
            for list in SQLList.chunks(messageIDs.map { SQLValue($0) }) {
                for row in try db.fetchAll(
                    "SELECT id FROM messages WHERE app_id = \(appID) AND id IN (\(SQLQuery.list(list)))")
                {
                    known.insert(row.int64(0))
                }
            }
            var recording = ReceiptRecording()
            var counts: [ReceiptCountKey: Int] = [:]
            func record(_ receipt: DeliveryReceipt, column: String, value: SQLQuery, guardedBy condition: String)
                throws -> Bool
            {
                let changed = try db.fetchOne(
                    """
                    INSERT INTO delivery_receipts (message_id, token, channel, \(raw: column))
                    VALUES (\(receipt.messageID), \(receipt.token), \(receipt.channel.rawValue), \(value))
                    ON CONFLICT (message_id, token) DO UPDATE SET \(raw: column) = excluded.\(raw: column)
                    WHERE \(raw: condition)
                    RETURNING 1
                    """)
                guard changed != nil else { return false }
                counts[
                    ReceiptCountKey(
                        messageID: receipt.messageID, channel: receipt.channel, outcome: receipt.outcome.name),
                    default: 0] += 1
                recording.recorded.append(receipt)
                return true
            }
            for receipt in receipts {
                guard known.contains(receipt.messageID) else {
                    recording.unknown += 1
                    continue
                }
                let at = SQLTime.milliseconds(receipt.at)
                switch receipt.outcome {
                case .arrived:
                    if try !record(
                        receipt, column: "arrived_at", value: "\(at)",
                        guardedBy: "delivery_receipts.arrived_at IS NULL")
                    {
                        recording.repeated += 1
                    }
                case .clicked:
                    var arrival = receipt
                    arrival.outcome = .arrived
                    _ = try record(
                        arrival, column: "arrived_at", value: "\(at)", guardedBy: "delivery_receipts.arrived_at IS NULL"
                    )
                    if try !record(
                        receipt, column: "clicked_at", value: "\(at)",
                        guardedBy: "delivery_receipts.clicked_at IS NULL")
                    {
                        recording.repeated += 1
                    }
                case .notShown(let reason, let invalidates):
                    // One reason a delivery: the first the service gave, and none once it arrived.
                    if try !record(
                        receipt, column: "reason", value: "\(reason)",
                        guardedBy: "delivery_receipts.reason IS NULL AND delivery_receipts.arrived_at IS NULL")
                    {
                        recording.repeated += 1
                    } else if invalidates {
                        // As an APNs 410: left alone when the app registered the token again since.
                        let invalidated = try db.fetchAll(
                            """
                            UPDATE devices SET invalidated_at = \(now), invalid_reason = \("receipt:" + reason)
                            WHERE app_id = \(appID) AND token = \(receipt.token) AND invalidated_at IS NULL
                            AND updated_at <= \(at)
                            RETURNING id
                            """)
                        recording.invalidatedDevices += invalidated.count
                        for device in invalidated {
                            try webhooks.deviceInvalidated(
                                db, deviceID: device.int64(0), reason: "receipt:" + reason, now: now)
                        }
                    }
                }
            }
            // Events with the receipts that cause them, in the same transaction.
            try webhooks.receiptsRecorded(db, appID: appID, recording.recorded, now: now)
            for (key, count) in counts.sorted(by: { $0.key < $1.key }) {
                try db.run(
                    """
                    INSERT INTO message_receipt_counts (message_id, channel, outcome, count)
                    VALUES (\(key.messageID), \(key.channel.rawValue), \(key.outcome), \(count))
                    ON CONFLICT (message_id, channel, outcome)
                    DO UPDATE SET count = message_receipt_counts.count + excluded.count
                    """)
            }
            return recording
        }
    }

    public func receiptCounts(messageID: Int64) async throws -> [PushChannel: ReceiptCounts] {
        try await sqlRead { db in
            var counts: [PushChannel: ReceiptCounts] = [:]
            for row in try db.fetchAll(
                "SELECT channel, outcome, count FROM message_receipt_counts WHERE message_id = \(messageID)")
            {
                guard let channel = PushChannel(rawValue: row.string(0)) else { continue }
                let count = Int(row.int64(2))
                switch row.string(1) {
                case "arrived": counts[channel, default: ReceiptCounts()].arrived += count
                case "clicked": counts[channel, default: ReceiptCounts()].clicked += count
                case let reason: counts[channel, default: ReceiptCounts()].reasons[reason, default: 0] += count
                }
            }
            return counts
        }
    }

    public func receiptStates(messageID: Int64, tokens: [String]) async throws -> [String: DeliveryReceiptState] {
        guard !tokens.isEmpty else { return [:] }
        return try await sqlRead { db in
            var states: [String: DeliveryReceiptState] = [:]
            for list in SQLList.chunks(tokens.map { SQLValue($0) }) {
                for row in try db.fetchAll(
                    """
                    SELECT token, arrived_at, clicked_at, reason FROM delivery_receipts
                    WHERE message_id = \(messageID) AND token IN (\(SQLQuery.list(list)))
                    """)
                {
                    states[row.string(0)] = DeliveryReceiptState(
                        arrivedAt: row.optionalDate(1), clickedAt: row.optionalDate(2), reason: row.optionalString(3))
                }
            }
            return states
        }
    }
}

/// A counter of `message_receipt_counts`; sorted so concurrent writers take row locks in one order.
private struct ReceiptCountKey: Hashable, Comparable {
    var messageID: Int64
    var channel: PushChannel
    var outcome: String

    static func < (a: Self, b: Self) -> Bool {
        (a.messageID, a.channel.rawValue, a.outcome) < (b.messageID, b.channel.rawValue, b.outcome)
    }
}

// A request to many tokens that asked for receipts by one `param` (a Xiaomi batch): one row per
// request, its tokens' digests as one text (a 1,000-token request: 17 KB), written before the
// request leaves, read when a receipt names it. Deleted with its message.
extension SQLStoreBackend {
    public func recordReceiptSend(_ send: ReceiptSend) async throws -> Int64 {
        let digests = send.tokenDigests.sorted().joined(separator: ",")
        return try await sqlWrite { db in
            try Rows.returned(
                db,
                """
                INSERT INTO receipt_sends (app_id, message_id, channel, token_digests, created_at)
                VALUES (\(send.appID), \(send.messageID), \(send.channel.rawValue), \(digests), \(nowMilliseconds))
                RETURNING id
                """, "INSERT INTO receipt_sends"
            ).int64(0)
        }
    }

    public func receiptSend(id: Int64) async throws -> ReceiptSend? {
        try await sqlRead { db in
            guard
                let row = try db.fetchOne(
                    "SELECT app_id, message_id, channel, token_digests FROM receipt_sends WHERE id = \(id)"),
                let channel = PushChannel(rawValue: row.string(2))
            else { return nil }
            return ReceiptSend(
                appID: row.int64(0), messageID: row.int64(1), channel: channel,
                tokenDigests: Set(row.string(3).split(separator: ",").map(String.init)))
        }
    }
}
