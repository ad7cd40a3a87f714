import Foundation
import GRDB
import TuisongCore

extension Schema {
    /// What the Baidu provider needs on top of v1/v2: tag creation times, one device per
    /// Baidu channel, apps found by their Baidu apikey (unique), indexes for timer and topic
    /// lookups, messages kept per user for `fetch_msg`, and bind/unbind events for the
    /// device statistics.
    static let v3Baidu = """
        -- Baidu lists a tag's create_time. Rows inserted without one (DeviceStore.addTag)
        -- get the wall clock from the trigger; rows older than this migration stay NULL.
        ALTER TABLE tags ADD COLUMN created_at INTEGER;
        CREATE TRIGGER tags_created_at AFTER INSERT ON tags FOR EACH ROW
        WHEN NEW.created_at IS NULL
        BEGIN
            UPDATE tags SET created_at = CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER)
            WHERE id = NEW.id;
        END;

        -- A Baidu channel is exactly one device of one app.
        DROP INDEX devices_by_baidu_channel;
        CREATE UNIQUE INDEX devices_by_baidu_channel ON devices(app_id, baidu_channel_id)
            WHERE baidu_channel_id IS NOT NULL;
        CREATE INDEX devices_by_baidu_user ON devices(app_id, baidu_user_id)
            WHERE baidu_user_id IS NOT NULL;

        -- Every Baidu request names its app by apikey; two apps cannot share one. Apps
        -- without Baidu keys index NULL, and NULLs never collide.
        CREATE UNIQUE INDEX apps_by_baidu_apikey ON apps(json_extract(vendor_settings, '$.baidu.apikey'));

        CREATE INDEX messages_by_baidu_timer ON messages(app_id, json_extract(labels, '$.timer_id'))
            WHERE vendor = 'baidu';
        CREATE INDEX messages_by_baidu_topic ON messages(app_id, json_extract(labels, '$.topic_id'))
            WHERE vendor = 'baidu';

        -- Messages pushed to a user, kept until they expire for Channel API 2.0 fetch_msg.
        -- Written before the push is submitted (and dropped if it is refused), so no
        -- reference to messages(id).
        CREATE TABLE baidu_kept_messages (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            msg_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            msg_key TEXT,
            message TEXT NOT NULL,
            message_type INTEGER NOT NULL CHECK (message_type IN (0, 1)),
            expires_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX baidu_kept_by_user ON baidu_kept_messages(app_id, user_id, id);
        CREATE INDEX baidu_kept_by_msg ON baidu_kept_messages(app_id, msg_id);
        CREATE INDEX baidu_kept_by_expiry ON baidu_kept_messages(expires_at);

        -- First binds and unbinds, for report/statistic_device.
        CREATE TABLE baidu_binding_events (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('bind', 'unbind')),
            at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX baidu_binding_events_by_app ON baidu_binding_events(app_id, at);
        """
}

extension SQLiteStore: BaiduStore {
    private static let dayMilliseconds: Int64 = 86_400_000
    /// SQLite's default limit on `?` parameters is 32766; lists are bound in chunks well below.
    private static let chunkSize = 500

    public func app(baiduAPIKey apiKey: String) async throws -> App? {
        try await pointLookUp(.appByBaiduAPIKey, [.text(apiKey)]) { row in try Rows.app(columns: row) }
    }

    // MARK: Bindings

    public func bindBaiduDevice(
        appID: Int64, token: DeviceToken, environment: APNsEnvironment, userID: String, channelID: String
    ) async throws -> (device: Device, created: Bool) {
        let now = nowMilliseconds
        return try await write { db in
            let previous = try Row.fetchOne(
                db, sql: "SELECT baidu_channel_id FROM devices WHERE app_id = ? AND token = ?",
                arguments: [appID, token.hex])
            let wasBound = (previous?[0] as String?) != nil
            let registered = try Self.applyRegistration(
                db, appID: appID, DeviceRegistration(token: token, environment: environment), now: now)
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        UPDATE devices SET baidu_user_id = ?, baidu_channel_id = ? WHERE id = ?
                        RETURNING \(Rows.deviceColumns)
                        """,
                    arguments: [userID, channelID, registered.device.id])
            else {
                throw StoreError(.unavailable, "the Baidu bind update returned no row")
            }
            if !wasBound {
                try db.execute(
                    sql: "INSERT INTO baidu_binding_events (app_id, kind, at) VALUES (?, 'bind', ?)",
                    arguments: [appID, now])
            }
            return (try Rows.device(row), !wasBound)
        }
    }

    public func unbindBaiduDevice(appID: Int64, channelID: String) async throws -> Bool {
        let now = nowMilliseconds
        return try await write { db in
            try db.execute(
                sql: "DELETE FROM devices WHERE app_id = ? AND baidu_channel_id = ?",
                arguments: [appID, channelID])
            guard db.changesCount > 0 else { return false }
            try db.execute(
                sql: "DELETE FROM baidu_kept_messages WHERE app_id = ? AND channel_id = ?",
                arguments: [appID, channelID])
            try db.execute(
                sql: "INSERT INTO baidu_binding_events (app_id, kind, at) VALUES (?, 'unbind', ?)",
                arguments: [appID, now])
            return true
        }
    }

    public func baiduDevice(appID: Int64, channelID: String) async throws -> Device? {
        try await pointLookUp(.baiduDeviceByChannel, [.int64(appID), .text(channelID)]) { row in
            try Rows.device(columns: row)
        }
    }

    public func baiduDevices(appID: Int64, userID: String) async throws -> [Device] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT \(Rows.deviceColumns) FROM devices
                    WHERE app_id = ? AND baidu_user_id = ? AND baidu_channel_id IS NOT NULL ORDER BY id
                    """,
                arguments: [appID, userID]
            ).map(Rows.device)
        }
    }

    public func baiduDevices(appID: Int64, channelIDs: [String]) async throws -> [Device] {
        let unique = Array(Set(channelIDs))
        guard !unique.isEmpty else { return [] }
        return try await read { db in
            var devices: [Device] = []
            for start in stride(from: 0, to: unique.count, by: Self.chunkSize) {
                let chunk = Array(unique[start..<min(unique.count, start + Self.chunkSize)])
                let marks = Self.placeholders(chunk.count)
                devices += try Row.fetchAll(
                    db,
                    sql: """
                        SELECT \(Rows.deviceColumns) FROM devices
                        WHERE app_id = ? AND baidu_channel_id IN (\(marks))
                        """,
                    arguments: StatementArguments([appID as (any DatabaseValueConvertible)?] + chunk.map { $0 })
                ).map(Rows.device)
            }
            return devices.sorted { $0.id < $1.id }
        }
    }

    public func baiduBindings(
        appID: Int64, userID: String?, channelID: String?, start: Int, limit: Int
    ) async throws -> (total: Int, devices: [Device]) {
        var condition = "app_id = ? AND baidu_channel_id IS NOT NULL"
        var arguments: [DatabaseValue] = [appID.databaseValue]
        if let userID {
            condition += " AND baidu_user_id = ?"
            arguments.append(userID.databaseValue)
        }
        if let channelID {
            condition += " AND baidu_channel_id = ?"
            arguments.append(channelID.databaseValue)
        }
        let filter = condition
        let filterArguments = arguments
        return try await read { db in
            let total =
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM devices WHERE \(filter)",
                    arguments: StatementArguments(filterArguments)) ?? 0
            let devices = try Row.fetchAll(
                db,
                sql: "SELECT \(Rows.deviceColumns) FROM devices WHERE \(filter) ORDER BY id LIMIT ? OFFSET ?",
                arguments: StatementArguments(
                    filterArguments + [max(0, limit).databaseValue, max(0, start).databaseValue])
            ).map(Rows.device)
            return (total, devices)
        }
    }

    // MARK: Tags

    public func baiduTag(appID: Int64, name: String) async throws -> BaiduTag? {
        try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT id, name, created_at FROM tags WHERE app_id = ? AND name = ?",
                arguments: [appID, name]
            ).map(Self.tag)
        }
    }

    public func baiduTags(appID: Int64, name: String?, start: Int, limit: Int) async throws
        -> (total: Int, tags: [BaiduTag])
    {
        try await read { db in
            var condition = "app_id = ?"
            var arguments: [(any DatabaseValueConvertible)?] = [appID]
            if let name {
                condition += " AND name = ?"
                arguments.append(name)
            }
            let total =
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM tags WHERE \(condition)", arguments: StatementArguments(arguments))
                ?? 0
            let tags = try Row.fetchAll(
                db,
                sql: "SELECT id, name, created_at FROM tags WHERE \(condition) ORDER BY id LIMIT ? OFFSET ?",
                arguments: StatementArguments(arguments + [max(0, limit), max(0, start)])
            ).map(Self.tag)
            return (total, tags)
        }
    }

    public func createBaiduTag(appID: Int64, name: String) async throws -> (tag: BaiduTag, created: Bool) {
        let now = nowMilliseconds
        return try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO tags (app_id, name, created_at) VALUES (?, ?, ?)
                    ON CONFLICT (app_id, name) DO NOTHING
                    """,
                arguments: [appID, name, now])
            let created = db.changesCount > 0
            return (try Self.existingTag(db, appID: appID, name: name), created)
        }
    }

    public func deleteBaiduTag(appID: Int64, name: String) async throws -> Bool {
        try await write { db in
            // device_tags rows go with it (ON DELETE CASCADE).
            try db.execute(sql: "DELETE FROM tags WHERE app_id = ? AND name = ?", arguments: [appID, name])
            return db.changesCount > 0
        }
    }

    public func addBaiduTag(appID: Int64, name: String, deviceIDs: [Int64]) async throws
        -> (tag: BaiduTag, added: Set<Int64>)
    {
        let now = nowMilliseconds
        return try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO tags (app_id, name, created_at) VALUES (?, ?, ?)
                    ON CONFLICT (app_id, name) DO NOTHING
                    """,
                arguments: [appID, name, now])
            let tag = try Self.existingTag(db, appID: appID, name: name)
            // Only the app's own devices: a device id of another app is not added.
            let insert = try db.cachedStatement(
                sql: """
                    INSERT OR IGNORE INTO device_tags (tag_id, device_id)
                    SELECT ?, id FROM devices WHERE id = ? AND app_id = ?
                    """)
            var added = Set<Int64>()
            for deviceID in Set(deviceIDs) {
                try insert.execute(arguments: [tag.id, deviceID, appID])
                if db.changesCount > 0 { added.insert(deviceID) }
            }
            return (tag, added)
        }
    }

    public func removeBaiduTag(appID: Int64, name: String, deviceIDs: [Int64]) async throws -> Set<Int64> {
        try await write { db in
            guard
                let tagID = try Int64.fetchOne(
                    db, sql: "SELECT id FROM tags WHERE app_id = ? AND name = ?", arguments: [appID, name])
            else { return [] }
            let delete = try db.cachedStatement(sql: "DELETE FROM device_tags WHERE tag_id = ? AND device_id = ?")
            var removed = Set<Int64>()
            for deviceID in Set(deviceIDs) {
                try delete.execute(arguments: [tagID, deviceID])
                if db.changesCount > 0 { removed.insert(deviceID) }
            }
            return removed
        }
    }

    public func baiduTagDeviceCount(appID: Int64, name: String) async throws -> Int {
        try await readOneStatement { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM device_tags
                    WHERE tag_id = (SELECT id FROM tags WHERE app_id = ? AND name = ?)
                    """,
                arguments: [appID, name]) ?? 0
        }
    }

    public func baiduTags(appID: Int64, deviceIDs: [Int64]) async throws -> [BaiduTag] {
        let unique = Array(Set(deviceIDs))
        guard !unique.isEmpty else { return [] }
        return try await read { db in
            var tags: [Int64: BaiduTag] = [:]
            for start in stride(from: 0, to: unique.count, by: Self.chunkSize) {
                let chunk = Array(unique[start..<min(unique.count, start + Self.chunkSize)])
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT DISTINCT t.id, t.name, t.created_at FROM device_tags dt
                        JOIN tags t ON t.id = dt.tag_id
                        WHERE t.app_id = ? AND dt.device_id IN (\(Self.placeholders(chunk.count)))
                        """,
                    arguments: StatementArguments([appID as (any DatabaseValueConvertible)?] + chunk.map { $0 }))
                for row in rows {
                    let tag = Self.tag(row)
                    tags[tag.id] = tag
                }
            }
            return tags.values.sorted { $0.name < $1.name }
        }
    }

    // MARK: Kept messages

    public func keepBaiduMessages(_ messages: [BaiduKeptMessage], now: Date) async throws {
        let nowMs = Milliseconds.from(now)
        try await write { db in
            if let appID = messages.first?.appID {
                try db.execute(
                    sql: "DELETE FROM baidu_kept_messages WHERE app_id = ? AND expires_at <= ?",
                    arguments: [appID, nowMs])
            }
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO baidu_kept_messages (app_id, msg_id, user_id, channel_id, msg_key, message,
                        message_type, expires_at, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """)
            for message in messages {
                try insert.execute(arguments: [
                    message.appID, message.msgID, message.userID, message.channelID, message.msgKey,
                    message.message, message.messageType, Milliseconds.from(message.expiresAt),
                    Milliseconds.from(message.createdAt),
                ])
            }
        }
    }

    public func baiduKeptMessages(
        appID: Int64, userID: String, channelID: String?, now: Date, start: Int, limit: Int
    ) async throws -> (total: Int, messages: [BaiduKeptMessage]) {
        var condition = "app_id = ? AND user_id = ? AND expires_at > ?"
        var arguments: [DatabaseValue] = [
            appID.databaseValue, userID.databaseValue, Milliseconds.from(now).databaseValue,
        ]
        if let channelID {
            condition += " AND channel_id = ?"
            arguments.append(channelID.databaseValue)
        }
        let filter = condition
        let filterArguments = arguments
        return try await read { db in
            let total =
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM baidu_kept_messages WHERE \(filter)",
                    arguments: StatementArguments(filterArguments)) ?? 0
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT app_id, msg_id, user_id, channel_id, msg_key, message, message_type, expires_at,
                        created_at
                    FROM baidu_kept_messages WHERE \(filter) ORDER BY id LIMIT ? OFFSET ?
                    """,
                arguments: StatementArguments(
                    filterArguments + [max(0, limit).databaseValue, max(0, start).databaseValue]))
            let messages = rows.map { row in
                BaiduKeptMessage(
                    appID: row[0], msgID: row[1], userID: row[2], channelID: row[3], msgKey: row[4],
                    message: row[5], messageType: row[6], expiresAt: Milliseconds.date(row[7]),
                    createdAt: Milliseconds.date(row[8]))
            }
            return (total, messages)
        }
    }

    public func deleteBaiduKeptMessages(
        appID: Int64, userID: String, channelID: String?, msgIDs: [String]
    ) async throws -> [String] {
        let wanted = Array(Set(msgIDs))
        guard !wanted.isEmpty else { return [] }
        return try await write { db in
            var deleted = Set<String>()
            for start in stride(from: 0, to: wanted.count, by: Self.chunkSize) {
                let chunk = Array(wanted[start..<min(wanted.count, start + Self.chunkSize)])
                var sql = """
                    DELETE FROM baidu_kept_messages
                    WHERE app_id = ? AND user_id = ? AND msg_id IN (\(Self.placeholders(chunk.count)))
                    """
                var arguments: [(any DatabaseValueConvertible)?] = [appID, userID]
                arguments += chunk.map { $0 }
                if let channelID {
                    sql += " AND channel_id = ?"
                    arguments.append(channelID)
                }
                sql += " RETURNING msg_id"
                deleted.formUnion(try String.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)))
            }
            return msgIDs.filter { deleted.contains($0) }.reduce(into: [String]()) { result, id in
                if !result.contains(id) { result.append(id) }
            }
        }
    }

    public func discardBaiduKeptMessages(appID: Int64, msgID: String) async throws {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM baidu_kept_messages WHERE app_id = ? AND msg_id = ?", arguments: [appID, msgID])
        }
    }

    // MARK: Messages

    public func baiduMessages(appID: Int64, msgIDs: [String]) async throws -> [MessageRecord] {
        var records: [MessageRecord] = []
        for msgID in msgIDs {
            let id = try await pointLookUp(.baiduMessageID, [.int64(appID), .text(msgID)]) { row in row.int64(0) }
            if let id, let record = try await message(id: id) { records.append(record) }
        }
        return records
    }

    public func baiduTimers(appID: Int64, timerID: String?, start: Int, limit: Int) async throws
        -> (total: Int, messages: [MessageRecord])
    {
        var condition = """
            app_id = ? AND vendor = 'baidu' AND state = 'scheduled'
                AND json_extract(labels, '$.timer_id') IS NOT NULL
            """
        var arguments: [DatabaseValue] = [appID.databaseValue]
        if let timerID {
            condition += " AND json_extract(labels, '$.timer_id') = ?"
            arguments.append(timerID.databaseValue)
        }
        let filter = condition
        let filterArguments = arguments
        let (total, ids) = try await read { db in
            let total =
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM messages WHERE \(filter)",
                    arguments: StatementArguments(filterArguments)) ?? 0
            let ids = try Int64.fetchAll(
                db, sql: "SELECT id FROM messages WHERE \(filter) ORDER BY send_at, id LIMIT ? OFFSET ?",
                arguments: StatementArguments(
                    filterArguments + [max(0, limit).databaseValue, max(0, start).databaseValue]))
            return (total, ids)
        }
        return (total, try await records(ids))
    }

    public func baiduTimerMessage(appID: Int64, timerID: String) async throws -> MessageRecord? {
        let id = try await read { db in
            try Int64.fetchOne(
                db,
                sql: """
                    SELECT id FROM messages
                    WHERE app_id = ? AND vendor = 'baidu' AND json_extract(labels, '$.timer_id') = ?
                    """,
                arguments: [appID, timerID])
        }
        guard let id else { return nil }
        return try await message(id: id)
    }

    public func baiduSentMessages(
        appID: Int64, label: String, value: String, from: Date?, to: Date?, start: Int, limit: Int
    ) async throws -> [MessageRecord] {
        // The label goes into the SQL text so the expression indexes apply; only plain names.
        guard !label.isEmpty, label.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (97...122).contains($0) }) else {
            throw StoreError(.conflict, "label name \(label) is not [a-z_]+")
        }
        let sentAt = "coalesce(started_at, send_at, created_at)"
        var condition = """
            app_id = ? AND vendor = 'baidu' AND json_extract(labels, '$.\(label)') = ?
                AND (started_at IS NOT NULL OR state IN ('sending', 'completed'))
            """
        var arguments: [DatabaseValue] = [appID.databaseValue, value.databaseValue]
        if let from {
            condition += " AND \(sentAt) >= ?"
            arguments.append(Milliseconds.from(from).databaseValue)
        }
        if let to {
            condition += " AND \(sentAt) <= ?"
            arguments.append(Milliseconds.from(to).databaseValue)
        }
        let filter = condition
        let filterArguments = arguments
        let ids = try await read { db in
            try Int64.fetchAll(
                db, sql: "SELECT id FROM messages WHERE \(filter) ORDER BY \(sentAt) DESC, id DESC LIMIT ? OFFSET ?",
                arguments: StatementArguments(
                    filterArguments + [max(0, limit).databaseValue, max(0, start).databaseValue]))
        }
        return try await records(ids)
    }

    public func baiduTopics(appID: Int64, start: Int, limit: Int) async throws
        -> (total: Int, topics: [BaiduTopicSummary])
    {
        try await read { db in
            let topic = "json_extract(labels, '$.topic_id')"
            let total =
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT count(DISTINCT \(topic)) FROM messages
                        WHERE app_id = ? AND vendor = 'baidu' AND \(topic) IS NOT NULL
                        """,
                    arguments: [appID]) ?? 0
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT \(topic) AS topic, min(created_at), max(created_at), sum(coalesce(total, 0)),
                        sum(delivered)
                    FROM messages WHERE app_id = ? AND vendor = 'baidu' AND \(topic) IS NOT NULL
                    GROUP BY topic ORDER BY min(created_at), topic LIMIT ? OFFSET ?
                    """,
                arguments: [appID, max(0, limit), max(0, start)])
            let topics = rows.map { row in
                BaiduTopicSummary(
                    topicID: row[0], firstPushAt: Milliseconds.date(row[1]), lastPushAt: Milliseconds.date(row[2]),
                    pushed: row[3], delivered: row[4])
            }
            return (total, topics)
        }
    }

    public func baiduTopicDeliveries(appID: Int64, topicID: String, since: Date, utcOffset: Int) async throws
        -> [Date: Int]
    {
        let offset = Int64(utcOffset) * 1000
        let days = try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT (created_at + ?) / ? AS day, sum(delivered) FROM messages
                    WHERE app_id = ? AND vendor = 'baidu' AND json_extract(labels, '$.topic_id') = ?
                        AND created_at >= ?
                    GROUP BY day
                    """,
                arguments: [offset, Self.dayMilliseconds, appID, topicID, Milliseconds.from(since)]
            ).map { row -> (Int64, Int) in (row[0], row[1]) }
        }
        var result: [Date: Int] = [:]
        for (day, delivered) in days {
            result[Milliseconds.date(day * Self.dayMilliseconds - offset)] = delivered
        }
        return result
    }

    public func baiduDeviceDays(appID: Int64, now: Date, days: Int, utcOffset: Int) async throws -> [BaiduDeviceDay] {
        let offset = Int64(utcOffset) * 1000
        let dayLength = Self.dayMilliseconds
        let today = Self.floorDivide(Milliseconds.from(now) + offset, dayLength)
        let firstDay = today - Int64(max(1, days)) + 1
        let firstStart = firstDay * dayLength - offset
        let (events, active, boundNow) = try await read { db in
            var events: [Int64: (bound: Int, unbound: Int)] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT (at + ?) / ? AS day, kind, count(*) FROM baidu_binding_events
                    WHERE app_id = ? GROUP BY day, kind
                    """,
                arguments: [offset, dayLength, appID])
            {
                let day: Int64 = row[0]
                let kind: String = row[1]
                let count: Int = row[2]
                if kind == "bind" {
                    events[day, default: (0, 0)].bound += count
                } else {
                    events[day, default: (0, 0)].unbound += count
                }
            }
            var active: [Int64: Int] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT (updated_at + ?) / ? AS day, count(*) FROM devices
                    WHERE app_id = ? AND baidu_channel_id IS NOT NULL AND updated_at >= ? GROUP BY day
                    """,
                arguments: [offset, dayLength, appID, firstStart])
            {
                active[row[0]] = row[1]
            }
            let boundNow =
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM devices WHERE app_id = ? AND baidu_channel_id IS NOT NULL",
                    arguments: [appID]) ?? 0
            return (events, active, boundNow)
        }
        var result: [BaiduDeviceDay] = []
        for day in firstDay...today {
            let cumulative = events.filter { $0.key <= day }.reduce(0) { $0 + $1.value.bound }
            let later = events.filter { $0.key > day }
            let total = boundNow - later.reduce(0) { $0 + $1.value.bound } + later.reduce(0) { $0 + $1.value.unbound }
            result.append(
                BaiduDeviceDay(
                    start: Milliseconds.date(day * dayLength - offset), bound: events[day]?.bound ?? 0,
                    unbound: events[day]?.unbound ?? 0, active: active[day] ?? 0, cumulative: cumulative,
                    total: max(0, total)))
        }
        return result
    }

    // MARK: Plumbing

    private func records(_ ids: [Int64]) async throws -> [MessageRecord] {
        var records: [MessageRecord] = []
        for id in ids {
            if let record = try await message(id: id) { records.append(record) }
        }
        return records
    }

    private static func tag(_ row: Row) -> BaiduTag {
        let createdAt: Int64? = row[2]
        return BaiduTag(id: row[0], name: row[1], createdAt: createdAt.map(Milliseconds.date))
    }

    private static func existingTag(_ db: Database, appID: Int64, name: String) throws -> BaiduTag {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT id, name, created_at FROM tags WHERE app_id = ? AND name = ?",
                arguments: [appID, name])
        else { throw StoreError.notFound("tag \(name) of app \(appID)") }
        return tag(row)
    }

    private static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return (value % divisor < 0) ? quotient - 1 : quotient
    }
}
