import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

/// Messages and their progress on PostgreSQL. A message's outcomes are counted where they
/// happen, so concurrent writers never queue behind one row: each slice's flushes on its
/// `message_slices` row (and its per-reason rows, keyed by slice), retried deliveries' changes
/// on the `messages` row. A message's counts are the sum.
///
/// Written once instead (`SQLStoreBackend+Messages`): reading messages (through
/// `sqlMessageSelect` below, which adds the slices' counts), a message's state changes and the
/// audience count, the status poll (`messageProgress`, a point lookup). What stays here differs
/// from SQLite for that reason: creating a message (key and message in one statement, several
/// nodes), progress flushes (fenced by the slice's lease, many flushes per statement with
/// `unnest`), retries and held deliveries (the slice's counters).
extension PostgresStore: MessageStore {
    /// The database's clock in milliseconds: leases compare against it, so nodes whose clocks
    /// disagree still agree on whose lease ended.
    static let databaseNow = PostgresDialect().currentTimeMilliseconds

    /// Message columns with the counts summed over slices; `m` is the message, `s` the sums.
    static let messageSelect = """
        SELECT \(Rows.messageColumns),
            m.queued + coalesce(s.queued, 0) AS queued, m.sending + coalesce(s.sending, 0) AS sending,
            m.delivered + coalesce(s.delivered, 0) AS delivered, m.failed + coalesce(s.failed, 0) AS failed,
            m.skipped + coalesce(s.skipped, 0) AS skipped, m.held + coalesce(s.held, 0) AS held,
            (SELECT coalesce(json_object_agg(reason, n), '{}')::text FROM
                (SELECT reason, sum(count) AS n FROM message_failures WHERE message_id = m.id GROUP BY reason) f
            ) AS failures,
            (SELECT coalesce(json_object_agg(reason, n), '{}')::text FROM
                (SELECT reason, sum(count) AS n FROM message_skips WHERE message_id = m.id GROUP BY reason) k
            ) AS skips,
            s.cursors
        FROM messages m LEFT JOIN LATERAL (
            SELECT sum(queued)::bigint AS queued, sum(sending)::bigint AS sending,
                sum(delivered)::bigint AS delivered, sum(failed)::bigint AS failed,
                sum(skipped)::bigint AS skipped, sum(held)::bigint AS held,
                json_object_agg(slice, cursor)::text AS cursors
            FROM message_slices WHERE message_id = m.id
        ) s ON true
        """

    public var sqlMessageSelect: String { Self.messageSelect }

    public func sqlMessageRecord(_ row: SQLRow) throws -> MessageRecord {
        try Rows.message(columns: row, cursor: try Rows.sliceCursors(row.optionalString(23))[0] ?? 0)
    }

    public func createMessage(_ job: PushJob, state: MessageState) async throws -> MessageRecord {
        let now = nowMilliseconds
        let row = try MessageRow(job, state: state, createdAt: now)
        guard let key = row.idempotencyKey else {
            // Claimed as it is stored when it goes whole, now, and this node's dispatcher claims.
            let claim =
                state == .queued
                ? Self.wholeSlice(of: job.audience, sliceSize: sliceSize).flatMap { slice in
                    acceptedClaims?.reserve() == true ? slice : nil
                } : nil
            let id: Int64
            do {
                id = try await messageInserts.submit(MessageInsert(row: row, claim: claim))
            } catch {
                if claim != nil { acceptedClaims?.cancelReservation() }
                throw error
            }
            // The answer says queued: accepted, nothing sent yet (docs/api.md).
            let record = MessageRecord.created(id: id, job: job, state: state, createdAt: SQLTime.date(now))
            guard let claim, let acceptedClaims else {
                if state == .queued { createdRecords.keep(record) }
                return record
            }
            var claimed = record
            claimed.state = .sending
            claimed.startedAt = record.createdAt
            claimed.total = claim.total
            claimed.cursor = claim.after
            let work = WorkClaim(
                record: claimed,
                slice: WorkSlice(
                    id: 0, after: claim.after, through: nil, fence: 1,
                    leaseUntil: SQLTime.date(now).addingTimeInterval(leaseDuration.timeInterval)))
            if !acceptedClaims.add(work) {
                // The dispatcher stopped meanwhile: another node may take it at once.
                try? await releaseSlice(MessageSliceKey(messageID: id, slice: 0), fence: 1)
            }
            return record
        }
        let cutoff = now - Int64(IdempotencyKey.lifetime * 1000)
        let outcome = try await write { conn -> (id: Int64, existing: MessageRecord?) in
            // The key and the message in one statement: the key row takes the message's id
            // from the sequence, and the message is inserted only when the key row was (new, or
            // taking over an expired key). A concurrent request with the same key waits on the
            // key's index entry until this one commits, then inserts nothing.
            if let id = try conn.run(
                """
                WITH key AS (
                    INSERT INTO idempotency_keys (app_id, key, message_id, created_at)
                    VALUES (\(job.appID)::bigint, \(key)::text, nextval(pg_get_serial_sequence('messages', 'id')),
                        \(now)::bigint)
                    ON CONFLICT (app_id, key) DO UPDATE
                    SET message_id = excluded.message_id, created_at = excluded.created_at
                    WHERE idempotency_keys.created_at <= \(cutoff)::bigint
                    RETURNING message_id
                ), inserted AS (
                    INSERT INTO messages (id, \(raw: Rows.messageInsertColumns))
                    SELECT key.message_id, \(job.appID)::bigint, \(job.vendor)::text, \(job.vendorMessageID)::text,
                        \(row.audience)::text, \(row.content)::text, \(row.options)::text, \(row.labels)::text,
                        \(state.rawValue)::text, \(row.sendAt)::bigint, \(now)::bigint, \(row.vendorContext)::text
                    FROM key RETURNING id, state
                ), woken AS (\(raw: Self.wakeWhenQueued("inserted")))
                SELECT id FROM inserted WHERE \(raw: Self.wakeRead)
                """
            ).rows.first?["id"]?.int64 {
                return (id, nil)
            }
            // The key names a live message. This statement's snapshot is newer than the commit
            // the insert above waited for (READ COMMITTED), so it sees that message.
            guard
                let row = try conn.run(
                    """
                    \(raw: Self.messageSelect)
                    WHERE m.id = (SELECT message_id FROM idempotency_keys WHERE app_id = \(job.appID) AND key = \(key))
                    """
                ).rows.first
            else { throw StoreError.notFound("message of idempotency key") }
            let record = try Self.messageRecord(row)
            return (record.id, record)
        }
        await idempotencyKeySweeper.sweepIfDue(now: SQLTime.date(now)) { before, limit in
            try await forgetIdempotencyKeys(before: before, limit: limit)
        }
        if let existing = outcome.existing { return existing }
        let record = MessageRecord.created(id: outcome.id, job: job, state: state, createdAt: SQLTime.date(now))
        if state == .queued { createdRecords.keep(record) }
        return record
    }

    /// Inserts messages accepted at about the same time together (`messageInserts`): one
    /// statement for the batch, atomic by itself and sent without BEGIN and COMMIT (one round
    /// trip), where each used to take three statements (BEGIN, INSERT, COMMIT) of its own — a
    /// chat load's accepts were a third of the server's statements, each paying its own locks,
    /// executor start and commit (issue #47). When the
    /// batch is refused (one message's vendor id already taken, say), each is inserted alone,
    /// so that only that one gets the error. When the database could not be reached, or the
    /// connection broke (the batch may have committed), every message of it gets that error:
    /// inserted again, they could be stored twice.
    static func insertMessages<Insert>(
        _ rows: [Insert], write: ([Insert]) async throws -> [Int64]
    ) async -> [Result<Int64, any Error>] {
        await batchOrEachAlone(rows, write)
    }

    /// A batch sent as one statement (a `StoreBatcher`'s operation), one result per input, in
    /// order. When the database refuses it (one input's row conflicts, or its app is gone),
    /// each input is sent alone, so only the one at fault gets the error. When the database
    /// could not be reached, or the connection broke (the batch may have committed), every
    /// input gets that error: sent again, a write could happen twice.
    static func batchOrEachAlone<Input, Output>(
        _ inputs: [Input], _ write: ([Input]) async throws -> [Output]
    ) async -> [Result<Output, any Error>] {
        func answered(_ outputs: [Output], _ count: Int) throws -> [Output] {
            guard outputs.count == count else {
                throw StoreError(.unavailable, "\(outputs.count) results for a batch of \(count)")
            }
            return outputs
        }
        if inputs.count > 1 {
            do {
                return try answered(try await write(inputs), inputs.count).map { .success($0) }
            } catch let error as StoreError where error.code == .unavailable {
                return inputs.map { _ in .failure(error) }
            } catch {
                // Refused: each alone, below.
            }
        }
        var results: [Result<Output, any Error>] = []
        for input in inputs {
            do {
                results.append(.success(try answered(try await write([input]), 1)[0]))
            } catch {
                results.append(.failure(error))
            }
        }
        return results
    }

    /// A message to insert, and whether this node claims it as it is stored (`AcceptedClaims`):
    /// then it is stored sending, started, with its one slice from `claim.after` claimed under
    /// this node's lease (attempt 1).
    struct MessageInsert: Sendable {
        var row: MessageRow
        var claim: (after: Int64, total: Int?)?
    }

    /// `insertMessageRows` with nothing claimed.
    static func insertMessageRows(_ conn: PostgresConnection, _ rows: [MessageRow]) throws -> [Int64] {
        try insertMessageRows(conn, rows.map { MessageInsert(row: $0, claim: nil) }, node: "", leaseMilliseconds: 0)
    }

    /// The statement of `insertMessages`: ids drawn from the sequence per row first, so that
    /// they come back in the batch's order whatever order the insert takes (the sequence named
    /// once for the statement: `pg_get_serial_sequence` per row read the catalog for each, ~6 µs
    /// of a chat line's server time on PostgreSQL, issue #47). A batch with a
    /// queued message announces it (`wakeWhenQueued`); a message claimed as it is stored is
    /// inserted sending with its claimed slice, and announced to nobody (no other node may
    /// take it, and this node's dispatcher was woken by the accept).
    static func insertMessageRows(
        _ conn: PostgresConnection, _ inserts: [MessageInsert], node: String, leaseMilliseconds lease: Int64
    ) throws -> [Int64] {
        let claimed = inserts.contains { $0.claim != nil }
        let slices: SQLQuery =
            claimed
            ? """
            , claimed AS (
                INSERT INTO message_slices (message_id, slice, after_position, through_position, cursor, owner,
                    lease_until, attempts, updated_at)
                SELECT id, 0, claim_after::bigint, NULL, claim_after::bigint, \(node), \(raw: databaseNow) + \(lease), 1,
                    created_at
                FROM v WHERE claim_after IS NOT NULL
            )
            """ : ""
        if inserts.count == 1, let insert = inserts.first, insert.claim == nil {
            let row = insert.row
            let id = try conn.run(
                """
                WITH inserted AS (
                    INSERT INTO messages (\(raw: Rows.messageInsertColumns))
                    VALUES (\(row.appID), \(row.vendor), \(row.vendorMessageID), \(row.audience), \(row.content),
                        \(row.options), \(row.labels), \(row.state), \(row.sendAt), \(row.createdAt), \(row.vendorContext))
                    RETURNING id, state
                ), woken AS (\(raw: Self.wakeWhenQueued("inserted")))
                SELECT id FROM inserted WHERE \(raw: Self.wakeRead)
                """
            ).rows.first?["id"]?.int64
            return id.map { [$0] } ?? []
        }
        let rows = inserts.map(\.row)
        let states = inserts.map { $0.claim == nil ? $0.row.state : MessageState.sending.rawValue }
        return try conn.run(
            """
            WITH v AS (
                SELECT nextval((SELECT pg_get_serial_sequence('messages', 'id'))::regclass) AS id, v.*
                FROM unnest(\(PostgresArray.int(rows.map(\.appID)))::bigint[], \(PostgresArray.text(rows.map(\.vendor)))::text[],
                    \(PostgresArray.text(rows.map(\.vendorMessageID)))::text[], \(PostgresArray.text(rows.map(\.audience)))::text[],
                    \(PostgresArray.text(rows.map(\.content)))::text[], \(PostgresArray.text(rows.map(\.options)))::text[],
                    \(PostgresArray.text(rows.map(\.labels)))::text[], \(PostgresArray.text(states))::text[],
                    \(PostgresArray.text(rows.map { $0.sendAt.map(String.init) }))::text[],
                    \(PostgresArray.int(rows.map(\.createdAt)))::bigint[], \(PostgresArray.text(rows.map(\.vendorContext)))::text[],
                    \(PostgresArray.text(inserts.map { $0.claim.map { String($0.after) } }))::text[],
                    \(PostgresArray.text(inserts.map { $0.claim?.total.map(String.init) }))::text[])
                    WITH ORDINALITY AS v(app_id, vendor, vendor_message_id, audience, content, options, labels, state,
                        send_at, created_at, vendor_context, claim_after, claim_total, ord)
            ), inserted AS (
                INSERT INTO messages (id, \(raw: Rows.messageInsertColumns), started_at, total)
                SELECT id, app_id, vendor, vendor_message_id, audience, content, options, labels, state,
                    send_at::bigint, created_at, vendor_context,
                    CASE WHEN claim_after IS NOT NULL THEN created_at END, claim_total::bigint
                FROM v ORDER BY ord
            )\(slices), woken AS (\(raw: Self.wakeWhenQueued("v")))
            SELECT id FROM v WHERE \(raw: Self.wakeRead) ORDER BY ord
            """
        ).rows.compactMap { $0["id"]?.int64 }
    }

    /// One flush in one transaction. A fenced flush (a slice claimed under a lease) is applied
    /// only while this node still holds the slice under the same claim — no other node claimed
    /// it since, even if its lease ended (a claim locks the row and bumps `attempts`, so a flush
    /// lands either before it, and the claim resumes from its cursor, or not at all: a node cut
    /// off from the database past its lease still lands its outcomes when it is back, issue #40
    /// item 4); otherwise nothing is written and `StoreError.Code.leaseLost` is thrown. The last
    /// slice of a message to finish completes the message.
    public func recordProgress(_ progress: MessageProgress, at: Date) async throws {
        let now = SQLTime.milliseconds(at)
        let node = nodeID
        let webhooks = webhookOutbox
        try await write { conn in
            try Self.apply(
                conn, try Self.withoutDeletedDevices(conn, [progress])[0], now: now, node: node, webhooks: webhooks)
        }
    }

    /// The flushes of many messages in one transaction, each under a savepoint: a flush whose
    /// slice was taken over (or that fails otherwise) is rolled back alone and answered with its
    /// error; the others commit together.
    public func recordProgress(_ batch: [MessageProgress], at: Date) async throws -> [(any Error)?] {
        guard !batch.isEmpty else { return [] }
        let now = SQLTime.milliseconds(at)
        let node = nodeID
        let webhooks = webhookOutbox
        // A few statements for the whole batch, whatever its size; should one of them fail (a
        // flush the database refuses), the batch is written again flush by flush, so one flush
        // can never hold up the others.
        if batch.count > 1 {
            // Any failure, even a lost connection: going flush by flush then fails as it should.
            if let results = try? await write({ conn in
                try Self.applyTogether(conn, batch, now: now, node: node, webhooks: webhooks)
            }) {
                return results
            }
        }
        return try await write { conn in
            var results: [(any Error)?] = []
            results.reserveCapacity(batch.count)
            for progress in try Self.withoutDeletedDevices(conn, batch) {
                try conn.run("SAVEPOINT flush")
                do {
                    try Self.apply(conn, progress, now: now, node: node, webhooks: webhooks)
                    try conn.run("RELEASE SAVEPOINT flush")
                    results.append(nil)
                } catch let error as PostgresError where error.kind == .connectionLost || error.kind == .closed {
                    throw error
                } catch {
                    try conn.run("ROLLBACK TO SAVEPOINT flush")
                    results.append(error)
                }
            }
            return results
        }
    }

    /// Locks `keys`' slice rows in (message, slice) order: the one order every statement that
    /// locks several slices takes them in (`applyTogether`, `renewLeases`), so two of them never
    /// wait for each other in a cycle. A row another transaction holds is waited for in that
    /// order too.
    ///
    /// Here and wherever slices are joined with an unnested batch (a flush's, a renewal's,
    /// planning's), two things keep the plan linear in the batch (issue #47: 30–50 ms a flush,
    /// quadratic in it, with a few thousand chat lines queued):
    /// - the batch's message ids are also an index condition (`s.message_id = ANY(…)`), so what
    ///   is read is the batch's own slices even on statistics from before a burst, which put
    ///   the open slices at one row and had every one of them compared with the batch;
    /// - the statement runs unprepared (`runUnprepared`): planned for the arrays it is given.
    ///   A prepared statement's generic plan takes every array for 10 elements;
    /// - it is planned without nested loops (`joiningBatch`): the open slices' statistics put
    ///   the batch's slices at one row (few slices are open when a table is analyzed), and the
    ///   planner nested the unnested batch inside a loop over them, reading the batch again for
    ///   each (103 × 103 rows, 22 ms; 146 × 146, 66 ms).
    static func lockSlicesInOrder(_ conn: PostgresConnection, _ keys: [MessageSliceKey]) throws {
        let sorted = Set(keys).sorted { ($0.messageID, $0.slice) < ($1.messageID, $1.slice) }
        guard sorted.count > 1 else { return }
        try joiningBatch(
            conn,
            """
            SELECT 1 FROM message_slices s
            JOIN unnest(\(PostgresArray.int(sorted.map(\.messageID)))::bigint[], \(PostgresArray.int(sorted.map(\.slice)))::bigint[])
                AS v(message_id, slice)
                ON s.message_id = v.message_id AND s.slice = v.slice
            WHERE s.message_id = ANY(\(PostgresArray.int(sorted.map(\.messageID)))::bigint[])
            ORDER BY s.message_id, s.slice
            FOR UPDATE OF s
            """)
    }

    /// Runs `query` unprepared and planned with hash joins rather than nested loops, inside the
    /// caller's transaction (`SET LOCAL`, then back on; a rollback undoes it too): for a
    /// statement that joins slices with an unnested batch (`lockSlicesInOrder`). The three
    /// statements go in one round trip (a pipeline), not three: a chat load's flushes ran two
    /// of these each, a sixth of the server's statements (issue #47).
    @discardableResult
    static func joiningBatch(_ conn: PostgresConnection, _ query: SQLQuery) throws -> PostgresResult {
        let results = conn.pipeline([
            ("SET LOCAL enable_nestloop = off", []), query.postgresStatement, ("SET LOCAL enable_nestloop = on", []),
        ])
        for result in results { _ = try result.get() }
        return try results[1].get()
    }

    /// Many flushes in one transaction with a statement per kind of row for all of them (slices,
    /// reasons, channel counts, invalidations, completions), not one per flush: a chat load
    /// commits hundreds of one-device flushes at a time. Fenced as one flush is: a flush whose
    /// slice is no longer this node's under its claim is answered `leaseLost` and none of its
    /// rows are written. Throws when any statement fails (the caller then goes flush by flush).
    static func applyTogether(
        _ conn: PostgresConnection, _ flushed: [MessageProgress], now: Int64, node: String, webhooks: WebhookOutbox
    ) throws -> [(any Error)?] {
        let batch = try withoutDeletedDevices(conn, flushed)
        var results: [(any Error)?] = Array(repeating: nil, count: batch.count)
        // Every slice the batch writes is locked first, in (message, slice) order, as lease
        // renewal locks them: two statements taking the same rows in different orders deadlocked
        // (40P01), and a renewal that failed lost its node the leases (issue #40 item 1).
        try lockSlicesInOrder(
            conn,
            batch.compactMap { progress in
                progress.slice.map { MessageSliceKey(messageID: progress.messageID, slice: $0.id) }
            })
        // Fenced flushes of distinct slices go together; anything else one by one (in this
        // transaction: a failure fails the batch, which is then written flush by flush).
        var fenced: [Int] = []
        var seen = Set<MessageSliceKey>()
        for (index, progress) in batch.enumerated() {
            if let slice = progress.slice, slice.leaseUntil != nil,
                seen.insert(MessageSliceKey(messageID: progress.messageID, slice: slice.id)).inserted
            {
                fenced.append(index)
            } else {
                try apply(conn, progress, now: now, node: node, webhooks: webhooks)
            }
        }
        guard !fenced.isEmpty else { return results }
        let items = fenced.map { batch[$0] }
        func column(_ value: (MessageProgress) -> Int64) -> PostgresValue { PostgresArray.int(items.map(value)) }
        // Unprepared, with `s.message_id = ANY(…)`, no nested loops: linear in the batch
        // (`lockSlicesInOrder`).
        let updated = try joiningBatch(
            conn,
            """
            UPDATE message_slices s SET cursor = greatest(s.cursor, v.cursor), queued = s.queued + v.queued,
                sending = s.sending + v.sending, delivered = s.delivered + v.delivered, failed = s.failed + v.failed,
                skipped = s.skipped + v.skipped, held = s.held + v.held, updated_at = \(now),
                state = CASE WHEN v.final THEN 'done' ELSE s.state END,
                owner = CASE WHEN v.final THEN NULL ELSE s.owner END,
                lease_until = CASE WHEN v.final THEN NULL ELSE s.lease_until END
            FROM unnest(\(column(\.messageID))::bigint[], \(column { $0.slice?.id ?? 0 })::bigint[],
                \(column(\.cursor))::bigint[], \(column { Int64($0.counts.queued) })::bigint[],
                \(column { Int64($0.counts.sending) })::bigint[], \(column { Int64($0.counts.delivered) })::bigint[],
                \(column { Int64($0.counts.failed) })::bigint[], \(column { Int64($0.counts.skipped) })::bigint[],
                \(column { Int64($0.counts.held) })::bigint[],
                \(PostgresArray.text(items.map { $0.finalState != nil ? "t" : "f" }))::bool[],
                \(column { $0.slice?.fence ?? 0 })::bigint[])
                AS v(message_id, slice, cursor, queued, sending, delivered, failed, skipped, held, final, fence)
            WHERE s.message_id = v.message_id AND s.slice = v.slice AND s.owner = \(node) AND s.attempts = v.fence
                AND s.state = 'open' AND s.message_id = ANY(\(column(\.messageID))::bigint[])
            RETURNING s.message_id, s.slice
            """
        ).rows
        let held = Set(updated.map { MessageSliceKey(messageID: $0.int64(at: 0), slice: $0.int64(at: 1)) })
        var committed: [MessageProgress] = []
        for index in fenced {
            let progress = batch[index]
            let sliceID = progress.slice?.id ?? 0
            if held.contains(MessageSliceKey(messageID: progress.messageID, slice: sliceID)) {
                committed.append(progress)
            } else {
                results[index] = StoreError(
                    .leaseLost,
                    "slice \(progress.messageID)/\(sliceID) is no longer held by this node under claim \(progress.slice?.fence ?? 0)"
                )
            }
        }
        guard !committed.isEmpty else { return results }
        for table in ["message_failures", "message_skips"] {
            var rows: [(message: Int64, slice: Int64, reason: String, count: Int64)] = []
            for progress in committed {
                for (reason, n) in (table == "message_failures" ? progress.failures : progress.skips) where n != 0 {
                    rows.append((progress.messageID, progress.slice?.id ?? 0, reason, Int64(n)))
                }
            }
            guard !rows.isEmpty else { continue }
            // In key order, as the retry worker writes the same rows (`MessageReasonCounts`): a
            // retry counts on the slice that wrote its row, which may be one this batch flushes.
            rows.sort { ($0.message, $0.slice, $0.reason) < ($1.message, $1.slice, $1.reason) }
            let messages = rows.map(\.message)
            let slices = rows.map(\.slice)
            let reasons = rows.map(\.reason)
            let counts = rows.map(\.count)
            try conn.run(
                """
                INSERT INTO \(raw: table) (message_id, slice, reason, count)
                SELECT * FROM unnest(\(PostgresArray.int(messages))::bigint[], \(PostgresArray.int(slices))::bigint[],
                    \(PostgresArray.text(reasons))::text[], \(PostgresArray.int(counts))::bigint[])
                ON CONFLICT (message_id, slice, reason) DO UPDATE SET count = \(raw: table).count + excluded.count
                """)
        }
        var channelRows: (messages: [Int64], slices: [Int64], channels: [String], counts: [Int64]) = ([], [], [], [])
        for progress in committed {
            for (channel, n) in progress.deliveredByChannel where n != 0 {
                channelRows.messages.append(progress.messageID)
                channelRows.slices.append(progress.slice?.id ?? 0)
                channelRows.channels.append(channel.rawValue)
                channelRows.counts.append(Int64(n))
            }
        }
        if !channelRows.messages.isEmpty {
            try conn.run(
                """
                INSERT INTO message_channel_deliveries (message_id, slice, channel, delivered)
                SELECT * FROM unnest(\(PostgresArray.int(channelRows.messages))::bigint[],
                    \(PostgresArray.int(channelRows.slices))::bigint[], \(PostgresArray.text(channelRows.channels))::text[],
                    \(PostgresArray.int(channelRows.counts))::bigint[])
                ON CONFLICT (message_id, slice, channel)
                DO UPDATE SET delivered = message_channel_deliveries.delivered + excluded.delivered
                """)
        }
        try insertServiceRequests(conn, committed, now: now)
        for progress in committed where !progress.deliveries.isEmpty {
            try insertDeliveries(
                conn, progress.deliveries, messageID: progress.messageID, slice: progress.slice?.id ?? 0, now: now)
            try webhooks.deliveriesFailed(
                PostgresExecutor(conn, prepares: true), messageID: progress.messageID, progress.deliveries, now: now)
        }
        try DeviceInvalidations.apply(
            PostgresExecutor(conn, prepares: true), committed.flatMap(\.invalidations), now: now, webhooks: webhooks)
        // Completions (`completeIfLastSlices`), one statement pair for each final state.
        var finishing: [MessageState: [Int64]] = [:]
        for progress in committed {
            if let final = progress.finalState { finishing[final, default: []].append(progress.messageID) }
        }
        for (state, listed) in finishing.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            let ids = Set(listed).sorted()
            try completeIfLastSlices(conn, ids, state: state, now: now)
            try webhooks.messagesCompleted(PostgresExecutor(conn, prepares: true), ids, now: now)
        }
        return results
    }

    /// One flush, inside the caller's transaction; `StoreError.leaseLost` when its slice is no
    /// longer this node's under the claim it names.
    static func apply(
        _ conn: PostgresConnection, _ progress: MessageProgress, now: Int64, node: String, webhooks: WebhookOutbox
    ) throws {
        do {
            let c = progress.counts
            let sliceID = progress.slice?.id ?? 0
            let final: PostgresValue = .bool(progress.finalState != nil)
            if let slice = progress.slice, slice.leaseUntil != nil {
                let updated = try conn.run(
                    """
                    UPDATE message_slices SET cursor = greatest(cursor, \(progress.cursor)), queued = queued + \(c.queued),
                        sending = sending + \(c.sending), delivered = delivered + \(c.delivered),
                        failed = failed + \(c.failed), skipped = skipped + \(c.skipped), held = held + \(c.held),
                        updated_at = \(now), state = CASE WHEN \(final)::bool THEN 'done' ELSE state END,
                        owner = CASE WHEN \(final)::bool THEN NULL ELSE owner END,
                        lease_until = CASE WHEN \(final)::bool THEN NULL ELSE lease_until END
                    WHERE message_id = \(progress.messageID) AND slice = \(sliceID) AND owner = \(node)
                        AND attempts = \(slice.fence) AND state = 'open'
                    """
                ).affectedRows
                guard updated == 1 else {
                    throw StoreError(
                        .leaseLost,
                        "slice \(progress.messageID)/\(sliceID) is no longer held by this node under claim \(slice.fence)"
                    )
                }
            } else {
                // Unfenced (a whole message written outside the queue): slice 0.
                try conn.run(
                    """
                    INSERT INTO message_slices (message_id, slice, after_position, cursor, state, queued, sending,
                        delivered, failed, skipped, held, updated_at)
                    VALUES (\(progress.messageID), \(sliceID), 0, \(progress.cursor),
                        CASE WHEN \(final)::bool THEN 'done' ELSE 'open' END, \(c.queued), \(c.sending), \(c.delivered),
                        \(c.failed), \(c.skipped), \(c.held), \(now))
                    ON CONFLICT (message_id, slice) DO UPDATE SET
                        cursor = greatest(message_slices.cursor, excluded.cursor),
                        queued = message_slices.queued + excluded.queued,
                        sending = message_slices.sending + excluded.sending,
                        delivered = message_slices.delivered + excluded.delivered,
                        failed = message_slices.failed + excluded.failed,
                        skipped = message_slices.skipped + excluded.skipped,
                        held = message_slices.held + excluded.held, updated_at = excluded.updated_at,
                        state = CASE WHEN \(final)::bool THEN 'done' ELSE message_slices.state END
                    """)
            }
            try Self.addReasons(conn, table: "message_failures", progress.messageID, sliceID, progress.failures)
            try Self.addReasons(conn, table: "message_skips", progress.messageID, sliceID, progress.skips)
            let addDelivered = conn.prepare(Self.addChannelDeliveries)
            for (channel, n) in progress.deliveredByChannel.sorted(by: { $0.key.rawValue < $1.key.rawValue })
            where n != 0 {
                try addDelivered.run([.int(progress.messageID), .int(sliceID), .text(channel.rawValue), .int(Int64(n))])
            }
            try Self.insertServiceRequests(conn, [progress], now: now)
            try Self.insertDeliveries(
                conn, progress.deliveries, messageID: progress.messageID, slice: sliceID, now: now)
            try webhooks.deliveriesFailed(
                PostgresExecutor(conn, prepares: true), messageID: progress.messageID, progress.deliveries, now: now)
            try DeviceInvalidations.apply(
                PostgresExecutor(conn, prepares: true), progress.invalidations, now: now, webhooks: webhooks)
            if let final = progress.finalState {
                try Self.completeIfLastSlices(conn, [progress.messageID], state: final, now: now)
                try webhooks.messagesCompleted(PostgresExecutor(conn, prepares: true), [progress.messageID], now: now)
            }
        }
    }

    /// The flushes with their held and queued rows of devices deleted since their page was read
    /// skipped (`DeletedDeviceFlushGuard`). The devices their rows name are locked `FOR KEY
    /// SHARE` until the flushes commit: a delete in progress (`DeliveryCancellation` locks the
    /// devices first) is waited for and then seen, and a delete that comes later waits for
    /// these rows and cancels them. Without the lock, a device deleted between this read and
    /// the insert failed the insert's foreign key check.
    static func withoutDeletedDevices(_ conn: PostgresConnection, _ batch: [MessageProgress]) throws
        -> [MessageProgress]
    {
        let ids = Set(batch.flatMap { DeletedDeviceFlushGuard.deviceIDs($0, pendingOnly: false) }).sorted()
        guard !ids.isEmpty else { return batch }
        let existing = Set(
            try conn.run(
                "SELECT id FROM devices WHERE id = ANY(\(PostgresArray.int(ids))::bigint[]) ORDER BY id FOR KEY SHARE"
            )
            .rows.compactMap { $0[0].int64 })
        guard existing.count < ids.count else { return batch }
        return batch.map { DeletedDeviceFlushGuard.cancellingDeleted($0, existing: existing) }
    }

    /// Completes each listed message none of whose slices is open. The messages' rows are locked
    /// first, in id order, so two nodes finishing a message's last two slices at once see each
    /// other's (one completes it), and the update, a second statement, has a snapshot that sees
    /// every slice committed before the locks were had.
    ///
    /// The audience may have changed while it was read: the final total is what actually got an
    /// outcome, on the message's row and its slices'. A message completes once: a repeated
    /// completion keeps the first time; one with retries or holds left completes when the last of
    /// them ends. Each message's slices are read once, for what is open and for their sums: three
    /// index scans a message were a quarter of the pages of a chat line's completion (issue #47).
    static func completeIfLastSlices(_ conn: PostgresConnection, _ ids: [Int64], state: MessageState, now: Int64)
        throws
    {
        try conn.run(
            "SELECT id FROM messages WHERE id = ANY(\(PostgresArray.int(ids))::bigint[]) ORDER BY id FOR UPDATE")
        try conn.run(
            """
            UPDATE messages m SET state = \(state.rawValue),
                completed_at = CASE WHEN m.queued + m.sending + m.held + s.unfinished = 0
                    THEN coalesce(m.completed_at, \(now)) ELSE m.completed_at END,
                total = m.queued + m.sending + m.delivered + m.failed + m.skipped + m.held + s.outcomes
            FROM unnest(\(PostgresArray.int(ids))::bigint[]) AS f(id) CROSS JOIN LATERAL (
                SELECT coalesce(sum(queued + sending + held), 0) AS unfinished,
                    coalesce(sum(queued + sending + delivered + failed + skipped + held), 0) AS outcomes,
                    coalesce(bool_or(state = 'open'), false) AS open
                FROM message_slices WHERE message_id = f.id
            ) s
            WHERE m.id = f.id AND NOT s.open
            """)
    }

    // MARK: retries

    /// The requests the services accepted for the flushes' messages, by their ids (one
    /// statement for all; a request id met again is kept once).
    static func insertServiceRequests(_ conn: PostgresConnection, _ flushes: [MessageProgress], now: Int64) throws {
        var channels: [String] = []
        var requestIDs: [String] = []
        var messages: [Int64] = []
        for progress in flushes {
            for request in progress.serviceRequests {
                channels.append(request.channel.rawValue)
                requestIDs.append(request.requestID)
                messages.append(progress.messageID)
            }
        }
        guard !messages.isEmpty else { return }
        try conn.run(
            """
            INSERT INTO receipt_service_requests (channel, request_id, message_id, created_at)
            SELECT v.channel, v.request_id, v.message_id, \(now)
            FROM unnest(\(PostgresArray.text(channels))::text[], \(PostgresArray.text(requestIDs))::text[],
                \(PostgresArray.int(messages))::bigint[]) AS v(channel, request_id, message_id)
            ON CONFLICT (channel, request_id) DO NOTHING
            """)
    }

    /// Adds to a slice's deliveries through one channel: message, slice, channel, how many.
    static let addChannelDeliveries: SQLStatement = """
        INSERT INTO message_channel_deliveries (message_id, slice, channel, delivered)
        VALUES (\(parameter: 1), \(parameter: 2), \(parameter: 3), \(parameter: 4))
        ON CONFLICT (message_id, slice, channel)
        DO UPDATE SET delivered = message_channel_deliveries.delivered + excluded.delivered
        """

    // MARK: plumbing

    /// A row of `messageSelect`; the message's cursor is its first slice's (the only one of a
    /// message written outside the queue: slices have a cursor each,
    /// `MessageProgressSnapshot.sliceCursors`).
    static func messageRecord(_ row: PostgresRow) throws -> MessageRecord {
        try Rows.message(columns: row, cursor: try sliceCursors(row)[0] ?? 0)
    }

    static func sliceCursors(_ row: PostgresRow) throws -> [Int64: Int64] {
        try Rows.sliceCursors(row.optionalString("cursors"))
    }

    /// Adds per-reason counts of one slice, in one statement.
    static func addReasons(
        _ conn: PostgresConnection, table: String, _ messageID: Int64, _ slice: Int64, _ reasons: [String: Int]
    ) throws {
        let rows = reasons.filter { $0.value != 0 }.sorted { $0.key < $1.key }
        guard !rows.isEmpty else { return }
        try conn.run(
            """
            INSERT INTO \(raw: table) (message_id, slice, reason, count)
            SELECT \(messageID), \(slice), reason, count
            FROM unnest(\(PostgresArray.text(rows.map(\.key)))::text[], \(PostgresArray.int(rows.map { Int64($0.value) }))::bigint[])
                AS r(reason, count)
            ON CONFLICT (message_id, slice, reason) DO UPDATE SET count = \(raw: table).count + excluded.count
            """)
    }

    /// A flush's delivery rows, a few hundred per statement.
    static func insertDeliveries(
        _ conn: PostgresConnection, _ deliveries: [NewDelivery], messageID: Int64, slice: Int64, now: Int64
    ) throws {
        let columns = 14
        for chunk in deliveries.chunks(ofCount: 400) {
            var values: [String] = []
            var parameters: [PostgresValue] = []
            parameters.reserveCapacity(chunk.count * columns)
            for (index, d) in chunk.enumerated() {
                let base = index * columns
                // The device may have been deleted while its push was in flight: the row keeps its
                // token and outcome without the reference rather than failing the whole flush.
                values.append(
                    "("
                        + (1...columns).map {
                            $0 == 3 ? "(SELECT id FROM devices WHERE id = $\(base + $0)::bigint)" : "$\(base + $0)"
                        }.joined(separator: ", ") + ")")
                parameters += [
                    .int(messageID), .int(slice), PostgresValue(d.deviceID), .text(d.token),
                    .text(d.environment.rawValue), .text(d.state.rawValue), PostgresValue(d.reason),
                    PostgresValue(d.serviceMessageID), .int(Int64(d.attempts)),
                    PostgresValue(d.nextAttemptAt.map(SQLTime.milliseconds)), .int(now),
                    PostgresValue(try d.content.map { try JSONText.encode($0) }), PostgresValue(d.credentialSelector),
                    .text(d.channel.rawValue),
                ]
            }
            try conn.execute(
                """
                INSERT INTO deliveries (message_id, slice, device_id, token, environment, state, reason, service_message_id,
                    attempts, next_attempt_at, updated_at, content, credential_selector, channel)
                VALUES \(values.joined(separator: ", "))
                """, parameters)
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}

/// `PostgresArrayLiteral`s as parameters, for `unnest($1::bigint[])` and friends; a text
/// element may be NULL (an open slice end).
enum PostgresArray {
    static func int(_ values: [Int64]) -> PostgresValue { .text(PostgresArrayLiteral.integers(values)) }

    static func text(_ values: [String]) -> PostgresValue { .text(PostgresArrayLiteral.texts(values)) }

    static func text(_ values: [String?]) -> PostgresValue { .text(PostgresArrayLiteral.texts(nullable: values)) }
}
