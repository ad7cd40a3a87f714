import Foundation
import TuisongCore

// Receipts are written once for both backends: `delivery_receipts` holds one row per (message,
// token) with when it arrived and was clicked, or why it was not shown; `message_receipt_counts`
// the totals per (message, channel, outcome). A POST's receipts are written a column at a time,
// each as a few multi-row upserts whose `WHERE` lets a row through only when the column is still
// empty, so `RETURNING` says which counted: a repeated receipt (a service's retry, a second node
// receiving it) changes nothing. On PostgreSQL a concurrent upsert of the same row waits for the
// first and then finds the column set; the counters are summed by upsert, so nodes never
// overwrite each other's counts.
extension SQLStoreBackend {
    public func recordReceipts(appID: Int64, _ receipts: [DeliveryReceipt]) async throws -> ReceiptRecording {
        guard !receipts.isEmpty else { return ReceiptRecording() }
        let webhooks = webhookOutbox
        let now = nowMilliseconds
        return try await sqlWrite { db in
            let messageIDs = Array(Set(receipts.lazy.map { $0.messageID }))
            var known = Set<Int64>()
            for list in SQLList.chunks(messageIDs.map { SQLValue($0) }) {
                for row in try db.fetchAll(
                    "SELECT id FROM messages WHERE app_id = \(appID) AND id IN (\(SQLQuery.list(list)))")
                {
                    known.insert(row.int64(0))
                }
            }
            var recording = ReceiptRecording()
            // The changes the receipts ask for, in their order (a click asks for its arrival
            // first), then written a column at a time. The result is what writing them one by
            // one would give: a column takes the first value a POST gives it, and a reason
            // counts only while the delivery has none and has not arrived, so a reason that
            // follows an arrival (or a click) of its delivery in the same POST is repeated.
            var changes: [ReceiptChange] = []
            var arrivedInThisPost = Set<ReceiptKey>()
            var pending: [ReceiptColumn: [ReceiptKey: ReceiptChange]] = [:]
            for receipt in receipts {
                guard known.contains(receipt.messageID) else {
                    recording.unknown += 1
                    continue
                }
                let key = ReceiptKey(messageID: receipt.messageID, token: receipt.token)
                let at = SQLValue.integer(SQLTime.milliseconds(receipt.at))
                var asked: [ReceiptChange] = []
                switch receipt.outcome {
                case .arrived:
                    asked.append(
                        ReceiptChange(receipt: receipt, key: key, column: .arrived, value: at, countsRepeat: true))
                case .clicked:
                    var arrival = receipt
                    arrival.outcome = .arrived
                    asked.append(
                        ReceiptChange(receipt: arrival, key: key, column: .arrived, value: at, countsRepeat: false))
                    asked.append(
                        ReceiptChange(receipt: receipt, key: key, column: .clicked, value: at, countsRepeat: true))
                case .notShown(let reason, _):
                    asked.append(
                        ReceiptChange(
                            receipt: receipt, key: key, column: .reason, value: .text(reason), countsRepeat: true,
                            afterArrival: arrivedInThisPost.contains(key)))
                }
                for change in asked {
                    if change.column == .arrived { arrivedInThisPost.insert(key) }
                    if !change.afterArrival, pending[change.column]?[key] == nil {
                        pending[change.column, default: [:]][key] = change
                    }
                    changes.append(change)
                }
            }
            // Reasons before arrivals: an arrival in this POST must not hide a reason that came
            // before it (those after it were left out above). Rows in key order, so concurrent
            // writers (PostgreSQL) take their locks in one order.
            var changed: [ReceiptColumn: Set<ReceiptKey>] = [:]
            for column in [ReceiptColumn.reason, .arrived, .clicked] {
                let firsts = (pending[column] ?? [:]).values.sorted { $0.key < $1.key }
                changed[column] = try Self.upsertReceipts(db, column: column, firsts)
            }
            var counts: [ReceiptCountKey: Int] = [:]
            for change in changes {
                guard !change.afterArrival, changed[change.column]?.remove(change.key) != nil else {
                    if change.countsRepeat { recording.repeated += 1 }
                    continue
                }
                let receipt = change.receipt
                counts[
                    ReceiptCountKey(
                        messageID: receipt.messageID, channel: receipt.channel, outcome: receipt.outcome.name),
                    default: 0] += 1
                recording.recorded.append(receipt)
                guard case .notShown(let reason, true) = receipt.outcome else { continue }
                // As an APNs 410: left alone when the app registered the token again since.
                let invalidated = try db.fetchAll(
                    """
                    UPDATE devices SET invalidated_at = \(now), invalid_reason = \("receipt:" + reason)
                    WHERE app_id = \(appID) AND token = \(receipt.token) AND invalidated_at IS NULL
                    AND updated_at <= \(SQLTime.milliseconds(receipt.at))
                    RETURNING id
                    """)
                recording.invalidatedDevices += invalidated.count
                for device in invalidated {
                    try webhooks.deviceInvalidated(db, deviceID: device.int64(0), reason: "receipt:" + reason, now: now)
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

    /// Sets `column` of each change's row where it is still empty (and, for a reason, where the
    /// delivery has not arrived); returns the rows it set. The changes are distinct rows (one
    /// statement may not touch a row twice on PostgreSQL), written in chunks of 256, 128, …, 1
    /// rows, so a handful of statement texts serve every POST and stay prepared.
    private static func upsertReceipts(_ db: any SQLExecutor, column: ReceiptColumn, _ changes: [ReceiptChange])
        throws -> Set<ReceiptKey>
    {
        var changed = Set<ReceiptKey>()
        var rest = changes[...]
        while !rest.isEmpty {
            var size = receiptChunkLength
            while size > rest.count { size /= 2 }
            let chunk = rest.prefix(size)
            rest = rest.dropFirst(size)
            var query = SQLQuery.StringInterpolation(literalCapacity: 0, interpolationCount: 4 * size)
            query.appendLiteral(
                SQLList.marker
                    + "INSERT INTO delivery_receipts (message_id, token, channel, \(column.rawValue)) VALUES ")
            for (index, change) in chunk.enumerated() {
                query.appendLiteral(index == 0 ? "(" : ", (")
                query.appendInterpolation(change.key.messageID)
                query.appendLiteral(", ")
                query.appendInterpolation(change.key.token)
                query.appendLiteral(", ")
                query.appendInterpolation(change.receipt.channel.rawValue)
                query.appendLiteral(", ")
                query.appendInterpolation(change.value)
                query.appendLiteral(")")
            }
            query.appendLiteral(
                """
                 ON CONFLICT (message_id, token) DO UPDATE SET \(column.rawValue) = excluded.\(column.rawValue)
                WHERE \(column.guardCondition) RETURNING message_id, token
                """)
            for row in try db.fetchAll(SQLQuery(stringInterpolation: query)) {
                changed.insert(ReceiptKey(messageID: row.int64(0), token: row.string(1)))
            }
        }
        return changed
    }

    /// Rows per upsert statement at most: 1,024 bindings, far below either engine's limit.
    private static var receiptChunkLength: Int { 256 }

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

/// A delivery's receipt row: its message and the device's token.
private struct ReceiptKey: Hashable, Comparable {
    var messageID: Int64
    var token: String

    static func < (a: Self, b: Self) -> Bool { (a.messageID, a.token) < (b.messageID, b.token) }
}

/// The columns of `delivery_receipts` a receipt sets, each at most once.
private enum ReceiptColumn: String {
    case arrived = "arrived_at"
    case clicked = "clicked_at"
    case reason

    /// When a receipt may still set the column.
    var guardCondition: String {
        switch self {
        case .arrived: "delivery_receipts.arrived_at IS NULL"
        case .clicked: "delivery_receipts.clicked_at IS NULL"
        // One reason a delivery: the first the service gave, and none once it arrived.
        case .reason: "delivery_receipts.reason IS NULL AND delivery_receipts.arrived_at IS NULL"
        }
    }
}

/// One column a receipt asks to set. `countsRepeat`: when it changes nothing, the receipt was a
/// repeat (a click's implied arrival is not). `afterArrival`: a reason that follows an arrival
/// of its delivery in the same POST, which writing them in order would refuse.
private struct ReceiptChange {
    var receipt: DeliveryReceipt
    var key: ReceiptKey
    var column: ReceiptColumn
    var value: SQLValue
    var countsRepeat: Bool
    var afterArrival = false
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

// A request to many tokens that asked for receipts by one `param`: one row per
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
