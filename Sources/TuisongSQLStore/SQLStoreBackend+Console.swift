import Foundation
import TuisongCore

// Read-only queries for the admin console, written once; each one is bounded by a LIMIT or by
// an index range, so an operator's click never scans a large table.
extension SQLStoreBackend where Self: DeviceStore {
    public func searchDevices(appID: Int64, query: DeviceQuery, cursor: String?, limit: Int) async throws
        -> Page<Device>
    {
        let pageSize = min(max(limit, 1), 1000)
        switch query {
        case .tag(let tag):
            return try await devices(appID: appID, tag: tag, cursor: cursor, limit: pageSize)
        case .tokenPrefix(let rawPrefix):
            // Tokens are ASCII below DEL (lower-case hex, or letters, digits and -_.:~, as
            // the channels' token rules allow), so every token with the prefix sorts in
            // [prefix, prefix + DEL) byte-wise: one range of the UNIQUE (app_id, token) index. A
            // hex prefix is a hex token's, stored lower-case. The binary collation makes the
            // comparison and the order byte-wise whatever PostgreSQL's locale (SQLite compares
            // bytes).
            let prefix =
                rawPrefix.lowercased().utf8.allSatisfy(Rows.isHexDigit) ? rawPrefix.lowercased() : rawPrefix
            guard prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
                prefix.utf8.count <= DeviceToken.maximumOpaqueLength
            else {
                return Page(items: [], nextCursor: nil)
            }
            let after = try cursor.map(TokenCursor.decode) ?? ""
            let devices = try await sqlRead { db in
                let token = "token" + db.dialect.binaryCollation
                return try db.fetchAll(
                    """
                    SELECT \(raw: Rows.deviceColumns) FROM devices
                    WHERE app_id = \(appID) AND \(raw: token) >= \(prefix) AND \(raw: token) < \(prefix + "\u{7F}")
                        AND \(raw: token) > \(after)
                    ORDER BY \(raw: token) LIMIT \(pageSize + 1)
                    """
                ).map { try Rows.device(columns: $0) }
            }
            return Rows.page(devices, pageSize) { TokenCursor.encode($0.token) }
        case .user(let user):
            let afterID = try cursor.map(Cursor.decode) ?? 0
            let devices = try await sqlRead { db in
                // Two index ranges (devices_by_user, devices_by_im_account) merged.
                try db.fetchAll(
                    """
                    SELECT \(raw: Rows.deviceColumns) FROM devices
                    WHERE app_id = \(appID) AND ("user" = \(user) OR im_account = \(user)) AND id > \(afterID)
                    ORDER BY id LIMIT \(pageSize + 1)
                    """
                ).map { try Rows.device(columns: $0) }
            }
            return Rows.page(devices, pageSize) { Cursor.encode($0.id) }
        case .all:
            let afterID = try cursor.map(Cursor.decode) ?? 0
            let devices = try await sqlRead { db in
                try db.fetchAll(
                    """
                    SELECT \(raw: Rows.deviceColumns) FROM devices WHERE app_id = \(appID) AND id > \(afterID)
                    ORDER BY id LIMIT \(pageSize + 1)
                    """
                ).map { try Rows.device(columns: $0) }
            }
            return Rows.page(devices, pageSize) { Cursor.encode($0.id) }
        }
    }

    public func tagUsage(appID: Int64, limit: Int) async throws -> [TagUsage] {
        try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT t.name, (SELECT count(*) FROM device_tags dt WHERE dt.tag_id = t.id)
                FROM tags t WHERE t.app_id = \(appID)
                ORDER BY t.name\(raw: db.dialect.binaryCollation) LIMIT \(min(max(limit, 1), 10_000))
                """
            ).map { TagUsage(name: $0.string(0), devices: Int($0.int64(1))) }
        }
    }

    public func deliveries(deviceID: Int64, limit: Int) async throws -> [DeliveryRecord] {
        try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT \(raw: Rows.deliveryColumns) FROM deliveries WHERE device_id = \(deviceID)
                ORDER BY id DESC LIMIT \(min(max(limit, 1), 1000))
                """
            ).map { try Rows.delivery(columns: $0) }
        }
    }

}

extension SQLStoreBackend {
    /// The newest messages by id (a bounded scan of the primary key), plus every message still
    /// sending however old (the `messages_pending` partial index, its condition spelled out as
    /// SQLite needs it); their counts as the dialect keeps them (PostgreSQL adds every slice's
    /// to the message's own, the slices read once per message), read for the messages found only.
    public func messageActivity(since: Date, scanLimit: Int) async throws -> [MessageActivity] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await sqlRead { db in
            let counts = db.dialect.messageCounts(table: "m")
            return try db.fetchAll(
                """
                SELECT m.id, m.app_id, m.state, m.created_at, m.started_at, m.completed_at, m.total, \(raw: counts.columns)
                FROM messages m \(raw: counts.join)
                WHERE m.id IN (
                    SELECT id FROM (
                        SELECT id, state, completed_at FROM messages ORDER BY id DESC
                        LIMIT \(min(max(scanLimit, 1), 100_000))) newest
                    WHERE state = 'sending' OR completed_at >= \(sinceMilliseconds)
                    UNION
                    SELECT id FROM messages WHERE state = 'sending' AND \(raw: db.dialect.pendingMessagesCondition))
                ORDER BY m.id DESC
                """
            ).map { try Rows.messageActivity(columns: $0) }
        }
    }

    public func failureReasons(since: Date, scanLimit: Int) async throws -> [String: Int] {
        try await reasonTotals(in: .failures, since: since, scanLimit: scanLimit)
    }

    public func skipReasons(since: Date, scanLimit: Int) async throws -> [String: Int] {
        try await reasonTotals(in: .skips, since: since, scanLimit: scanLimit)
    }

    public func failureReasonsByChannel(since: Date, scanLimit: Int) async throws -> [ChannelReasonCount] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT d.channel, d.reason, count(*) FROM deliveries d
                WHERE d.state = 'failed' AND d.reason IS NOT NULL AND d.message_id IN (
                    SELECT id FROM (
                        SELECT id, created_at FROM messages ORDER BY id DESC LIMIT \(min(max(scanLimit, 1), 100_000))
                    ) newest
                    WHERE created_at >= \(sinceMilliseconds))
                GROUP BY d.channel, d.reason
                """
            ).compactMap { row -> ChannelReasonCount? in
                guard let channel = PushChannel(rawValue: row.string(0)) else { return nil }
                return ChannelReasonCount(channel: channel, reason: row.string(1), count: Int(row.int64(2)))
            }.sorted { ($1.count, $0.channel.rawValue, $0.reason) < ($0.count, $1.channel.rawValue, $1.reason) }
        }
    }

    /// Totals by reason (over every slice, on PostgreSQL) of the newest `scanLimit` messages
    /// created since `since`.
    package func reasonTotals(in table: ReasonTable, since: Date, scanLimit: Int) async throws -> [String: Int] {
        let sinceMilliseconds = SQLTime.milliseconds(since)
        return try await sqlRead { db in
            // The sum cast back to an integer: PostgreSQL's sum of a bigint is a numeric.
            let rows = try db.fetchAll(
                """
                SELECT r.reason, CAST(sum(r.count) AS BIGINT) FROM \(raw: table.rawValue) r
                WHERE r.message_id IN (
                    SELECT id FROM (
                        SELECT id, created_at FROM messages ORDER BY id DESC LIMIT \(min(max(scanLimit, 1), 100_000))
                    ) newest
                    WHERE created_at >= \(sinceMilliseconds))
                GROUP BY r.reason
                """)
            var result: [String: Int] = [:]
            for row in rows {
                let count = Int(row.int64(1))
                if count > 0, !row.isNull(0) { result[row.string(0)] = count }
            }
            return result
        }
    }
}

/// The tables that count a message's outcomes by reason.
package enum ReasonTable: String {
    case failures = "message_failures"
    case skips = "message_skips"
}

extension Rows {
    package static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    /// `items` holds up to `pageSize + 1` rows; the extra one only says a next page exists.
    package static func page(_ items: [Device], _ pageSize: Int, cursor: (Device) -> String) -> Page<Device> {
        guard items.count > pageSize else { return Page(items: items, nextCursor: nil) }
        let page = Array(items.prefix(pageSize))
        return Page(items: page, nextCursor: cursor(page[page.count - 1]))
    }

    package static let deliveryColumns = """
        id, message_id, device_id, token, environment, state, reason, service_message_id, attempts, next_attempt_at, updated_at, \
        content, credential_selector, channel
        """

    /// A delivery from a row starting with `deliveryColumns`, whichever database read it.
    package static func delivery(columns row: some ColumnValues) throws -> DeliveryRecord {
        guard let environment = PushEnvironment(rawValue: row.string(4)),
            let state = DeliveryState(rawValue: row.string(5)), let channel = PushChannel(rawValue: row.string(13))
        else { throw StoreError(.unavailable, "deliveries row \(row.int64(0)) holds unknown values") }
        return DeliveryRecord(
            id: row.int64(0), messageID: row.int64(1), deviceID: row.optionalInt64(2), token: row.string(3),
            environment: environment, state: state, reason: row.optionalString(6),
            serviceMessageID: row.optionalString(7),
            attempts: Int(row.int64(8)), nextAttemptAt: row.optionalInt64(9).map(SQLTime.date),
            updatedAt: SQLTime.date(row.int64(10)),
            content: try row.optionalString(11).map { try JSONText.decode(PushContent.self, $0) },
            credentialSelector: row.optionalString(12), channel: channel)
    }
}
