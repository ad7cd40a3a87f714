import Foundation
import GRDB
import TuisongCore

// Read-only queries for the admin console. Each one is bounded by a LIMIT or by an index
// range, so an operator's click never scans a large table.
extension SQLiteStore: ConsoleStore {
    public func searchDevices(appID: Int64, query: DeviceQuery, cursor: String?, limit: Int) async throws
        -> Page<Device>
    {
        let pageSize = min(max(limit, 1), 1000)
        switch query {
        case .tag(let tag):
            return try await devices(appID: appID, tag: tag, cursor: cursor, limit: pageSize)
        case .tokenPrefix(let rawPrefix):
            // Tokens are ASCII below DEL (APNs's lower-case hex, the Android services'
            // letters, digits and -_.:~), so every token with the prefix sorts in
            // [prefix, prefix + DEL): one range of the UNIQUE (app_id, token) index. A hex
            // prefix is an APNs token's, stored lower-case.
            let prefix = rawPrefix.lowercased().utf8.allSatisfy(Self.isHexDigit) ? rawPrefix.lowercased() : rawPrefix
            guard prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
                prefix.utf8.count <= DeviceToken.maximumOpaqueLength
            else {
                return Page(items: [], nextCursor: nil)
            }
            let after = try cursor.map(TokenCursor.decode) ?? ""
            let devices = try await readOneStatement { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT \(Rows.deviceColumns) FROM devices
                        WHERE app_id = ? AND token >= ? AND token < ? AND token > ?
                        ORDER BY token LIMIT ?
                        """,
                    arguments: [appID, prefix, prefix + "\u{7F}", after, pageSize + 1]
                ).map(Rows.device)
            }
            return Self.page(devices, pageSize) { TokenCursor.encode($0.token) }
        case .user(let user):
            let afterID = try cursor.map(Cursor.decode) ?? 0
            let devices = try await readOneStatement { db in
                // Two index ranges (devices_by_user, devices_by_im_account) merged by SQLite.
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT \(Rows.deviceColumns) FROM devices
                        WHERE app_id = ?1 AND (user = ?2 OR im_account = ?2) AND id > ?3
                        ORDER BY id LIMIT ?4
                        """,
                    arguments: [appID, user, afterID, pageSize + 1]
                ).map(Rows.device)
            }
            return Self.page(devices, pageSize) { Cursor.encode($0.id) }
        case .all:
            let afterID = try cursor.map(Cursor.decode) ?? 0
            let devices = try await readOneStatement { db in
                try Row.fetchAll(
                    db,
                    sql: "SELECT \(Rows.deviceColumns) FROM devices WHERE app_id = ? AND id > ? ORDER BY id LIMIT ?",
                    arguments: [appID, afterID, pageSize + 1]
                ).map(Rows.device)
            }
            return Self.page(devices, pageSize) { Cursor.encode($0.id) }
        }
    }

    // deviceCount(appID:) is in SQLiteStore+Devices.swift.

    public func tagUsage(appID: Int64, limit: Int) async throws -> [TagUsage] {
        try await readOneStatement { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT t.name, (SELECT count(*) FROM device_tags dt WHERE dt.tag_id = t.id)
                    FROM tags t WHERE t.app_id = ? ORDER BY t.name LIMIT ?
                    """,
                arguments: [appID, min(max(limit, 1), 10_000)]
            ).map { TagUsage(name: $0[0], devices: $0[1]) }
        }
    }

    public func deliveries(deviceID: Int64, limit: Int) async throws -> [DeliveryRecord] {
        try await readOneStatement { db in
            try Row.fetchAll(
                db,
                sql: "SELECT \(Self.deliveryColumns) FROM deliveries WHERE device_id = ? ORDER BY id DESC LIMIT ?",
                arguments: [deviceID, min(max(limit, 1), 1000)]
            ).map(Self.deliveryRecord)
        }
    }

    public func messageActivity(since: Date, scanLimit: Int) async throws -> [MessageActivity] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await read { db in
            // The newest messages by id (a bounded scan of the primary key), plus every message
            // still sending however old (the messages_pending index).
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Self.activityColumns) FROM (
                        SELECT \(Self.activityColumns) FROM messages ORDER BY id DESC LIMIT ?)
                    WHERE state = 'sending' OR completed_at >= ?
                    UNION
                    SELECT \(Self.activityColumns) FROM messages
                    WHERE state = 'sending' AND \(Self.pendingIndexTerm)
                    ORDER BY id DESC
                    """,
                arguments: [min(max(scanLimit, 1), 100_000), sinceMilliseconds])
            return try rows.map(Self.activity)
        }
    }

    public func failureReasons(since: Date, scanLimit: Int) async throws -> [String: Int] {
        try await reasonTotals(in: .failures, since: since, scanLimit: scanLimit)
    }

    public func failureReasonsByChannel(since: Date, scanLimit: Int) async throws -> [ChannelReasonCount] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT d.channel, d.reason, count(*) FROM deliveries d
                    WHERE d.state = 'failed' AND d.reason IS NOT NULL AND d.message_id IN (
                        SELECT id FROM (SELECT id, created_at FROM messages ORDER BY id DESC LIMIT ?)
                        WHERE created_at >= ?)
                    GROUP BY d.channel, d.reason
                    """,
                arguments: [min(max(scanLimit, 1), 100_000), sinceMilliseconds]
            ).compactMap { row -> ChannelReasonCount? in
                guard let channel = PushChannel(rawValue: row[0]) else { return nil }
                return ChannelReasonCount(channel: channel, reason: row[1], count: row[2])
            }.sorted { ($1.count, $0.channel.rawValue, $0.reason) < ($0.count, $1.channel.rawValue, $1.reason) }
        }
    }

    /// The tables that count a message's outcomes by reason.
    enum ReasonTable: String {
        case failures = "message_failures"
        case skips = "message_skips"
    }

    /// Totals by reason over the newest `scanLimit` messages created since `since`.
    func reasonTotals(in table: ReasonTable, since: Date, scanLimit: Int) async throws -> [String: Int] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT r.reason, sum(r.count) FROM \(table.rawValue) r
                    WHERE r.message_id IN (
                        SELECT id FROM (SELECT id, created_at FROM messages ORDER BY id DESC LIMIT ?)
                        WHERE created_at >= ?)
                    GROUP BY r.reason
                    """,
                arguments: [min(max(scanLimit, 1), 100_000), sinceMilliseconds])
            var result: [String: Int] = [:]
            for row in rows {
                let count: Int = row[1]
                if count > 0 { result[row[0]] = count }
            }
            return result
        }
    }

    // MARK: plumbing

    private static let activityColumns = """
        id, app_id, state, created_at, started_at, completed_at, total, queued, sending, delivered, failed, \
        skipped, held
        """

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    /// `items` holds up to `pageSize + 1` rows; the extra one only says a next page exists.
    private static func page(_ items: [Device], _ pageSize: Int, cursor: (Device) -> String) -> Page<Device> {
        guard items.count > pageSize else { return Page(items: items, nextCursor: nil) }
        let page = Array(items.prefix(pageSize))
        return Page(items: page, nextCursor: cursor(page[page.count - 1]))
    }

    private static func activity(_ row: Row) throws -> MessageActivity {
        let stateName: String = row[2]
        guard let state = MessageState(rawValue: stateName) else {
            throw StoreError(.unavailable, "messages.state holds unknown value \(stateName)")
        }
        let started: Int64? = row[4]
        let completed: Int64? = row[5]
        var counts = DeliveryCounts()
        counts.queued = row[7]
        counts.sending = row[8]
        counts.delivered = row[9]
        counts.failed = row[10]
        counts.skipped = row[11]
        counts.held = row[12]
        return MessageActivity(
            id: row[0], appID: row[1], state: state, createdAt: SQLTime.date(row[3]),
            startedAt: started.map(SQLTime.date), completedAt: completed.map(SQLTime.date), total: row[6],
            counts: counts)
    }
}

/// The cursor of a token-ordered listing: `t.` + the last token returned. Tokens are not
/// secret from the console that lists them, so the cursor need not hide one.
enum TokenCursor {
    static func encode(_ token: String) -> String { "t." + token }

    static func decode(_ cursor: String) throws -> String {
        let token = cursor.dropFirst(2)
        guard cursor.hasPrefix("t."), !token.isEmpty, token.utf8.count <= 200,
            token.utf8.allSatisfy({
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            })
        else {
            throw StoreError(.invalidCursor, "not a cursor this store issued: \(cursor.prefix(64))")
        }
        return String(token)
    }
}
