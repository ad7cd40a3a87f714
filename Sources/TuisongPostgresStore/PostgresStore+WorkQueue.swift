import Foundation
import Synchronization
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

/// The work queue several nodes share, the way River, Oban or graphile-worker share jobs.
///
/// A message that comes due is cut into slices (`message_slices`: audience positions
/// `(after_position, through_position]`) by whichever node sees it first, in a transaction
/// that locks the message row (`FOR UPDATE SKIP LOCKED`, so two nodes never both plan it).
/// Nodes then claim free slices, and slices whose lease ended, with `FOR UPDATE SKIP LOCKED`:
/// each claim sets `owner`, `lease_until` and increments `attempts`, which fences the claim —
/// a flush names the attempt it was claimed under and is refused once the slice was claimed
/// again. Leases are renewed with the node's heartbeat (`nodes`). All lease times are the
/// database's clock.
extension PostgresStore: WorkQueue {
    public func claimWork(now: Date, limit: Int, sliceLimit: Int, running: Set<MessageSliceKey>) async throws
        -> [WorkClaim]
    {
        keepQueueStatistics(now: now)
        // What this node claimed as it stored it comes first, without a statement; the
        // database's queue (due messages, fan-outs, work taken over, messages other nodes or
        // a full `AcceptedClaims` left queued) is looked at for the room left, and at least once
        // a pace when the accepted claims fill every pass.
        var accepted: [WorkClaim] = []
        if let acceptedClaims {
            acceptedClaims.open()
            if limit > 0, acceptedClaims.count > 0 {
                let known = claimedMessageApps.running(Set(running.map(\.messageID)))
                accepted = acceptedClaims.take(
                    limit: limit, running: Dictionary(uniqueKeysWithValues: zip(known.apps, known.counts)))
                claimedMessageApps.remember(accepted)
            }
            let lookAtQueue = lastQueueClaim.withLock { last in
                let now = ContinuousClock.now
                guard
                    accepted.count < limit
                        || last.map({ now - $0 >= max(claimPace, Self.queueLookWhileAccepted) })
                            ?? true
                else { return false }
                last = now
                return true
            }
            guard lookAtQueue else { return accepted }
        }
        do {
            let claimedFromQueue = try await claimFromQueue(
                now: now, limit: limit - accepted.count, sliceLimit: sliceLimit,
                running: running.union(accepted.map { MessageSliceKey(messageID: $0.record.id, slice: $0.slice.id) }))
            return accepted + claimedFromQueue
        } catch {
            // What was taken from memory is this node's and is sent; the queue is looked at
            // again at the next pass.
            guard !accepted.isEmpty else { throw error }
            logger.warning("claiming from the queue failed", metadata: ["error": "\(error)"])
            return accepted
        }
    }

    /// How often, at least, the database's queue is looked at while messages claimed at
    /// acceptance fill every pass (`claimPace` when longer).
    static let queueLookWhileAccepted: Duration = .milliseconds(50)

    /// Plans what came due, then claims from the database's queue (`claimWork`).
    func claimFromQueue(now: Date, limit: Int, sliceLimit: Int, running: Set<MessageSliceKey>) async throws
        -> [WorkClaim]
    {
        try await planDueMessages(now: now)
        guard limit > 0 || sliceLimit > 0 else { return [] }
        let node = nodeID
        let lease = Self.milliseconds(leaseDuration)
        let runningKeys = running.sorted { ($0.messageID, $0.slice) < ($1.messageID, $1.slice) }
        let runningMessages = PostgresArray.int(runningKeys.map(\.messageID))
        let runningApps = claimedMessageApps.running(Set(runningKeys.map(\.messageID)))
        let runningWhole = PostgresArray.int(runningKeys.filter { $0.slice == 0 }.map(\.messageID))
        let wholeLimit = max(0, limit)
        let claimable = "s.state = 'open' AND (s.owner IS NULL OR s.lease_until < \(Self.databaseNow))"
        // Slices of fan-outs whose lease ended, or that nobody took yet: walked in claim order
        // on `message_slices_open_fan_out`, which lists no chat line however long the backlog.
        let fanOut: SQLQuery = """
            SELECT s.message_id, s.slice FROM message_slices s
            JOIN messages m ON m.id = s.message_id AND m.state = 'sending'
            WHERE s.state = 'open' AND (s.slice <> 0 OR s.through_position IS NOT NULL)
                AND (s.owner IS NULL OR s.lease_until < \(raw: Self.databaseNow))
                AND (s.message_id, s.slice) NOT IN (
                    SELECT * FROM unnest(\(runningMessages)::bigint[], \(PostgresArray.int(runningKeys.map(\.slice)))::bigint[]))
            """
        // Messages sent whole are taken fairly across apps, so one app's chat backlog does not
        // hold another app's messages back: each app's oldest claimable ones (from
        // `messages_backlog_by_app`, in id order), an app's n-th getting turn n plus the runs
        // of that app this node has going; the lowest turns are claimed, oldest first among
        // equal turns. (Slices of fan-outs are claimed apart, below, and never wait behind
        // these.) The runs per app are counted here from what this node claimed
        // (`ClaimedMessageApps`); only a running message it does not know is read: reading
        // every running message back by key cost each claim four index pages a message in
        // flight (400 of a claim's 500 at 800 chat lines a second, 150 ms away; issue #47).
        //
        // A message's one slice is looked up by a scalar subquery, which PostgreSQL runs once
        // per message with the message's id as its key. Written as a join, the planner chose a
        // nested loop over every open slice for each message whenever the statistics were from
        // before a burst (an empty queue): 0.3–2.4 s a claim with a few thousand chat lines
        // queued, one node's chat down to ~300 messages/s (issue #47).
        // One statement in one round trip (`writeStatement`), with its generic plan
        // (`runWithGenericPlan`): the values change its work, not its plan.
        let claimed = try await writeStatement { conn in
            try conn.runWithGenericPlan(
                """
                WITH running_by_app AS (
                    SELECT app_id, sum(running)::bigint AS running FROM (
                        SELECT * FROM unnest(\(PostgresArray.int(runningApps.apps))::bigint[],
                            \(PostgresArray.int(runningApps.counts))::bigint[]) AS known(app_id, running)
                        UNION ALL
                        SELECT m.app_id, count(*) FROM messages m
                        WHERE m.id = ANY(\(PostgresArray.int(runningApps.unknown))::bigint[]) GROUP BY m.app_id
                    ) r GROUP BY app_id
                ), whole_turns AS (
                    SELECT w.message_id,
                        coalesce(r.running, 0) + row_number() OVER (PARTITION BY w.app_id ORDER BY w.message_id) AS turn
                    FROM apps a CROSS JOIN LATERAL (
                        SELECT m.id AS message_id, m.app_id FROM messages m
                        WHERE m.state IN ('queued', 'sending') AND m.state = 'sending' AND m.app_id = a.id
                            AND m.id NOT IN (SELECT unnest(\(runningWhole)::bigint[]))
                            AND (SELECT s.through_position IS NULL AND \(raw: claimable) FROM message_slices s
                                WHERE s.message_id = m.id AND s.slice = 0)
                        ORDER BY m.id LIMIT \(wholeLimit)
                    ) w
                    LEFT JOIN running_by_app r ON r.app_id = w.app_id
                ), whole AS (
                    SELECT s.message_id, s.slice FROM message_slices s
                    WHERE s.message_id = ANY(ARRAY(
                            SELECT message_id FROM whole_turns ORDER BY turn, message_id LIMIT \(wholeLimit)))
                        AND s.slice = 0 AND \(raw: claimable)
                    FOR UPDATE OF s SKIP LOCKED
                ), taken_over AS (
                    \(fanOut) AND s.owner IS NOT NULL
                    ORDER BY s.message_id, s.slice LIMIT \(wholeLimit) FOR UPDATE OF s SKIP LOCKED
                ), fresh AS (
                    \(fanOut) AND s.owner IS NULL
                    ORDER BY s.message_id, s.slice LIMIT \(max(0, sliceLimit)) FOR UPDATE OF s SKIP LOCKED
                ), picked AS (
                    SELECT * FROM whole UNION ALL SELECT * FROM taken_over UNION ALL SELECT * FROM fresh
                )
                UPDATE message_slices s SET owner = \(node), lease_until = \(raw: Self.databaseNow) + \(lease),
                    attempts = s.attempts + 1
                FROM picked JOIN messages m ON m.id = picked.message_id
                WHERE s.message_id = picked.message_id AND s.slice = picked.slice
                RETURNING s.message_id, s.slice, s.cursor, s.through_position, s.attempts, m.started_at, m.total
                """
            ).rows
        }
        guard !claimed.isEmpty else { return [] }
        // Measured from before the claim: the local estimate ends no later than the database's.
        let leaseUntil = now.addingTimeInterval(Double(lease) / 1000)
        let records = try await claimedRecords(claimed)
        var claims: [WorkClaim] = []
        for row in claimed.sorted(by: {
            ($0.int64("message_id"), $0.int64("slice")) < ($1.int64("message_id"), $1.int64("slice"))
        }) {
            let messageID = row.int64("message_id")
            let slice = WorkSlice(
                id: row.int64("slice"), after: row.int64("cursor"), through: row.optionalInt64("through_position"),
                fence: row.int64("attempts"), leaseUntil: leaseUntil)
            guard let record = records[messageID] else {
                try? await releaseSlice(MessageSliceKey(messageID: messageID, slice: slice.id), fence: slice.fence)
                continue
            }
            claims.append(WorkClaim(record: record, slice: slice))
        }
        claimedMessageApps.remember(claims)
        return claims
    }

    /// The records of the claimed slices' messages. A message this node created, claimed for
    /// the first time (attempt 1) as one slice from the start (slice 0 up to the audience's
    /// end), is as it was created but for what planning set, which the claim returned: its
    /// state (sending: only sending messages are claimed), start and total. Nothing was counted
    /// for it yet: outcomes are flushed only under a claim, and retry and held rows come from
    /// outcomes. Every other message is read, in one query.
    func claimedRecords(_ claimed: [PostgresRow]) async throws -> [Int64: MessageRecord] {
        let created = createdRecords.take(claimed.map { $0.int64("message_id") })
        var records: [Int64: MessageRecord] = [:]
        var unknown: Set<Int64> = []
        for row in claimed {
            let messageID = row.int64("message_id")
            guard var record = created[messageID], row.int64("slice") == 0, row.int64("attempts") == 1,
                row.optionalInt64("through_position") == nil, let startedAt = row.optionalInt64("started_at")
            else {
                unknown.insert(messageID)
                continue
            }
            record.state = .sending
            record.startedAt = SQLTime.date(startedAt)
            record.total = row.optionalInt64("total").map { Int($0) }
            record.cursor = row.int64("cursor")
            records[messageID] = record
        }
        guard !unknown.isEmpty else { return records }
        return records.merging(try await messages(ids: Array(unknown))) { _, read in read }
    }

    /// Messages by id, in one query.
    func messages(ids: [Int64]) async throws -> [Int64: MessageRecord] {
        guard !ids.isEmpty else { return [:] }
        return try await read { conn in
            var records: [Int64: MessageRecord] = [:]
            for row in try conn.run("\(raw: Self.messageSelect) WHERE m.id = ANY(\(PostgresArray.int(ids))::bigint[])")
                .rows
            {
                let record = try Self.messageRecord(row)
                records[record.id] = record
            }
            return records
        }
    }

    /// Cuts messages that came due into slices and marks them sending. The audience is counted
    /// and its position range read before the transaction; the transaction locks the message
    /// row, skipping one another node is planning, and plans it only if nobody has.
    ///
    /// Fair across apps, as the claim is: each app's queued messages oldest first (from
    /// `messages_backlog_by_app`), an app's n-th at turn n, the lowest turns planned first, so
    /// another app's push is planned in the next pass however many chat lines one app queued
    /// before it. Due scheduled messages, and messages left sending without slices (from before
    /// the work queue), come first. Those left sending are looked for only until a
    /// pass finds none: nothing makes more of them, and looking walks every sending message (the
    /// whole backlog under a chat load, 10–20 ms a pass at 3,000). Each condition spells out its
    /// partial index's: without it, PostgreSQL walked the primary key through the whole history
    /// (0.6 s a pass beside 300,000 finished messages).
    func planDueMessages(now: Date) async throws {
        let nowMs = SQLTime.milliseconds(now)
        let lookForSending = sendingWithoutSlicesMayRemain.load(ordering: .relaxed)
        let other: SQLQuery =
            lookForSending
            ? "(m.state = 'sending' OR (m.state = 'scheduled' AND m.send_at <= \(nowMs)))"
            : "m.state = 'scheduled' AND m.send_at <= \(nowMs)"
        let due = try await read { conn in
            try conn.run(
                """
                WITH queued AS (
                    SELECT q.id, row_number() OVER (PARTITION BY a.id ORDER BY q.id) AS turn
                    FROM apps a CROSS JOIN LATERAL (
                        SELECT m.id FROM messages m
                        WHERE m.state IN ('queued', 'sending') AND m.state = 'queued' AND m.app_id = a.id
                        ORDER BY m.id LIMIT \(Self.planBatch)
                    ) q
                ), other AS (
                    SELECT m.id, 0 AS turn FROM messages m
                    WHERE m.state IN ('scheduled', 'queued', 'sending') AND \(other)
                        AND NOT EXISTS (SELECT 1 FROM message_slices s WHERE s.message_id = m.id)
                    ORDER BY m.id LIMIT \(Self.planBatch)
                ), picked AS (
                    SELECT id, turn FROM queued UNION ALL SELECT id, turn FROM other
                    ORDER BY turn, id LIMIT \(Self.planBatch)
                )
                SELECT m.id, m.app_id, m.state, m.audience FROM picked JOIN messages m ON m.id = picked.id
                ORDER BY picked.turn, m.id
                """
            ).rows
        }
        if lookForSending, !due.contains(where: { $0.string("state") == "sending" }) {
            sendingWithoutSlicesMayRemain.store(false, ordering: .relaxed)
        }
        var whole: [(id: Int64, after: Int64, total: Int?)] = []
        var cut: [(id: Int64, appID: Int64, audience: Audience)] = []
        for row in due {
            let messageID = row.int64("id")
            let audience = try JSONText.decode(Audience.self, row.string("audience"))
            let small = Self.wholeSlice(of: audience, sliceSize: sliceSize)
            // A message left sending without slices (from before the work queue) goes the long way.
            if let small, row.string("state") != "sending" {
                whole.append((messageID, small.after, small.total))
            } else if cut.count < Self.cutBatch {
                cut.append((messageID, row.int64("app_id"), audience))
            }
        }
        if !whole.isEmpty { try await planWhole(whole, nowMs: nowMs) }
        for message in cut {
            let total: Int?
            switch message.audience {
            case .tokens(let tokens): total = tokens.count
            case .devices(let ids): total = Set(ids).count
            default: total = nil
            }
            let range = try await positionRange(appID: message.appID, audience: message.audience)
            let slices = Self.slices(range: range, size: sliceSize)
            try await plan(message.id, slices: slices, total: total, nowMs: nowMs)
        }
    }

    /// The one slice of a message sent whole, from the position before its audience's first
    /// (`after`), with the audience's size when it is known without a read; nil for an audience
    /// cut in slices. Token and id lists are counted here; other audiences by the run of the
    /// first slice, beside sending (a count walks the whole audience: the first device need not
    /// wait).
    static func wholeSlice(of audience: Audience, sliceSize: Int) -> (after: Int64, total: Int?)? {
        switch audience {
        case .tokens(let tokens) where tokens.count <= sliceSize:
            return (0, tokens.count)
        case .devices(let ids) where ids.count <= sliceSize:
            return ((ids.min() ?? 1) - 1, Set(ids).count)
        case .accounts(let accounts) where accounts.count <= sliceSize:
            // A few accounts' devices: one slice over the whole id range, not the app's range
            // cut in many slices that would each be claimed and read for nothing.
            return (0, nil)
        default:
            return nil
        }
    }

    /// Messages due and not yet planned, looked at per claim.
    static let planBatch = 512
    /// Messages cut into slices per claim (each reads its audience's id range first).
    static let cutBatch = 8

    /// Plans many small messages as one slice each, in one statement: each message row is locked
    /// (skipping one another node is planning) and planned only while it is still due, which a
    /// planned message (now sending) no longer is. The rows are locked by `m.id = ANY(…)`, not
    /// by a join with the unnested batch, and the statement runs unprepared: a generic plan
    /// compared every row of the batch with every other (17 ms for 172; `lockSlicesInOrder`).
    func planWhole(_ messages: [(id: Int64, after: Int64, total: Int?)], nowMs: Int64) async throws {
        try await writeStatement { conn in
            try conn.runUnprepared(
                """
                WITH v AS (
                    SELECT * FROM unnest(\(PostgresArray.int(messages.map(\.id)))::bigint[],
                        \(PostgresArray.int(messages.map(\.after)))::bigint[],
                        \(PostgresArray.text(messages.map { $0.total.map(String.init) }))::text[]) AS v(id, after_position, total)
                ), locked AS (
                    SELECT m.id FROM messages m
                    WHERE m.id = ANY(\(PostgresArray.int(messages.map(\.id)))::bigint[])
                        AND (m.state = 'queued' OR (m.state = 'scheduled' AND m.send_at <= \(nowMs)))
                    FOR UPDATE OF m SKIP LOCKED
                ), sliced AS (
                    INSERT INTO message_slices (message_id, slice, after_position, through_position, cursor, updated_at)
                    SELECT v.id, 0, v.after_position, NULL, v.after_position, \(nowMs) FROM v JOIN locked USING (id)
                    ON CONFLICT DO NOTHING
                )
                UPDATE messages m SET state = 'sending', started_at = coalesce(m.started_at, \(nowMs)),
                    total = coalesce(v.total::bigint, m.total)
                FROM v JOIN locked USING (id) WHERE m.id = v.id
                """)
        }
    }

    /// Cuts one message into `slices` and marks it sending, unless another node did first.
    func plan(_ messageID: Int64, slices: [(after: Int64, through: Int64?)], total: Int?, nowMs: Int64) async throws {
        try await write { conn in
            guard
                let locked = try conn.run(
                    "SELECT state, send_at FROM messages WHERE id = \(messageID) FOR UPDATE SKIP LOCKED"
                )
                .rows.first
            else { return }
            let state = locked.string("state")
            let due =
                state == "queued" || state == "sending"
                || (state == "scheduled" && (locked.optionalInt64("send_at") ?? 0) <= nowMs)
            guard due else { return }
            let planned =
                try conn.run("SELECT 1 FROM message_slices WHERE message_id = \(messageID) LIMIT 1").rows.isEmpty
                == false
            guard !planned else { return }
            try conn.run(
                """
                INSERT INTO message_slices (message_id, slice, after_position, through_position, cursor, updated_at)
                SELECT \(messageID), n - 1, after_position, through_position, after_position, \(nowMs)
                FROM unnest(\(PostgresArray.int(slices.map(\.after)))::bigint[],
                    \(PostgresArray.text(slices.map { $0.through.map(String.init) }))::bigint[])
                    WITH ORDINALITY AS v(after_position, through_position, n)
                """)
            try conn.run(
                """
                UPDATE messages SET state = 'sending', started_at = coalesce(started_at, \(nowMs)),
                    total = coalesce(\(total), total)
                WHERE id = \(messageID)
                """)
        }
    }

    /// The audience's positions lie in `(lower, upper]`, with at most about `count` of them:
    /// token indexes for a token list, device ids otherwise (the app's whole id range: the
    /// audience is read lazily, so a device registered meanwhile still falls in the open last
    /// slice).
    func positionRange(appID: Int64, audience: Audience) async throws -> (lower: Int64, upper: Int64, count: Int) {
        switch audience {
        case .tokens(let tokens):
            return (0, Int64(tokens.count), tokens.count)
        case .devices(let ids):
            guard let low = ids.min(), let high = ids.max() else { return (0, 0, 0) }
            return (low - 1, high, ids.count)
        case .tag, .all, .accounts, .allAccounts, .tagSelection:
            // Both ends from the index; the id range stands for the count (ids are dense enough
            // for cutting slices, and no count walks 200,000 rows before the first send).
            return try await read { conn in
                let row = try conn.run(
                    """
                    SELECT (SELECT min(id) FROM devices WHERE app_id = \(appID)) AS low,
                        (SELECT max(id) FROM devices WHERE app_id = \(appID)) AS high
                    """
                ).rows.first
                guard let row, let low = row.optionalInt64("low"), let high = row.optionalInt64("high") else {
                    return (0, 0, 0)
                }
                return (low - 1, high, Int(high - low + 1))
            }
        }
    }

    /// Equal position ranges, about `size` positions each; the last is open-ended.
    static func slices(range: (lower: Int64, upper: Int64, count: Int), size: Int) -> [(after: Int64, through: Int64?)]
    {
        let count = max(1, min(4096, (range.count + size - 1) / max(1, size)))
        let width = max(1, (range.upper - range.lower + Int64(count) - 1) / Int64(count))
        return (0..<count).map { index in
            let after = range.lower + Int64(index) * width
            return (after, index == count - 1 ? nil : after + width)
        }
    }

    public func renewLeases(_ slices: [MessageSliceKey: Int64], now: Date) async throws -> (
        held: Set<MessageSliceKey>, until: Date?
    ) {
        let node = nodeID
        let lease = Self.milliseconds(leaseDuration)
        // The claims waiting for this node's dispatcher keep their leases as its runs do.
        let waiting = acceptedClaims?.fences ?? [:]
        let slices = slices.merging(waiting) { running, _ in running }
        let keys = slices.keys.sorted { ($0.messageID, $0.slice) < ($1.messageID, $1.slice) }
        // Two transactions: the node's heartbeat with its retries' leases, then its slices'. In one,
        // the renewal held delivery rows while it waited for slice rows, and a writer that takes
        // slices before deliveries (a batched flush, a held delivery's expiry) closed a cycle:
        // PostgreSQL broke it (40P01) and the renewal failed (seen in the cluster test after the
        // database's restart). The two leases are independent; neither needs the other's rows.
        try await write { conn in
            try conn.run(
                """
                INSERT INTO nodes (id, started_at, heartbeat_at, host)
                VALUES (\(node), \(raw: Self.databaseNow), \(raw: Self.databaseNow), \(ProcessInfo.processInfo.hostName))
                ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at
                """)
            // Nodes gone for a day are forgotten (every start is a new node).
            try conn.run("DELETE FROM nodes WHERE heartbeat_at < \(raw: Self.databaseNow) - \(Self.forgetNodesAfter)")
            // Retries this node is sending keep their lease too, locked in id order as the retry
            // worker writes their outcomes (`applyDeliveryUpdates`): the update alone took them in
            // its index's order (lease, then place in the table), and the two deadlocked (40P01,
            // the cluster test after the database's restart).
            try conn.run(
                """
                UPDATE deliveries d SET lease_until = \(raw: Self.databaseNow) + \(lease)
                FROM (
                    SELECT id FROM deliveries
                    WHERE state = 'sending' AND owner = \(node) AND lease_until > \(raw: Self.databaseNow)
                    ORDER BY id FOR UPDATE
                ) mine
                WHERE d.id = mine.id
                """)
        }
        let held = try await write { conn -> Set<MessageSliceKey> in
            guard !keys.isEmpty else { return [] }
            // In the order a batched flush locks them (`lockSlicesInOrder`). A lease that ended is
            // taken up again while no other node claimed the slice since (the claim number is
            // unchanged): a node back from an outage longer than its lease goes on sending.
            // Unprepared, with `s.message_id = ANY(…)`, no nested loops: linear in the batch
            // (`lockSlicesInOrder`).
            try Self.lockSlicesInOrder(conn, keys)
            let rows = try Self.joiningBatch(
                conn,
                """
                UPDATE message_slices s SET lease_until = \(raw: Self.databaseNow) + \(lease)
                FROM unnest(\(PostgresArray.int(keys.map(\.messageID)))::bigint[], \(PostgresArray.int(keys.map(\.slice)))::bigint[],
                    \(PostgresArray.int(keys.map { slices[$0] ?? 0 }))::bigint[]) AS v(message_id, slice, attempts)
                WHERE s.message_id = v.message_id AND s.slice = v.slice AND s.attempts = v.attempts
                    AND s.owner = \(node) AND s.state = 'open'
                    AND s.message_id = ANY(\(PostgresArray.int(keys.map(\.messageID)))::bigint[])
                RETURNING s.message_id, s.slice
                """
            ).rows
            return Set(rows.map { MessageSliceKey(messageID: $0.int64("message_id"), slice: $0.int64("slice")) })
        }
        let until = now.addingTimeInterval(Double(lease) / 1000)
        if !waiting.isEmpty { acceptedClaims?.renewed(asked: Set(waiting.keys), held: held, until: until) }
        return (held, until)
    }

    /// How long a node's row outlives its last heartbeat, in milliseconds.
    static let forgetNodesAfter: Int64 = 24 * 3600 * 1000

    /// No more claims at acceptance; the waiting ones go back to the queue, so another node may
    /// take them at once.
    public func dispatcherStopped() async {
        guard let waiting = acceptedClaims?.close(), !waiting.isEmpty else { return }
        let node = nodeID
        do {
            try await write { conn in
                try conn.run(
                    """
                    UPDATE message_slices SET owner = NULL, lease_until = NULL
                    WHERE message_id = ANY(\(PostgresArray.int(waiting.map(\.record.id)))::bigint[]) AND slice = 0
                        AND owner = \(node) AND attempts = 1 AND state = 'open'
                    """)
            }
        } catch {
            logger.warning(
                "giving back messages claimed at acceptance failed; they are taken over when their lease ends",
                metadata: ["messages": "\(waiting.count)", "error": "\(error)"])
        }
    }

    public func releaseSlice(_ key: MessageSliceKey, fence: Int64) async throws {
        let node = nodeID
        try await write { conn in
            try conn.run(
                """
                UPDATE message_slices SET owner = NULL, lease_until = NULL
                WHERE message_id = \(key.messageID) AND slice = \(key.slice) AND owner = \(node) AND attempts = \(fence)
                    AND state = 'open'
                """)
        }
    }

    /// Nodes whose heartbeat is younger than a lease (this one included, at least 1).
    public func liveNodeCount() async throws -> Int {
        let lease = Self.milliseconds(leaseDuration)
        let count = try await read { conn in
            try conn.run("SELECT count(*) AS n FROM nodes WHERE heartbeat_at > \(raw: Self.databaseNow) - \(lease)")
                .rows.first?.int64("n") ?? 0
        }
        return max(1, Int(count))
    }
}

/// The app of each message this node claimed and may still be sending (`claimWork`): a claim
/// counts its runs per app from here instead of reading every running message back.
final class ClaimedMessageApps: Sendable {
    private let apps = Mutex<[Int64: Int64]>([:])

    /// The running messages (distinct ids) counted per app, apps in order, and those whose app
    /// this node does not know (claimed before, by another store); forgets messages no longer
    /// running.
    func running(_ messages: Set<Int64>) -> (apps: [Int64], counts: [Int64], unknown: [Int64]) {
        apps.withLock { known in
            known = known.filter { messages.contains($0.key) }
            var counts: [Int64: Int64] = [:]
            var unknown: [Int64] = []
            for message in messages {
                if let app = known[message] { counts[app, default: 0] += 1 } else { unknown.append(message) }
            }
            let byApp = counts.sorted { $0.key < $1.key }
            return (byApp.map(\.key), byApp.map(\.value), unknown.sorted())
        }
    }

    func remember(_ claims: [WorkClaim]) {
        apps.withLock { known in
            for claim in claims { known[claim.record.id] = claim.record.appID }
        }
    }
}
