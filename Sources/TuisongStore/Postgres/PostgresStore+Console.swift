import Foundation
import TuisongCore
import TuisongPostgres

// Read-only queries for the admin console, as on SQLite (SQLiteStore+Console.swift): each one
// bounded by a LIMIT or an index range. A message's counts here are its own row's (its retries)
// plus its slices' (`message_slices`), and the per-reason tables have a row per slice: both are
// summed.
extension PostgresStore: ConsoleStore {
    public func searchDevices(appID: Int64, query: DeviceQuery, cursor: String?, limit: Int) async throws
        -> Page<Device>
    {
        let pageSize = min(max(limit, 1), 1000)
        switch query {
        case .tag(let tag):
            return try await devices(appID: appID, tag: tag, cursor: cursor, limit: pageSize)
        case .tokenPrefix(let rawPrefix):
            // As on SQLite: every token with the prefix sorts in [prefix, prefix + DEL) byte-wise.
            // `COLLATE "C"` makes the comparison and the order byte-wise whatever the database's
            // collation (SQLite compares bytes).
            let prefix =
                rawPrefix.lowercased().utf8.allSatisfy(Self.isHexDigit) ? rawPrefix.lowercased() : rawPrefix
            guard prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
                prefix.utf8.count <= DeviceToken.maximumOpaqueLength
            else {
                return Page(items: [], nextCursor: nil)
            }
            let after = try cursor.map(TokenCursor.decode) ?? ""
            let devices = try await read { conn in
                try conn.run(
                    """
                    SELECT \(PostgresStore.deviceColumns) FROM devices
                    WHERE app_id = $1 AND token COLLATE "C" >= $2 AND token COLLATE "C" < $3 AND token COLLATE "C" > $4
                    ORDER BY token COLLATE "C" LIMIT $5
                    """,
                    [.int(appID), .text(prefix), .text(prefix + "\u{7F}"), .text(after), .int(Int64(pageSize + 1))]
                ).rows.map(PostgresStore.device)
            }
            return Self.page(devices, pageSize) { TokenCursor.encode($0.token) }
        case .user(let user):
            let afterID = try cursor.map(Cursor.decode) ?? 0
            let devices = try await read { conn in
                try conn.run(
                    """
                    SELECT \(PostgresStore.deviceColumns) FROM devices
                    WHERE app_id = $1 AND ("user" = $2 OR im_account = $2) AND id > $3
                    ORDER BY id LIMIT $4
                    """, [.int(appID), .text(user), .int(afterID), .int(Int64(pageSize + 1))]
                ).rows.map(PostgresStore.device)
            }
            return Self.page(devices, pageSize) { Cursor.encode($0.id) }
        case .all:
            let afterID = try cursor.map(Cursor.decode) ?? 0
            let devices = try await read { conn in
                try conn.run(
                    "SELECT \(PostgresStore.deviceColumns) FROM devices WHERE app_id = $1 AND id > $2 ORDER BY id LIMIT $3",
                    [.int(appID), .int(afterID), .int(Int64(pageSize + 1))]
                ).rows.map(PostgresStore.device)
            }
            return Self.page(devices, pageSize) { Cursor.encode($0.id) }
        }
    }

    /// Every device of the app, valid or invalidated.
    public func deviceCount(appID: Int64) async throws -> Int {
        try await read { conn in
            Int(
                try conn.run("SELECT count(*) FROM devices WHERE app_id = $1", [.int(appID)]).rows.first?
                    .int64(at: 0) ?? 0)
        }
    }

    public func tagUsage(appID: Int64, limit: Int) async throws -> [TagUsage] {
        try await read { conn in
            try conn.run(
                """
                SELECT t.name, (SELECT count(*) FROM device_tags dt WHERE dt.tag_id = t.id)
                FROM tags t WHERE t.app_id = $1 ORDER BY t.name COLLATE "C" LIMIT $2
                """, [.int(appID), .int(Int64(min(max(limit, 1), 10_000)))]
            ).rows.map { TagUsage(name: $0[0].string ?? "", devices: Int($0.int64(at: 1))) }
        }
    }

    public func deliveries(deviceID: Int64, limit: Int) async throws -> [DeliveryRecord] {
        try await read { conn in
            try conn.run(
                "SELECT \(DeliveryRows.columns) FROM deliveries WHERE device_id = $1 ORDER BY id DESC LIMIT $2",
                [.int(deviceID), .int(Int64(min(max(limit, 1), 1000)))]
            ).rows.map(DeliveryRows.record)
        }
    }

    public func messageActivity(since: Date, scanLimit: Int) async throws -> [MessageActivity] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await read { conn in
            // The newest messages by id (a bounded scan of the primary key), plus every message
            // still sending however old (the messages_pending index); each with its slices' counts
            // added to its own.
            try conn.run(
                """
                SELECT m.id, m.app_id, m.state, m.created_at, m.started_at, m.completed_at, m.total,
                    m.queued + coalesce(s.queued, 0), m.sending + coalesce(s.sending, 0),
                    m.delivered + coalesce(s.delivered, 0), m.failed + coalesce(s.failed, 0),
                    m.skipped + coalesce(s.skipped, 0), m.held + coalesce(s.held, 0)
                FROM messages m
                LEFT JOIN LATERAL (
                    SELECT sum(queued)::bigint AS queued, sum(sending)::bigint AS sending,
                        sum(delivered)::bigint AS delivered, sum(failed)::bigint AS failed,
                        sum(skipped)::bigint AS skipped, sum(held)::bigint AS held
                    FROM message_slices WHERE message_id = m.id) s ON true
                WHERE m.id IN (
                    SELECT id FROM (SELECT id, state, completed_at FROM messages ORDER BY id DESC LIMIT $1) newest
                    WHERE state = 'sending' OR completed_at >= $2
                    UNION
                    SELECT id FROM messages WHERE state = 'sending')
                ORDER BY m.id DESC
                """, [.int(Int64(min(max(scanLimit, 1), 100_000))), .int(sinceMilliseconds)]
            ).rows.map(Self.activity)
        }
    }

    public func failureReasons(since: Date, scanLimit: Int) async throws -> [String: Int] {
        try await reasonTotals(in: "message_failures", since: since, scanLimit: scanLimit)
    }

    public func skipReasons(since: Date, scanLimit: Int) async throws -> [String: Int] {
        try await reasonTotals(in: "message_skips", since: since, scanLimit: scanLimit)
    }

    public func failureReasonsByChannel(since: Date, scanLimit: Int) async throws -> [ChannelReasonCount] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await read { conn in
            try conn.run(
                """
                SELECT d.channel, d.reason, count(*)::bigint AS n FROM deliveries d
                WHERE d.state = 'failed' AND d.reason IS NOT NULL AND d.message_id IN (
                    SELECT id FROM (SELECT id, created_at FROM messages ORDER BY id DESC LIMIT $1) newest
                    WHERE created_at >= $2)
                GROUP BY d.channel, d.reason
                """, [.int(Int64(min(max(scanLimit, 1), 100_000))), .int(sinceMilliseconds)]
            ).rows.compactMap { row -> ChannelReasonCount? in
                guard let channel = PushChannel(rawValue: row.string("channel")) else { return nil }
                return ChannelReasonCount(channel: channel, reason: row.string("reason"), count: Int(row.int64("n")))
            }.sorted { ($1.count, $0.channel.rawValue, $0.reason) < ($0.count, $1.channel.rawValue, $1.reason) }
        }
    }

    /// Totals by reason (over every slice) of the newest `scanLimit` messages created since
    /// `since`. `table` is one of the two reason tables, never input.
    private func reasonTotals(in table: String, since: Date, scanLimit: Int) async throws -> [String: Int] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await read { conn in
            let rows = try conn.run(
                """
                SELECT r.reason, sum(r.count)::bigint FROM \(table) r
                WHERE r.message_id IN (
                    SELECT id FROM (SELECT id, created_at FROM messages ORDER BY id DESC LIMIT $1) newest
                    WHERE created_at >= $2)
                GROUP BY r.reason
                """, [.int(Int64(min(max(scanLimit, 1), 100_000))), .int(sinceMilliseconds)]
            ).rows
            var result: [String: Int] = [:]
            for row in rows {
                let count = Int(row.int64(at: 1))
                if count > 0, let reason = row[0].string { result[reason] = count }
            }
            return result
        }
    }

    // MARK: plumbing

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    /// `items` holds up to `pageSize + 1` rows; the extra one only says a next page exists.
    private static func page(_ items: [Device], _ pageSize: Int, cursor: (Device) -> String) -> Page<Device> {
        guard items.count > pageSize else { return Page(items: items, nextCursor: nil) }
        let page = Array(items.prefix(pageSize))
        return Page(items: page, nextCursor: cursor(page[page.count - 1]))
    }

    private static func activity(_ row: PostgresRow) throws -> MessageActivity {
        let stateName = row[2].string ?? ""
        guard let state = MessageState(rawValue: stateName) else {
            throw StoreError(.unavailable, "messages.state holds unknown value \(stateName)")
        }
        var counts = DeliveryCounts()
        counts.queued = Int(row.int64(at: 7))
        counts.sending = Int(row.int64(at: 8))
        counts.delivered = Int(row.int64(at: 9))
        counts.failed = Int(row.int64(at: 10))
        counts.skipped = Int(row.int64(at: 11))
        counts.held = Int(row.int64(at: 12))
        return MessageActivity(
            id: row.int64(at: 0), appID: row.int64(at: 1), state: state, createdAt: SQLTime.date(row.int64(at: 3)),
            startedAt: row[4].int64.map(SQLTime.date), completedAt: row[5].int64.map(SQLTime.date),
            total: row[6].int64.map { Int($0) }, counts: counts)
    }
}

/// Delivery rows as the listings read them (SQLite's `deliveryColumns`/`deliveryRecord`).
enum DeliveryRows {
    static let columns = """
        id, message_id, device_id, token, environment, state, reason, apns_id, attempts, next_attempt_at, updated_at, \
        content, credential_selector, channel
        """

    static func record(_ row: PostgresRow) throws -> DeliveryRecord {
        guard let environment = row[4].string.flatMap(APNsEnvironment.init(rawValue:)),
            let state = row[5].string.flatMap(DeliveryState.init(rawValue:)),
            let channel = row[13].string.flatMap(PushChannel.init(rawValue:))
        else { throw StoreError(.unavailable, "deliveries row \(row.int64(at: 0)) holds unknown values") }
        return DeliveryRecord(
            id: row.int64(at: 0), messageID: row.int64(at: 1), deviceID: row[2].int64, token: row[3].string ?? "",
            environment: environment, state: state, reason: row[6].string, apnsID: row[7].string,
            attempts: Int(row.int64(at: 8)), nextAttemptAt: row[9].int64.map(SQLTime.date),
            updatedAt: SQLTime.date(row.int64(at: 10)),
            content: try row[11].string.map { try JSONText.decode(PushContent.self, $0) },
            credentialSelector: row[12].string,
            channel: channel)
    }
}
