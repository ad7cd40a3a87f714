import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// Messages and their progress on SQLite, one writer: a message's outcomes are counted on its
// own row. Written once instead (`SQLStoreBackend+Messages`): reading messages (through
// `sqlMessageSelect` below), a message's state changes, the audience count, the three
// `releaseHeldDeliveries` and the dispatchable messages' ids. What stays here differs from
// PostgreSQL: creating a message (group
// commit, the records kept for the dispatcher's claim), the claim (the `messages_pending`
// partial index's terms spelled out), progress flushes (one row of counters, savepoints in one
// write) and retries and held deliveries (the message's counters, no slices). The audience
// pages are written once (`SQLStoreBackend+Audience`).
extension SQLiteStore: MessageStore {
    /// Every message read's select (`SQLStoreBackend.sqlMessageSelect`): the message's own
    /// counts (SQLite keeps them on its row, one writer), its failures and skips as JSON
    /// objects, then its cursor.
    static let messageSelect = """
        SELECT \(Rows.messageColumns), m.queued, m.sending, m.delivered, m.failed, m.skipped, m.held,
            (SELECT json_group_object(reason, count) FROM message_failures WHERE message_id = m.id),
            (SELECT json_group_object(reason, count) FROM message_skips WHERE message_id = m.id),
            m.cursor
        FROM messages m
        """

    public var sqlMessageSelect: String { Self.messageSelect }

    public func sqlMessageRecord(_ row: SQLRow) throws -> MessageRecord { try Self.messageRecord(row) }

    static func messageRecord(_ row: some ColumnValues) throws -> MessageRecord {
        try Rows.message(columns: row, cursor: row.int64(23))
    }

    public func createMessage(_ job: PushJob, state: MessageState) async throws -> MessageRecord {
        let now = nowMilliseconds
        let row = try MessageRow(job, state: state, createdAt: now)
        // Only the dispatcher claims: another process (the CLI, a second `serve`) keeps nothing.
        let keptForClaim = state == .queued && dispatcherLock.isHeld
        let createdAt = SQLTime.date(now)
        // Group-committed with the other small writes of the moment (`groupWrite`).
        let inserted: InsertedMessage
        do {
            inserted = try await groupWrite { db in
                let inserted = try Self.insertMessage(db, row)
                // Kept before the commit: a claim sees the row only once it is committed, and
                // then finds its record here. Kept after the commit, a claim that ran in between
                // would read the row, and the record would stay until the oldest are dropped.
                if keptForClaim, inserted.created {
                    self.createdRecords.keep(
                        MessageRecord.created(id: inserted.id, job: job, state: state, createdAt: createdAt))
                }
                return inserted
            }
        } catch {
            // Rolled back (this write's savepoint or the group's commit): its id may be used again.
            if keptForClaim { forgetCreatedRecordOfFailedInsert(row) }
            throw error
        }
        if job.idempotencyKey != nil {
            await idempotencyKeySweeper.sweepIfDue(now: SQLTime.date(now)) { before, limit in
                try await forgetIdempotencyKeys(before: before, limit: limit)
            }
        }
        guard inserted.created else {
            // A repeat: the message its key's first request created, as it is now.
            guard let record = try await message(id: inserted.id) else {
                throw StoreError.notFound("message \(inserted.id) of idempotency key")
            }
            return record
        }
        return MessageRecord.created(id: inserted.id, job: job, state: state, createdAt: createdAt)
    }

    /// Drops what a rolled-back insert kept for the claim. Its id is not known here (the write
    /// failed), so every kept record of the same app and creation time goes: at worst a claim
    /// reads one record it could have had from memory.
    private func forgetCreatedRecordOfFailedInsert(_ row: MessageRow) {
        let createdAt = SQLTime.date(row.createdAt)
        createdRecords.forget { $0.appID == row.appID && $0.createdAt == createdAt }
    }

    /// A message row's id, and whether this insert created it (false: its idempotency key
    /// already named a message, whose id this is).
    struct InsertedMessage: Sendable {
        var id: Int64
        var created: Bool
    }

    private static let insertMessageSQL =
        "INSERT INTO messages (\(Rows.messageInsertColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

    /// Inserts a message (and its idempotency key) in the caller's transaction; a key still
    /// alive answers its first message instead.
    static func insertMessage(_ db: Database, _ row: MessageRow) throws -> InsertedMessage {
        let insert = try db.cachedStatement(sql: insertMessageSQL)
        if let key = row.idempotencyKey {
            let lifetime = Int64(IdempotencyKey.lifetime * 1000)
            if let existing = try Int64.fetchOne(
                db.cachedStatement(
                    sql: "SELECT message_id FROM idempotency_keys WHERE app_id = ? AND key = ? AND created_at > ?"),
                arguments: [row.appID, key, row.createdAt - lifetime])
            {
                return InsertedMessage(id: existing, created: false)
            }
        }
        try insert.execute(arguments: [
            row.appID, row.vendor, row.vendorMessageID, row.audience, row.content, row.options,
            row.labels, row.state, row.sendAt, row.createdAt, row.vendorContext,
        ])
        let id = db.lastInsertedRowID
        if let key = row.idempotencyKey {
            try db.cachedStatement(
                sql: """
                    INSERT INTO idempotency_keys (app_id, key, message_id, created_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (app_id, key) DO UPDATE
                    SET message_id = excluded.message_id, created_at = excluded.created_at
                    """
            ).execute(arguments: [row.appID, key, id, row.createdAt])
        }
        return InsertedMessage(id: id, created: true)
    }

    /// Marks up to `limit` due messages (queued, or scheduled and come due) `sending` and returns
    /// them: one write for a whole batch of the dispatcher's claims.
    ///
    /// Fair across apps, so one app's backlog does not hold another's push back (a chat app's
    /// thousands of queued lines ahead of another app's tag push): each app's due messages are
    /// taken oldest first, and an app's n-th candidate gets turn n plus the messages it has
    /// sending already; the batch is the lowest turns (oldest first among equal turns). An app
    /// with nothing sending gets its oldest message into the next claim, however long another
    /// app's queue is; two busy apps alternate.
    func claimDueMessages(now: Date, limit: Int) async throws -> [MessageRecord] {
        let nowMs = SQLTime.milliseconds(now)
        let claimed = try await write { db -> [(id: Int64, startedAt: Int64)] in
            let ids = try Self.fairClaimCandidates(db, nowMs: nowMs, limit: limit)
            guard !ids.isEmpty else { return [] }
            return try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE messages SET state = 'sending', started_at = coalesce(started_at, ?)
                        WHERE id IN (SELECT value FROM json_each(?)) AND state IN ('queued', 'scheduled')
                        RETURNING id, started_at
                        """),
                arguments: [nowMs, "[" + ids.map(String.init).joined(separator: ",") + "]"]
            ).map { row in (row[0] as Int64, row[1] as Int64) }
        }
        guard !claimed.isEmpty else { return [] }
        // Messages this process accepted are known as they were committed; others (accepted by
        // another process, or before a restart) are read.
        var records: [MessageRecord] = []
        var unknown: [Int64] = []
        let created = createdRecords.take(claimed.map(\.id))
        for (id, startedAt) in claimed {
            if var record = created[id] {
                record.state = .sending
                record.startedAt = SQLTime.date(startedAt)
                records.append(record)
            } else {
                unknown.append(id)
            }
        }
        if !unknown.isEmpty {
            let ids = "[" + unknown.map(String.init).joined(separator: ",") + "]"
            records += try await read { db in
                try Row.fetchAll(
                    db.cachedStatement(
                        sql: "\(Self.messageSelect) WHERE m.id IN (SELECT value FROM json_each(?))"),
                    arguments: [ids]
                ).map { try Self.messageRecord($0) }
            }
        }
        return records.sorted { $0.id < $1.id }
    }

    /// The ids `claimDueMessages` takes, in its turn order. Every statement spells out its
    /// partial index's condition: the apps with queued messages come from
    /// `messages_backlog_by_app` one seek each (the next app id after the last), each app's
    /// oldest queued ones and its sending count from the same index, due scheduled ones from
    /// `messages_pending`.
    static func fairClaimCandidates(_ db: Database, nowMs: Int64, limit: Int) throws -> [Int64] {
        let backlogTerm = "state IN ('queued', 'sending')"
        var candidates: [Int64: [Int64]] = [:]
        let nextApp = try db.cachedStatement(
            sql: "SELECT min(app_id) FROM messages WHERE \(backlogTerm) AND state = 'queued' AND app_id > ?")
        let queuedOfApp = try db.cachedStatement(
            sql: """
                SELECT id FROM messages WHERE \(backlogTerm) AND state = 'queued' AND app_id = ?
                ORDER BY id LIMIT ?
                """)
        var after = Int64.min
        while let appID = try Int64.fetchOne(nextApp, arguments: [after]) {
            candidates[appID] = try Int64.fetchAll(queuedOfApp, arguments: [appID, limit])
            after = appID
        }
        for row in try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT id, app_id FROM messages
                    WHERE state = 'scheduled' AND send_at <= ? AND \(Schema.pendingMessagesCondition) ORDER BY id LIMIT ?
                    """), arguments: [nowMs, limit])
        {
            candidates[row[1] as Int64, default: []].append(row[0] as Int64)
        }
        guard !candidates.isEmpty else { return [] }
        // One app alone: every turn is offset by its same sending count, so the order is its
        // ids' (counting what it has sending walked the index on every claim at chat rate).
        if candidates.count == 1, let ids = candidates.first?.value {
            return Array(ids.sorted().prefix(limit))
        }
        let sendingOfApp = try db.cachedStatement(
            sql: "SELECT count(*) FROM messages WHERE \(backlogTerm) AND state = 'sending' AND app_id = ?")
        var turns: [(turn: Int, id: Int64)] = []
        for (appID, ids) in candidates {
            let sending = try Int.fetchOne(sendingOfApp, arguments: [appID]) ?? 0
            for (index, id) in ids.sorted().prefix(limit).enumerated() { turns.append((sending + index + 1, id)) }
        }
        return turns.sorted { ($0.turn, $0.id) < ($1.turn, $1.id) }.prefix(limit).map(\.id)
    }

    /// Messages left `sending` after `id`, in id order.
    func sendingMessages(after id: Int64, limit: Int) async throws -> [MessageRecord] {
        try await read { db in
            try db.fetch(
                """
                \(raw: Self.messageSelect)
                WHERE m.state = 'sending' AND \(raw: Schema.pendingMessagesCondition) AND m.id > \(id) ORDER BY m.id LIMIT \(limit)
                """
            ) { try Self.messageRecord($0) }
        }
    }

    public func recordProgress(_ progress: MessageProgress, at: Date) async throws {
        let now = SQLTime.milliseconds(at)
        let webhooks = webhookOutbox
        try await write { db in try Self.apply(db, progress, now: now, webhooks: webhooks) }
    }

    /// The flushes of many messages in one write transaction, each in a savepoint of its own:
    /// one that fails (whatever the reason) is rolled back alone and answered with its error.
    public func recordProgress(_ batch: [MessageProgress], at: Date) async throws -> [(any Error)?] {
        guard !batch.isEmpty else { return [] }
        let now = SQLTime.milliseconds(at)
        let webhooks = webhookOutbox
        return try await write { db in
            var results: [(any Error)?] = []
            results.reserveCapacity(batch.count)
            for progress in batch {
                if batch.count == 1 {
                    // Alone in its transaction: no savepoint needed.
                    try Self.apply(db, progress, now: now, webhooks: webhooks)
                    results.append(nil)
                    continue
                }
                do {
                    try db.inPreparedSavepoint { try Self.apply(db, progress, now: now, webhooks: webhooks) }
                    results.append(nil)
                } catch let lost as TransactionLost {
                    throw lost.cause
                } catch {
                    results.append(error)
                }
            }
            return results
        }
    }

    /// One flush, inside the caller's transaction, with the webhook events it causes.
    static func apply(_ db: Database, _ flushed: MessageProgress, now: Int64, webhooks: WebhookOutbox) throws {
        let progress = try withoutDeletedDevices(db, flushed)
        let c = progress.counts
        // Prepared once per connection: a push flushes after every page, and parsing this
        // statement each time showed in the per-recipient profile. A final flush (every chat
        // message has one) sets the state in the same statement: the row written once, not
        // twice. SET's expressions read the row as it was, so the final total and the check for
        // work left add this flush's counts themselves. The audience may have changed while it
        // was read: the final total is what actually got an outcome. A message completes once:
        // a second final flush keeps the first completion time, which status polls have already
        // shown. One with retries or holds left completes when the last of them ends
        // (`finishWaitingMessages`).
        let updated =
            if let final = progress.finalState {
                try db.run(
                    """
                    UPDATE messages SET cursor = max(cursor, \(progress.cursor)), queued = queued + \(c.queued),
                        sending = sending + \(c.sending), delivered = delivered + \(c.delivered),
                        failed = failed + \(c.failed), skipped = skipped + \(c.skipped), held = held + \(c.held),
                        state = \(final.rawValue),
                        completed_at = CASE WHEN queued + sending + held + \(c.queued + c.sending + c.held) = 0
                            THEN coalesce(completed_at, \(now)) ELSE completed_at END,
                        total = queued + sending + delivered + failed + skipped + held
                            + \(c.queued + c.sending + c.delivered + c.failed + c.skipped + c.held)
                    WHERE id = \(progress.messageID)
                    """)
            } else {
                try db.run(
                    """
                    UPDATE messages SET cursor = max(cursor, \(progress.cursor)), queued = queued + \(c.queued),
                        sending = sending + \(c.sending), delivered = delivered + \(c.delivered),
                        failed = failed + \(c.failed), skipped = skipped + \(c.skipped), held = held + \(c.held)
                    WHERE id = \(progress.messageID)
                    """)
            }
        // The message was deleted with its app while it was sent: nothing is left to record.
        guard updated > 0 else { return }
        try addFailures(db, messageID: progress.messageID, progress.failures)
        try addSkips(db, messageID: progress.messageID, progress.skips)
        if progress.deliveredByChannel.values.contains(where: { $0 != 0 }) {
            let addDelivered = try db.prepare(Self.addChannelDeliveries)
            for (channel, n) in progress.deliveredByChannel where n != 0 {
                try addDelivered.run([progress.messageID, channel.rawValue, n])
            }
        }
        if !progress.serviceRequests.isEmpty {
            let insert = try db.prepare(Self.insertServiceRequest)
            for request in progress.serviceRequests {
                try insert.run([request.channel.rawValue, request.requestID, progress.messageID, now])
            }
        }
        if !progress.deliveries.isEmpty {
            let insert = try db.prepare(Self.insertDelivery)
            for d in progress.deliveries {
                try insert.run([
                    progress.messageID, d.deviceID, d.token, d.environment.rawValue, d.state.rawValue, d.reason,
                    d.serviceMessageID, d.attempts, d.nextAttemptAt.map(SQLTime.milliseconds), now,
                    try d.content.map { try JSONText.encode($0) },
                    d.credentialSelector, d.channel.rawValue,
                ])
            }
        }
        if !progress.deliveries.isEmpty {
            try webhooks.deliveriesFailed(
                GRDBExecutor(db: db), messageID: progress.messageID, progress.deliveries, now: now)
        }
        try DeviceInvalidations.apply(GRDBExecutor(db: db), progress.invalidations, now: now, webhooks: webhooks)
        if progress.finalState != nil {
            try webhooks.messagesCompleted(GRDBExecutor(db: db), [progress.messageID], now: now)
        }
    }

    /// Adds to a message's deliveries through one channel: message, channel, how many.
    static let addChannelDeliveries: SQLStatement = """
        INSERT INTO message_channel_deliveries (message_id, channel, delivered)
        VALUES (\(parameter: 1), \(parameter: 2), \(parameter: 3))
        ON CONFLICT (message_id, channel) DO UPDATE SET delivered = delivered + excluded.delivered
        """

    /// A request the service accepted for the message: channel, request id, message, now (a
    /// request id met again, as a retried flush writes it, is kept once).
    static let insertServiceRequest: SQLStatement = """
        INSERT INTO receipt_service_requests (channel, request_id, message_id, created_at)
        VALUES (\(parameter: 1), \(parameter: 2), \(parameter: 3), \(parameter: 4))
        ON CONFLICT (channel, request_id) DO NOTHING
        """

    /// A flushed delivery row: message, device, token, environment, state, reason, service
    /// message id, attempts, next attempt, now, content, credential selector, channel. The
    /// device may have been deleted while its push was in flight: the row keeps its token and
    /// outcome without the reference (a foreign key failure would refuse the whole flush, again
    /// and again, and leave the message sending).
    static let insertDelivery: SQLStatement = """
        INSERT INTO deliveries (message_id, device_id, token, environment, state, reason, service_message_id,
            attempts, next_attempt_at, updated_at, content, credential_selector, channel)
        VALUES (\(parameter: 1), (SELECT id FROM devices WHERE id = \(parameter: 2)), \(parameter: 3), \(parameter: 4),
            \(parameter: 5), \(parameter: 6), \(parameter: 7), \(parameter: 8), \(parameter: 9), \(parameter: 10),
            \(parameter: 11), \(parameter: 12), \(parameter: 13))
        """

    /// The flush with its held and queued rows of devices deleted since their page was read
    /// skipped (`DeletedDeviceFlushGuard`). One writer: nothing deletes them between this read
    /// and the flush's insert.
    private static func withoutDeletedDevices(_ db: Database, _ progress: MessageProgress) throws -> MessageProgress {
        let ids = DeletedDeviceFlushGuard.deviceIDs(progress, pendingOnly: true)
        guard !ids.isEmpty else { return progress }
        let existing = try Int64.fetchAll(
            listStatement(
                db, sql: "SELECT id FROM devices WHERE id IN (\(SQLList.placeholders(ids.count)))", count: ids.count),
            arguments: StatementArguments(ids))
        guard existing.count < ids.count else { return progress }
        return DeletedDeviceFlushGuard.cancellingDeleted(progress, existing: Set(existing))
    }

    // MARK: deliveries

    /// Only the file's dispatcher requeues: another process's rows in `sending` are its own
    /// retries in flight. A store that is not the dispatcher yet requeues when it becomes it
    /// (`claimWork`).
    public func requeueInterruptedDeliveries() async throws -> Int {
        let role = dispatcherLock.acquire()
        guard role.held else { return 0 }
        // A dispatcher starting in this process (an engine started again) claims the messages
        // the last one left sending before any new one: a claim marks a message sending, so
        // they are not due any more.
        sendingRecovery.withLock { $0 = 0 }
        return try await requeueSendingDeliveries()
    }

    /// The held rows of each message, then its counters: SQLite keeps them on the message's
    /// row (PostgreSQL on the slice's each delivery belongs to).
    public func sqlReleaseHeld(appID: Int64, matching condition: SQLQuery, now: Date) async throws -> Int {
        let nowMs = SQLTime.milliseconds(now)
        return try await sqlWrite { db in
            let perMessage = try db.fetchAll(
                """
                SELECT message_id, count(*) FROM deliveries
                WHERE state = 'held' AND \(condition) AND message_id IN (SELECT id FROM messages WHERE app_id = \(appID))
                GROUP BY message_id
                """)
            var total = 0
            for row in perMessage {
                let (messageID, n) = (row.int64(0), row.int64(1))
                try db.run(
                    """
                    UPDATE deliveries SET state = 'queued', next_attempt_at = \(nowMs), updated_at = \(nowMs)
                    WHERE message_id = \(messageID) AND state = 'held' AND \(condition)
                    """)
                try db.run("UPDATE messages SET held = held - \(n), queued = queued + \(n) WHERE id = \(messageID)")
                total += Int(n)
            }
            return total
        }
    }

    // MARK: plumbing

    private static func addSkips(_ db: Database, messageID: Int64, _ skips: [String: Int]) throws {
        try addReasons(db, addSkip, messageID: messageID, skips)
    }

    /// Adds to a message's count of one skip reason: message, reason, how many.
    private static let addSkip: SQLStatement = """
        INSERT INTO message_skips (message_id, reason, count) VALUES (\(parameter: 1), \(parameter: 2), \(parameter: 3))
        ON CONFLICT (message_id, reason) DO UPDATE SET count = count + excluded.count
        """

    /// Adds to a message's count of one failure reason: message, reason, how many.
    private static let addFailure: SQLStatement = """
        INSERT INTO message_failures (message_id, reason, count) VALUES (\(parameter: 1), \(parameter: 2), \(parameter: 3))
        ON CONFLICT (message_id, reason) DO UPDATE SET count = count + excluded.count
        """

    /// Each reason's count in `reasons` added by `statement` (`addSkip`, `addFailure`), prepared
    /// only when there is one to add: most flushes have none.
    private static func addReasons(
        _ db: Database, _ statement: SQLStatement, messageID: Int64, _ reasons: [String: Int]
    ) throws {
        guard reasons.values.contains(where: { $0 != 0 }) else { return }
        let add = try db.prepare(statement)
        for (reason, n) in reasons where n != 0 { try add.run([messageID, reason, n]) }
    }

    /// Fills account, app state and locale of a page's devices in one query.
    private static func addFailures(_ db: Database, messageID: Int64, _ failures: [String: Int]) throws {
        try addReasons(db, addFailure, messageID: messageID, failures)
    }

    /// A statement reading a list of `count` devices: prepared once per connection for the
    /// short lists a chat message names (one device, or a few), whose compilation (GRDB's
    /// authorizer reads every column) was ~4 % of the CPU per message; compiled each time for
    /// longer ones, so the cache holds a few texts, not one per list length.
    private static func listStatement(_ db: Database, sql: String, count: Int) throws -> Statement {
        count <= 8 ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
    }
}
