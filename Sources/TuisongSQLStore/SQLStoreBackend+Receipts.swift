import Foundation
import TuisongCore

// Receipts are written once for both backends: `delivery_receipts` holds one row per (message,
// token) with when it arrived and was clicked, or why it was not shown; `message_receipt_counts`
// the totals per (message, channel, outcome). A POST's receipts are written a column at a time,
// each as a few multi-row upserts whose `WHERE` lets a row through only when the column is still
// empty: a repeated receipt (a service's retry, a second node receiving it) changes nothing. On
// PostgreSQL a concurrent upsert of the same row waits for the first and then finds the column
// set; the counters are summed by upsert, so nodes never overwrite each other's counts.
//
// Most POSTs name each delivery once and are new (a service posts each status once and retries
// only what was not answered): those are written without `RETURNING`, under a savepoint, and
// when every row changed every receipt counted, with no row read back and no set of keys made.
// Otherwise (a delivery named twice in the POST, or a row the upserts left alone) the POST is
// written again the exact way, each upsert returning the rows it set.
extension SQLStoreBackend {
    public func recordReceipts(appID: Int64, _ receipts: [DeliveryReceipt]) async throws -> ReceiptRecording {
        guard !receipts.isEmpty else { return ReceiptRecording() }
        let webhooks = webhookOutbox
        let now = nowMilliseconds
        return try await sqlWrite { db in
            try Self.record(db, appID: appID, receipts, webhooks: webhooks, now: now)
        }
    }

    public func recordReceipts(posts: [ReceiptPostReceipts]) async throws -> [Result<ReceiptRecording, any Error>] {
        let webhooks = webhookOutbox
        let now = nowMilliseconds
        return try await sqlWrite { db in
            var results: [Result<ReceiptRecording, any Error>] = []
            results.reserveCapacity(posts.count)
            for post in posts {
                guard !post.receipts.isEmpty else {
                    results.append(.success(ReceiptRecording()))
                    continue
                }
                try db.execute("SAVEPOINT receipt_post")
                do {
                    let recording = try Self.record(db, appID: post.appID, post.receipts, webhooks: webhooks, now: now)
                    try db.execute("RELEASE SAVEPOINT receipt_post")
                    results.append(.success(recording))
                } catch {
                    try db.execute("ROLLBACK TO SAVEPOINT receipt_post")
                    try db.execute("RELEASE SAVEPOINT receipt_post")
                    results.append(.failure(error))
                }
            }
            return results
        }
    }

    // The receipt inbox: a verified POST is one row (its body as posted) until the digest
    // records its receipts and deletes the row in one transaction, so a crash at any point
    // leaves each POST either waiting or recorded, never both.
    public func enqueueReceiptPosts(_ posts: [ReceiptInboxPost]) async throws {
        guard !posts.isEmpty else { return }
        try await sqlWrite { db in
            for post in posts {
                try db.run(
                    """
                    INSERT INTO receipt_inbox (channel, app_id, received_at, statuses, body)
                    VALUES (\(post.channel.rawValue), \(post.appID), \(SQLTime.milliseconds(post.receivedAt)),
                    \(post.statuses), \(post.body))
                    """)
            }
        }
    }

    public func receiptInbox(limit: Int) async throws -> [ReceiptInboxPost] {
        try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT id, channel, app_id, received_at, statuses, body FROM receipt_inbox
                ORDER BY id LIMIT \(max(limit, 0))
                """
            ).compactMap { row in
                // A channel this build no longer knows stays until one that does reads it.
                guard let channel = PushChannel(rawValue: row.string(1)) else { return nil }
                return ReceiptInboxPost(
                    id: row.int64(0), channel: channel, appID: row.int64(2),
                    receivedAt: SQLTime.date(row.int64(3)), statuses: Int(row.int64(4)),
                    body: row.bytes(5))
            }
        }
    }

    public func digestReceiptPosts(_ posts: [DigestedReceiptPost]) async throws -> [Result<
        ReceiptRecording, any Error
    >?] {
        guard !posts.isEmpty else { return [] }
        let webhooks = webhookOutbox
        let now = nowMilliseconds
        return try await sqlWrite { db in
            // Taken in id order; on PostgreSQL a row another node holds is skipped, not waited for.
            var taken = Set<Int64>()
            for list in SQLList.chunks(posts.map { SQLValue($0.inboxID) }) {
                for row in try db.fetchAll(
                    """
                    SELECT id FROM receipt_inbox WHERE id IN (\(SQLQuery.list(list))) ORDER BY id\(raw: db.dialect.skipLocked)
                    """)
                {
                    taken.insert(row.int64(0))
                }
            }
            var results: [Result<ReceiptRecording, any Error>?] = []
            results.reserveCapacity(posts.count)
            for post in posts {
                guard taken.remove(post.inboxID) != nil else {
                    results.append(nil)
                    continue
                }
                try db.execute("SAVEPOINT receipt_digest")
                do {
                    try db.run("DELETE FROM receipt_inbox WHERE id = \(post.inboxID)")
                    let recording =
                        post.receipts.isEmpty
                        ? ReceiptRecording()
                        : try Self.record(db, appID: post.appID, post.receipts, webhooks: webhooks, now: now)
                    try db.execute("RELEASE SAVEPOINT receipt_digest")
                    results.append(.success(recording))
                } catch {
                    try db.execute("ROLLBACK TO SAVEPOINT receipt_digest")
                    try db.execute("RELEASE SAVEPOINT receipt_digest")
                    results.append(.failure(error))
                }
            }
            return results
        }
    }

    public func waitingReceiptStatuses(appID: Int64?) async throws -> Int {
        // Asked by every status poll (pollers call it up to 100 times a second): a sum over an
        // index (`receipt_inbox_app_statuses`, v26 / pg20), never over the rows and their
        // bodies, read on the calling thread.
        try await sqlQuickRead { db in
            Int(try db.fetchOne(Self.waitingStatuses(appID: appID))?.int64(0) ?? 0)
        }
    }

    /// `waitingReceiptStatuses`' statement (a test reads its plan).
    static func waitingStatuses(appID: Int64?) -> SQLQuery {
        if let appID {
            "SELECT COALESCE(SUM(statuses), 0) FROM receipt_inbox WHERE app_id = \(appID)"
        } else {
            "SELECT COALESCE(SUM(statuses), 0) FROM receipt_inbox"
        }
    }

    /// One POST's receipts, in the transaction `db` is in.
    private static func record(
        _ db: any SQLExecutor, appID: Int64, _ receipts: [DeliveryReceipt], webhooks: WebhookOutbox, now: Int64
    ) throws -> ReceiptRecording {
        var messageIDs = Set<Int64>()
        for receipt in receipts { messageIDs.insert(receipt.messageID) }
        var known = Set<Int64>()
        for list in SQLList.chunks(messageIDs.map { SQLValue($0) }) {
            for row in try db.fetchAll(
                "SELECT id FROM messages WHERE app_id = \(appID) AND id IN (\(SQLQuery.list(list)))")
            {
                known.insert(row.int64(0))
            }
        }
        var recording =
            try Self.recordNewReceipts(db, receipts, known: known)
            ?? Self.recordReceiptsExactly(db, receipts, known: known)
        // Devices in token order, so concurrent writers (PostgreSQL) take their locks in one order.
        var invalidating: [DeliveryReceipt] = []
        for receipt in recording.recorded {
            if case .notShown(_, true) = receipt.outcome { invalidating.append(receipt) }
        }
        invalidating.sort { ($0.token, $0.at) < ($1.token, $1.at) }
        for receipt in invalidating {
            guard case .notShown(let reason, true) = receipt.outcome else { continue }
            // As a send's invalid token: left alone when the app registered the token again since.
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
        // Counted by runs first (a POST's receipts are mostly of one message and outcome).
        var counts: [ReceiptCountKey: Int] = [:]
        var run: (key: ReceiptCountKey, count: Int)?
        for receipt in recording.recorded {
            if let last = run, last.key.messageID == receipt.messageID, last.key.channel == receipt.channel,
                last.key.outcome == receipt.outcome.name
            {
                run?.count += 1
                continue
            }
            if let last = run { counts[last.key, default: 0] += last.count }
            run = (
                ReceiptCountKey(
                    messageID: receipt.messageID, channel: receipt.channel, outcome: receipt.outcome.name), 1
            )
        }
        if let last = run { counts[last.key, default: 0] += last.count }
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

    /// The common POST, written cheaply: when each delivery is named once and every column
    /// the receipts ask for is still empty, every receipt counts (a click with the arrival it
    /// implies, as the exact way records it). Written under a savepoint without `RETURNING`;
    /// nil, with nothing written, when the POST names a delivery twice or an upsert left a row
    /// alone: then only the exact way tells which receipts counted.
    private static func recordNewReceipts(_ db: any SQLExecutor, _ receipts: [DeliveryReceipt], known: Set<Int64>)
        throws -> ReceiptRecording?
    {
        var recording = ReceiptRecording()
        // The known receipts in key order (the services post a request's statuses together,
        // often already in order), distinct.
        var order: [Int] = []
        order.reserveCapacity(receipts.count)
        var inOrder = true
        for index in receipts.indices {
            guard known.contains(receipts[index].messageID) else {
                recording.unknown += 1
                continue
            }
            if inOrder, let last = order.last, !Self.precedes(receipts[last], receipts[index]) { inOrder = false }
            order.append(index)
        }
        if !inOrder {
            order.sort { Self.precedes(receipts[$0], receipts[$1]) }
            for position in order.indices.dropFirst()
            where !Self.precedes(receipts[order[position - 1]], receipts[order[position]]) {
                return nil
            }
        }
        guard !order.isEmpty else { return recording }
        var passes: [(column: ReceiptColumn, rows: [ReceiptRow])] = []
        for column in [ReceiptColumn.reason, .arrived, .clicked] {
            var rows: [ReceiptRow] = []
            for index in order where column.isAsked(by: receipts[index].outcome) {
                rows.append(ReceiptRow(receipts[index], column: column))
            }
            if !rows.isEmpty { passes.append((column, rows)) }
        }
        try db.execute("SAVEPOINT receipts")
        if passes.count > 1 {
            try lockReceiptRows(db, order.map { ReceiptRow(receipts[$0], column: .arrived) })
        }
        for (column, rows) in passes {
            guard try upsertReceipts(db, column: column, rows, returning: false).changed == rows.count else {
                try db.execute("ROLLBACK TO SAVEPOINT receipts")
                try db.execute("RELEASE SAVEPOINT receipts")
                return nil
            }
        }
        try db.execute("RELEASE SAVEPOINT receipts")
        recording.recorded.reserveCapacity(order.count)
        for receipt in receipts where known.contains(receipt.messageID) {
            if receipt.outcome == .clicked {
                var arrival = receipt
                arrival.outcome = .arrived
                recording.recorded.append(arrival)
            }
            recording.recorded.append(receipt)
        }
        return recording
    }

    /// Whether `a`'s delivery comes before `b`'s in the table's key order.
    private static func precedes(_ a: DeliveryReceipt, _ b: DeliveryReceipt) -> Bool {
        a.messageID != b.messageID ? a.messageID < b.messageID : a.token < b.token
    }

    /// Any POST: each upsert returns the rows it set, and the result is what writing the
    /// receipts one by one would give.
    private static func recordReceiptsExactly(
        _ db: any SQLExecutor, _ receipts: [DeliveryReceipt], known: Set<Int64>
    ) throws -> ReceiptRecording {
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
            var asked: [ReceiptChange] = []
            switch receipt.outcome {
            case .arrived:
                asked.append(ReceiptChange(receipt: receipt, key: key, column: .arrived, countsRepeat: true))
            case .clicked:
                var arrival = receipt
                arrival.outcome = .arrived
                asked.append(ReceiptChange(receipt: arrival, key: key, column: .arrived, countsRepeat: false))
                asked.append(ReceiptChange(receipt: receipt, key: key, column: .clicked, countsRepeat: true))
            case .notShown:
                asked.append(
                    ReceiptChange(
                        receipt: receipt, key: key, column: .reason, countsRepeat: true,
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
        if pending.count > 1 {
            var rows: [ReceiptKey: ReceiptRow] = [:]
            for (column, changes) in pending {
                for (key, change) in changes { rows[key] = ReceiptRow(change.receipt, column: column) }
            }
            try lockReceiptRows(db, rows.sorted { $0.key < $1.key }.map(\.value))
        }
        var changed: [ReceiptColumn: Set<ReceiptKey>] = [:]
        for column in [ReceiptColumn.reason, .arrived, .clicked] {
            let firsts = (pending[column] ?? [:]).values.sorted { $0.key < $1.key }
            changed[column] =
                try upsertReceipts(
                    db, column: column, firsts.map { ReceiptRow($0.receipt, column: column) }, returning: true
                )
                .rows
        }
        for change in changes {
            guard !change.afterArrival, changed[change.column]?.remove(change.key) != nil else {
                if change.countsRepeat { recording.repeated += 1 }
                continue
            }
            recording.recorded.append(change.receipt)
        }
        return recording
    }

    /// Sets `column` of each row where it is still empty (and, for a reason, where the delivery
    /// has not arrived); returns how many it set and, when `returning`, which. The rows are
    /// distinct (one statement may not touch a row twice on PostgreSQL), written in chunks of
    /// 256, 128, …, 1 rows, so a handful of statement texts serve every POST and stay prepared.
    private static func upsertReceipts(
        _ db: any SQLExecutor, column: ReceiptColumn, _ rows: [ReceiptRow], returning: Bool
    ) throws -> (changed: Int, rows: Set<ReceiptKey>) {
        var changed = 0
        var changedRows = Set<ReceiptKey>()
        try forEachInsert(of: rows, setting: column) { query in
            query.appendLiteral(
                """
                 ON CONFLICT (message_id, token) DO UPDATE SET \(column.rawValue) = excluded.\(column.rawValue)
                WHERE \(column.guardCondition)
                """)
            guard returning else {
                changed += try db.run(SQLQuery(stringInterpolation: query))
                return
            }
            query.appendLiteral(" RETURNING message_id, token")
            for row in try db.fetchAll(SQLQuery(stringInterpolation: query)) {
                changed += 1
                changedRows.insert(ReceiptKey(messageID: row.int64(0), token: row.string(1)))
            }
        }
        return (changed, changedRows)
    }

    /// On PostgreSQL, takes the locks of `rows` (distinct, in key order), making those that do
    /// not exist yet, before a POST writes more than one column: each column's upserts take
    /// their rows in key order, but one POST's reasons and another's arrivals would otherwise
    /// lock the same rows each in the other's order and deadlock. An empty row made here is filled by
    /// the column upserts that follow, which every row of the POST has. SQLite has one writer.
    private static func lockReceiptRows(_ db: any SQLExecutor, _ rows: [ReceiptRow]) throws {
        guard db.dialect.hasConcurrentWriters else { return }
        try forEachInsert(of: rows, setting: nil) { query in
            // `WHERE false` updates nothing, but PostgreSQL locks every conflicting row.
            query.appendLiteral(
                " ON CONFLICT (message_id, token) DO UPDATE SET channel = excluded.channel WHERE false")
            try db.run(SQLQuery(stringInterpolation: query))
        }
    }

    /// `rows` in chunks of 256, 128, …, 1 rows (so a handful of statement texts serve every POST
    /// and stay prepared), each begun as `INSERT INTO delivery_receipts (message_id, token,
    /// channel[, column]) VALUES (…), …` for `finish` to end and run.
    private static func forEachInsert(
        of rows: [ReceiptRow], setting column: ReceiptColumn?,
        _ finish: (inout SQLQuery.StringInterpolation) throws -> Void
    ) throws {
        let columns = column.map { "message_id, token, channel, \($0.rawValue)" } ?? "message_id, token, channel"
        var rest = rows[...]
        while !rest.isEmpty {
            var size = receiptChunkLength
            while size > rest.count { size /= 2 }
            let chunk = rest.prefix(size)
            rest = rest.dropFirst(size)
            var query = SQLQuery.StringInterpolation(
                literalCapacity: 0, interpolationCount: (column == nil ? 3 : 4) * size)
            query.appendLiteral(SQLList.marker + "INSERT INTO delivery_receipts (\(columns)) VALUES ")
            for (index, row) in chunk.enumerated() {
                query.appendLiteral(index == 0 ? "(" : ", (")
                query.appendInterpolation(row.messageID)
                query.appendLiteral(", ")
                query.appendInterpolation(row.token)
                query.appendLiteral(", ")
                query.appendInterpolation(row.channel.rawValue)
                if column != nil {
                    query.appendLiteral(", ")
                    query.appendInterpolation(row.value)
                }
                query.appendLiteral(")")
            }
            try finish(&query)
        }
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

    /// Whether a receipt of `outcome` sets the column (a click sets the arrival it implies).
    func isAsked(by outcome: ReceiptOutcome) -> Bool {
        switch (self, outcome) {
        case (.arrived, .arrived), (.arrived, .clicked), (.clicked, .clicked), (.reason, .notShown): true
        default: false
        }
    }
}

/// The values a receipt writes to its row: its delivery's key, its channel and the column's
/// value (when it happened, or the reason).
private struct ReceiptRow {
    var messageID: Int64
    var token: String
    var channel: PushChannel
    var value: SQLValue

    init(_ receipt: DeliveryReceipt, column: ReceiptColumn) {
        messageID = receipt.messageID
        token = receipt.token
        channel = receipt.channel
        value =
            column == .reason ? .text(receipt.outcome.name) : .integer(SQLTime.milliseconds(receipt.at))
    }
}

/// One column a receipt asks to set. `countsRepeat`: when it changes nothing, the receipt was a
/// repeat (a click's implied arrival is not). `afterArrival`: a reason that follows an arrival
/// of its delivery in the same POST, which writing them in order would refuse.
private struct ReceiptChange {
    var receipt: DeliveryReceipt
    var key: ReceiptKey
    var column: ReceiptColumn
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

    public func serviceRequestMessage(appID: Int64, channel: PushChannel, requestID: String) async throws -> Int64? {
        try await sqlRead { db in
            try db.fetchOne(
                """
                SELECT r.message_id FROM receipt_service_requests r JOIN messages m ON m.id = r.message_id
                WHERE r.channel = \(channel.rawValue) AND r.request_id = \(requestID) AND m.app_id = \(appID)
                """
            )?.int64(0)
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
