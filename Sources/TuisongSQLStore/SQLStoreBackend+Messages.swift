import Foundation
import TuisongCore

// Message reads, a message's state changes, releasing held deliveries and the idempotency-key
// sweep, written once. The rest of `MessageStore` stays with each backend, because the
// backends count a message's outcomes in different rows (SQLite: the message's row, one writer;
// PostgreSQL: a row per slice, which several nodes write apart): creating a message (SQLite's
// group commit and record cache; PostgreSQL's key and message in one statement), progress and
// its counters, claiming retries and moving retried and held deliveries' counters, the
// dispatcher's claim and the audience pages (the hot path, each backend's fastest list form). A message read here starts with the backend's
// `sqlMessageSelect` (PostgreSQL adds its slices' counts) and ends in `Rows.message`.
extension SQLStoreBackend {
    /// Both halves spell out the `messages_pending` partial index's condition: SQLite uses a
    /// partial index only for a query that contains it, and PostgreSQL walked the primary key
    /// through the whole history without it.
    public func dispatchableMessageIDs(now: Date) async throws -> [Int64] {
        let nowMs = SQLTime.milliseconds(now)
        return try await sqlRead { db in
            let pending = db.dialect.pendingMessagesCondition
            return try db.fetchAll(
                """
                SELECT id FROM (
                    SELECT id FROM messages WHERE state IN ('queued', 'sending') AND \(raw: pending)
                    UNION ALL
                    SELECT id FROM messages
                    WHERE state = 'scheduled' AND send_at <= \(nowMs) AND \(raw: pending)) due
                ORDER BY id LIMIT 100
                """
            ).map { $0.int64(0) }
        }
    }

    public func message(id: Int64) async throws -> MessageRecord? {
        try await sqlRead { db in
            try db.fetchOne("\(raw: self.sqlMessageSelect) WHERE m.id = \(id)").map { try self.sqlMessageRecord($0) }
        }
    }

    public func message(appID: Int64, vendorMessageID: String) async throws -> MessageRecord? {
        try await sqlRead { db in
            try db.fetchOne(
                """
                \(raw: self.sqlMessageSelect) WHERE m.app_id = \(appID) AND m.vendor_message_id = \(vendorMessageID)
                ORDER BY m.id LIMIT 1
                """
            ).map { try self.sqlMessageRecord($0) }
        }
    }

    /// The message a live idempotency key names, in one statement.
    public func message(appID: Int64, idempotencyKey: String) async throws -> MessageRecord? {
        let cutoff = nowMilliseconds - Int64(IdempotencyKey.lifetime * 1000)
        return try await sqlRead { db in
            try db.fetchOne(
                """
                \(raw: self.sqlMessageSelect) WHERE m.id = (
                    SELECT message_id FROM idempotency_keys
                    WHERE app_id = \(appID) AND key = \(idempotencyKey) AND created_at > \(cutoff))
                """
            ).map { try self.sqlMessageRecord($0) }
        }
    }

    public func messages(appID: Int64?, limit: Int) async throws -> [MessageRecord] {
        let limit = min(max(limit, 1), 1000)
        return try await sqlRead { db in
            let filter: SQLQuery = appID.map { (id: Int64) -> SQLQuery in "WHERE m.app_id = \(id)" } ?? ""
            return try db.fetchAll("\(raw: self.sqlMessageSelect) \(filter) ORDER BY m.id DESC LIMIT \(limit)")
                .map { try self.sqlMessageRecord($0) }
        }
    }

    public func startMessage(id: Int64, total: Int?, at: Date) async throws -> Bool {
        try await sqlWriteStatement { db in
            try db.run(
                """
                UPDATE messages SET state = 'sending', total = coalesce(\(total), total),
                    started_at = coalesce(started_at, \(SQLTime.milliseconds(at)))
                WHERE id = \(id) AND state IN ('scheduled', 'queued', 'sending')
                """) > 0
        }
    }

    public func setExpectedTotal(id: Int64, total: Int) async throws {
        try await sqlWriteStatement { db in
            try db.run("UPDATE messages SET total = \(total) WHERE id = \(id) AND state = 'sending'")
        }
    }

    public func setMessageState(id: Int64, _ state: MessageState, at: Date) async throws {
        let completed: Int64? = (state == .completed || state == .cancelled) ? SQLTime.milliseconds(at) : nil
        try await sqlWriteStatement { db in
            try db.run(
                """
                UPDATE messages SET state = \(state.rawValue), completed_at = coalesce(\(completed), completed_at)
                WHERE id = \(id)
                """)
        }
    }

    public func cancelScheduledMessage(id: Int64, at: Date) async throws -> Bool {
        try await sqlWriteStatement { db in
            try db.run(
                """
                UPDATE messages SET state = 'cancelled', completed_at = \(SQLTime.milliseconds(at))
                WHERE id = \(id) AND state IN ('scheduled', 'queued') AND started_at IS NULL
                """) > 0
        }
    }

    /// Valid devices of the audience (of `environment` if given, whatever their channel), at
    /// most `limit`; a list audience's entries. Not the page's hot path: once per message run,
    /// and a push's emptiness check (`limit` 1, so a million-device tag is not counted).
    ///
    /// A tag is walked from its memberships, joined to its devices: as `d.id IN (SELECT …)`
    /// SQLite first copied every member of the tag into a temporary index (a million-device
    /// tag took 0.3–0.5 s, LIMIT 1 or not), and the native push answered only after it.
    public func audienceCount(
        appID: Int64, audience: Audience, environment: PushEnvironment?, upTo limit: Int?
    ) async throws -> Int {
        let filter: SQLQuery = environment.map { " AND d.environment = \($0.rawValue)" } ?? ""
        let devices: SQLQuery = "devices d"
        let selections: [(from: SQLQuery, condition: SQLQuery)]
        switch audience {
        case .all:
            selections = [(devices, "d.app_id = \(appID)")]
        case .tag(let name):
            selections = [
                (
                    "device_tags dt JOIN devices d ON d.id = dt.device_id",
                    "dt.tag_id = (SELECT id FROM tags WHERE app_id = \(appID) AND name = \(name))"
                )
            ]
        case .accounts(let accounts):
            // Distinct accounts in padded chunks (`SQLList`): the chunks' counts add up.
            selections = SQLList.chunks(accounts).map {
                (devices, "d.app_id = \(appID) AND d.im_account IN (\(SQLQuery.list($0)))")
            }
        case .allAccounts:
            selections = [(devices, "d.app_id = \(appID) AND d.im_account IS NOT NULL")]
        case .devices(let ids):
            return min(Set(ids).count, limit ?? .max)
        case .tokens(let tokens):
            return min(tokens.count, limit ?? .max)
        case .tagSelection(let selection):
            return try await sqlRead { db in
                try TagSelectionPages.count(
                    db, appID: appID, selection: selection, environment: environment, upTo: limit)
            }
        }
        guard !selections.isEmpty else { return 0 }
        return try await sqlRead { db in
            var total = 0
            for (from, condition) in selections {
                let matching: SQLQuery =
                    "SELECT 1 FROM \(from) WHERE \(condition) AND d.invalidated_at IS NULL\(filter)"
                let row: SQLRow?
                if let limit {
                    guard total < limit else { break }
                    row = try db.fetchOne("SELECT count(*) FROM (\(matching) LIMIT \(Int64(limit - total))) AS found")
                } else {
                    row = try db.fetchOne("SELECT count(*) FROM (\(matching)) AS found")
                }
                total += Int(row?.int64(0) ?? 0)
            }
            return total
        }
    }

    /// On the channels whose credentials serve an environment, as their transports declare
    /// (`ChannelCatalog.environmentChannels`): another channel's holds wait for its own credential.
    public func releaseHeldDeliveries(appID: Int64, environment: PushEnvironment, now: Date) async throws -> Int {
        var released = 0
        for channels in SQLList.chunks(ChannelCatalog.shared.environmentChannels.map { .text($0.rawValue) }) {
            released += try await sqlReleaseHeld(
                appID: appID,
                matching: "channel IN (\(SQLQuery.list(channels))) AND environment = \(environment.rawValue)", now: now)
        }
        return released
    }

    public func releaseHeldDeliveries(appID: Int64, channel: PushChannel, now: Date) async throws -> Int {
        try await sqlReleaseHeld(appID: appID, matching: "channel = \(channel.rawValue)", now: now)
    }

    public func releaseHeldDeliveries(appID: Int64, selector: String, now: Date) async throws -> Int {
        try await sqlReleaseHeld(appID: appID, matching: "credential_selector = \(selector)", now: now)
    }

    /// Answers when the database does; used by `/healthz`.
    public func ping() async throws {
        try await sqlRead { db in _ = try db.fetchAll("SELECT 1") }
    }

    /// Deliveries by channel and state, plus what the services confirmed per channel. A token
    /// no device registered has no known service: counted under none.
    public func channelCounts(messageID: Int64) async throws -> [PushChannel: DeliveryCounts] {
        try await sqlRead { db in try MessageChannelCounts.read(db, messageID: messageID) }
    }

    public func pendingDeliveries(messageID: Int64) async throws -> [PendingDeliveries] {
        try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT state, reason, count(*), min(next_attempt_at) FROM deliveries
                WHERE message_id = \(messageID) AND state IN ('queued', 'sending', 'held') GROUP BY state, reason
                ORDER BY state, reason
                """
            ).compactMap { row in
                guard let state = DeliveryState(rawValue: row.string(0)) else { return nil }
                return PendingDeliveries(
                    state: state, reason: row.optionalString(1), count: Int(row.int64(2)), until: row.optionalDate(3))
            }
        }
    }

    /// The app's messages queued or sending, up to `upTo`: the `messages_backlog_by_app` partial
    /// index, whose condition the query spells out (SQLite uses a partial index only for a query
    /// that states its condition), walks only what the app has pending.
    public func backlog(appID: Int64, upTo: Int) async throws -> Int {
        guard upTo > 0 else { return 0 }
        return try await sqlRead { db in
            let row = try db.fetchOne(
                """
                SELECT count(*) FROM (
                    SELECT 1 FROM messages WHERE state IN ('queued', 'sending') AND app_id = \(appID)
                    LIMIT \(Int64(upTo))) AS pending
                """)
            return Int(row?.int64(0) ?? 0)
        }
    }

    /// Retry rows waiting (`queued`) and rows held for want of a working credential.
    public func deliveryBacklog() async throws -> (retryQueued: Int, held: Int) {
        try await sqlRead { db in
            var retryQueued = 0
            var held = 0
            for row in try db.fetchAll(
                "SELECT state, count(*) FROM deliveries WHERE state IN ('queued', 'held') GROUP BY state")
            {
                if row.string(0) == "queued" { retryQueued = Int(row.int64(1)) } else { held = Int(row.int64(1)) }
            }
            return (retryQueued, held)
        }
    }

    public func deliveries(messageID: Int64, state: DeliveryState?, cursor: String?, limit: Int) async throws
        -> Page<DeliveryRecord>
    {
        let afterID = try cursor.map(Cursor.decode) ?? 0
        let limit = min(max(limit, 1), 1000)
        return try await sqlRead { db in
            var query: SQLQuery =
                "SELECT \(raw: Rows.deliveryColumns) FROM deliveries WHERE message_id = \(messageID) AND id > \(afterID)"
            if let state { query = query + " AND state = \(state.rawValue)" }
            var records = try db.fetchAll(query + " ORDER BY id LIMIT \(limit + 1)").map {
                try Rows.delivery(columns: $0)
            }
            var next: String?
            if records.count > limit {
                records.removeLast()
                next = records.last.map { Cursor.encode($0.id) }
            }
            return Page(items: records, nextCursor: next)
        }
    }

    public func forgetIdempotencyKeys(before: Date, limit: Int) async throws -> Int {
        try await sqlWrite { db in
            // SKIP LOCKED on PostgreSQL: nodes sweeping at once take different rows instead of
            // waiting on each other, and a key being taken over by a new message right now is
            // left alone.
            try db.run(
                """
                DELETE FROM idempotency_keys WHERE (app_id, key) IN (
                    SELECT app_id, key FROM idempotency_keys WHERE created_at < \(SQLTime.milliseconds(before))
                    ORDER BY created_at LIMIT \(max(limit, 0))\(raw: db.dialect.skipLocked))
                """)
        }
    }
}
