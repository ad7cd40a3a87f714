import Foundation
import TuisongCore
import TuisongPlugin

/// A device bound through Baidu: the core's device and its Baidu ids. Reads as the device
/// (`binding.token`, `binding.id`).
@dynamicMemberLookup
struct BaiduDevice: Sendable, Hashable {
    var device: Device
    var userID: String?
    var channelID: String

    subscript<T>(dynamicMember keyPath: KeyPath<Device, T>) -> T { device[keyPath: keyPath] }
}

/// Baidu's data on the shared database: bindings (a device token bound to a stable
/// `user_id`/`channel_id`, in `baidu_bindings`), app-level tags with Baidu's listing semantics
/// (`tags`, `device_tags`), messages kept per user for `fetch_msg` (`baidu_kept_messages`),
/// bind/unbind events (`baidu_binding_events`) and the lookups behind Baidu's report, timer and
/// topic APIs. Everything is scoped to one app. Devices themselves are the core's: read through
/// `DeviceStore.devices(appID:ids:)`, never decoded here.
///
/// The kept messages and binding events were created by the gateway's core migration
/// `v3-baidu-bindings-tags-kept-messages` before plugins had migrations of their own; they keep
/// their names so existing databases keep working. Later changes are Baidu's own
/// `BaiduProvider.migrations` (the bindings moved out of the core `devices` table in
/// `3-bindings-from-core-devices`).
struct BaiduStore: Sendable {
    let database: any SharedDatabase
    /// Devices (registration) and messages (records) stay the core store's.
    let store: any ProviderStore
    let clock: any TuisongCore.Clock

    /// Lists of ids are bound in chunks well below SQLite's limit on parameters.
    private static let chunkSize = 500
    private static let dayMilliseconds: Int64 = 86_400_000

    /// The app whose Baidu `apikey` is `apiKey` (unique across apps).
    func app(apiKey: String) async throws -> App? {
        try await store.app(vendor: BaiduProvider.name, setting: "apikey", value: apiKey)
    }

    // MARK: Bindings

    /// Registers the token (as `DeviceStore.registerDevice` does) and binds it to
    /// `userID`/`channelID`. `created` is true when the device was not bound before. Throws
    /// `.conflict` when another device of the app holds `channelID`; a device the refused bind
    /// registered is removed again.
    func bindDevice(
        appID: Int64, token: DeviceToken, environment: PushEnvironment, userID: String, channelID: String,
        channel: PushChannel
    ) async throws -> (device: BaiduDevice, created: Bool) {
        // The registration is the core store's (group-committed); the binding is one
        // transaction after it. An unbind in between deletes the device: register again.
        for _ in 0..<3 {
            let (registered, isNew) = try await store.registerDevice(
                appID: appID, DeviceRegistration(token: token, environment: environment, channel: channel))
            let now = nowMilliseconds
            let bound: Bool?
            do {
                bound = try await database.write { db -> Bool? in
                    guard try db.queryOne("SELECT 1 FROM devices WHERE id = ?", [.integer(registered.id)]) != nil
                    else { return nil }
                    let wasBound =
                        try db.queryOne("SELECT 1 FROM baidu_bindings WHERE device_id = ?", [.integer(registered.id)])
                        != nil
                    try db.execute(
                        """
                        INSERT INTO baidu_bindings (device_id, app_id, user_id, channel_id) VALUES (?, ?, ?, ?)
                        ON CONFLICT (device_id) DO UPDATE SET user_id = excluded.user_id, channel_id = excluded.channel_id
                        """, [.integer(registered.id), .integer(appID), .text(userID), .text(channelID)])
                    if !wasBound {
                        try db.execute(
                            "INSERT INTO baidu_binding_events (app_id, kind, at) VALUES (?, 'bind', ?)",
                            [.integer(appID), .integer(now)])
                    }
                    return !wasBound
                }
            } catch let error as StoreError where error.code == .conflict {
                if isNew { _ = try? await store.deleteDevice(appID: appID, token: token) }
                throw error
            }
            if let bound {
                return (BaiduDevice(device: registered, userID: userID, channelID: channelID), bound)
            }
        }
        throw StoreError(.unavailable, "the device of app \(appID) was unbound while binding, three times")
    }

    /// Unbinds the channel: the device, its tag memberships and its kept messages are
    /// deleted, and what was not sent to it yet is cancelled, so nothing reaches it until it
    /// binds again. `false` if it was not bound.
    func unbindDevice(appID: Int64, channelID: String) async throws -> Bool {
        let now = nowMilliseconds
        return try await database.write { db in
            // What was not sent to the device yet goes first, in this transaction.
            try DeliveryCancellation.cancel(
                db,
                devices: "SELECT device_id FROM baidu_bindings WHERE app_id = \(appID) AND channel_id = \(channelID)",
                reason: DeliveryCancellation.deviceDeleted, now: now)
            // The binding goes with the device (ON DELETE CASCADE).
            try db.execute(
                """
                DELETE FROM devices WHERE id = (
                    SELECT device_id FROM baidu_bindings WHERE app_id = ? AND channel_id = ?)
                """, [.integer(appID), .text(channelID)])
            guard db.changedRows > 0 else { return false }
            try db.execute(
                "DELETE FROM baidu_kept_messages WHERE app_id = ? AND channel_id = ?",
                [.integer(appID), .text(channelID)])
            try db.execute(
                "INSERT INTO baidu_binding_events (app_id, kind, at) VALUES (?, 'unbind', ?)",
                [.integer(appID), .integer(now)])
            return true
        }
    }

    func device(appID: Int64, channelID: String) async throws -> BaiduDevice? {
        try await devices(appID: appID, channelIDs: [channelID]).first
    }

    /// The device of `token` with its Baidu ids, if it is bound.
    func device(appID: Int64, token: DeviceToken) async throws -> BaiduDevice? {
        guard let device = try await store.device(appID: appID, token: token) else { return nil }
        let row = try await database.read { db in
            try db.queryOne("SELECT user_id, channel_id FROM baidu_bindings WHERE device_id = ?", [.integer(device.id)])
        }
        guard let row, let channelID = row[1].string else { return nil }
        return BaiduDevice(device: device, userID: row[0].string, channelID: channelID)
    }

    /// Devices bound to `userID`, by id.
    func devices(appID: Int64, userID: String) async throws -> [BaiduDevice] {
        let rows = try await database.read { db in
            try db.query(
                """
                SELECT device_id, user_id, channel_id FROM baidu_bindings
                WHERE app_id = ? AND user_id = ? ORDER BY device_id
                """, [.integer(appID), .text(userID)])
        }
        return try await devices(appID: appID, bindings: rows)
    }

    /// The bound devices among `channelIDs` (any number; unknown ones are left out), by id.
    func devices(appID: Int64, channelIDs: [String]) async throws -> [BaiduDevice] {
        let unique = Array(Set(channelIDs))
        guard !unique.isEmpty else { return [] }
        let rows = try await database.read { db in
            var rows: [SQLRow] = []
            for chunk in unique.chunks(ofCount: Self.chunkSize) {
                rows += try db.query(
                    """
                    SELECT device_id, user_id, channel_id FROM baidu_bindings
                    WHERE app_id = ? AND channel_id IN (\(SQLList.placeholders(chunk.count)))
                    """, [.integer(appID)] + chunk.map(SQLValue.text))
            }
            return rows
        }
        return try await devices(appID: appID, bindings: rows)
    }

    /// Bound devices, optionally of one user and/or one channel, by id, `start` rows skipped.
    func bindings(appID: Int64, userID: String?, channelID: String?, start: Int, limit: Int) async throws
        -> (total: Int, devices: [BaiduDevice])
    {
        var condition = "app_id = ?"
        var arguments: [SQLValue] = [.integer(appID)]
        if let userID {
            condition += " AND user_id = ?"
            arguments.append(.text(userID))
        }
        if let channelID {
            condition += " AND channel_id = ?"
            arguments.append(.text(channelID))
        }
        let filter = condition
        let filterArguments = arguments
        let (total, rows) = try await database.read { db in
            let total = try Self.count(db, "SELECT count(*) FROM baidu_bindings WHERE \(filter)", filterArguments)
            let rows = try db.query(
                """
                SELECT device_id, user_id, channel_id FROM baidu_bindings WHERE \(filter)
                ORDER BY device_id LIMIT ? OFFSET ?
                """, filterArguments + Self.window(start: start, limit: limit))
            return (total, rows)
        }
        return (total, try await devices(appID: appID, bindings: rows))
    }

    /// The Baidu ids of those of `deviceIDs` that are bound (device id → `channel_id`,
    /// `user_id`), for the console's device views.
    func bindings(appID: Int64, deviceIDs: [Int64]) async throws -> [Int64: [String: String]] {
        let unique = Array(Set(deviceIDs))
        guard !unique.isEmpty else { return [:] }
        return try await database.read { db in
            var result: [Int64: [String: String]] = [:]
            for chunk in unique.chunks(ofCount: Self.chunkSize) {
                for row in try db.query(
                    """
                    SELECT device_id, channel_id, user_id FROM baidu_bindings
                    WHERE app_id = ? AND device_id IN (\(SQLList.placeholders(chunk.count)))
                    """, [.integer(appID)] + chunk.map(SQLValue.integer))
                {
                    guard let id = row[0].int, let channel = row[1].string else { continue }
                    var values = ["channel_id": channel]
                    if let user = row[2].string { values["user_id"] = user }
                    result[id] = values
                }
            }
            return result
        }
    }

    /// The core's devices behind binding rows (`device_id, user_id, channel_id`), by id; a
    /// device deleted since the rows were read is left out.
    private func devices(appID: Int64, bindings rows: [SQLRow]) async throws -> [BaiduDevice] {
        var ids: [Int64: (userID: String?, channelID: String)] = [:]
        for row in rows {
            guard let id = row[0].int, let channel = row[2].string else { continue }
            ids[id] = (row[1].string, channel)
        }
        return try await store.devices(appID: appID, ids: Array(ids.keys)).compactMap { device in
            ids[device.id].map { BaiduDevice(device: device, userID: $0.userID, channelID: $0.channelID) }
        }
    }

    // MARK: Tags

    func tag(appID: Int64, name: String) async throws -> BaiduTag? {
        try await database.read { db in
            try db.queryOne(
                "SELECT id, name, created_at FROM tags WHERE app_id = ? AND name = ?", [.integer(appID), .text(name)]
            ).map(Self.tag)
        }
    }

    /// Tags of the app by id (only `name` when given), `start` rows skipped.
    func tags(appID: Int64, name: String?, start: Int, limit: Int) async throws -> (total: Int, tags: [BaiduTag]) {
        var condition = "app_id = ?"
        var arguments: [SQLValue] = [.integer(appID)]
        if let name {
            condition += " AND name = ?"
            arguments.append(.text(name))
        }
        let filter = condition
        let filterArguments = arguments
        return try await database.read { db in
            let total = try Self.count(db, "SELECT count(*) FROM tags WHERE \(filter)", filterArguments)
            let tags = try db.query(
                "SELECT id, name, created_at FROM tags WHERE \(filter) ORDER BY id LIMIT ? OFFSET ?",
                filterArguments + Self.window(start: start, limit: limit)
            ).map(Self.tag)
            return (total, tags)
        }
    }

    /// Creates the tag; `created` is false when it already existed.
    func createTag(appID: Int64, name: String) async throws -> (tag: BaiduTag, created: Bool) {
        let now = nowMilliseconds
        return try await database.write { db in
            let created = try Self.insertTag(db, appID: appID, name: name, now: now)
            return (try Self.existingTag(db, appID: appID, name: name), created)
        }
    }

    /// Deletes the tag and every device's membership. `false` when there was no such tag.
    func deleteTag(appID: Int64, name: String) async throws -> Bool {
        try await database.write { db in
            // device_tags rows go with it (ON DELETE CASCADE).
            try db.execute("DELETE FROM tags WHERE app_id = ? AND name = ?", [.integer(appID), .text(name)])
            return db.changedRows > 0
        }
    }

    /// Adds the devices to the tag, creating the tag if needed; returns the ids that were
    /// not members before.
    func addTag(appID: Int64, name: String, deviceIDs: [Int64]) async throws -> (tag: BaiduTag, added: Set<Int64>) {
        let now = nowMilliseconds
        return try await database.write { db in
            _ = try Self.insertTag(db, appID: appID, name: name, now: now)
            let tag = try Self.existingTag(db, appID: appID, name: name)
            var added = Set<Int64>()
            for deviceID in Set(deviceIDs) {
                // Only the app's own devices, and only once: a device id of another app, or a
                // member already, inserts nothing.
                try db.execute(
                    """
                    INSERT INTO device_tags (tag_id, device_id)
                    SELECT ?, id FROM devices WHERE id = ? AND app_id = ?
                        AND NOT EXISTS (SELECT 1 FROM device_tags WHERE tag_id = ? AND device_id = ?)
                    """,
                    [.integer(tag.id), .integer(deviceID), .integer(appID), .integer(tag.id), .integer(deviceID)])
                if db.changedRows > 0 { added.insert(deviceID) }
            }
            return (tag, added)
        }
    }

    /// Removes the devices from the tag; returns the ids that were members.
    func removeTag(appID: Int64, name: String, deviceIDs: [Int64]) async throws -> Set<Int64> {
        try await database.write { db in
            guard
                let tagID = try db.queryOne(
                    "SELECT id FROM tags WHERE app_id = ? AND name = ?", [.integer(appID), .text(name)])?[0].int
            else { return [] }
            var removed = Set<Int64>()
            for deviceID in Set(deviceIDs) {
                try db.execute(
                    "DELETE FROM device_tags WHERE tag_id = ? AND device_id = ?", [.integer(tagID), .integer(deviceID)])
                if db.changedRows > 0 { removed.insert(deviceID) }
            }
            return removed
        }
    }

    /// Devices carrying the tag.
    func tagDeviceCount(appID: Int64, name: String) async throws -> Int {
        try await database.read { db in
            try Self.count(
                db,
                """
                SELECT count(*) FROM device_tags
                WHERE tag_id = (SELECT id FROM tags WHERE app_id = ? AND name = ?)
                """, [.integer(appID), .text(name)])
        }
    }

    /// The tags any of `deviceIDs` carries, by name.
    func tags(appID: Int64, deviceIDs: [Int64]) async throws -> [BaiduTag] {
        let unique = Array(Set(deviceIDs))
        guard !unique.isEmpty else { return [] }
        return try await database.read { db in
            var tags: [Int64: BaiduTag] = [:]
            for chunk in unique.chunks(ofCount: Self.chunkSize) {
                let rows = try db.query(
                    """
                    SELECT DISTINCT t.id, t.name, t.created_at FROM device_tags dt
                    JOIN tags t ON t.id = dt.tag_id
                    WHERE t.app_id = ? AND dt.device_id IN (\(SQLList.placeholders(chunk.count)))
                    """, [.integer(appID)] + chunk.map(SQLValue.integer))
                for row in rows {
                    let tag = Self.tag(row)
                    tags[tag.id] = tag
                }
            }
            return tags.values.sorted { $0.name < $1.name }
        }
    }

    // MARK: Kept messages (Channel API 2.0 fetch_msg)

    /// Stores the rows (and drops the app's rows that expired before `now`).
    func keepMessages(_ messages: [BaiduKeptMessage], now: Date) async throws {
        let nowMs = SQLTime.milliseconds(now)
        try await database.write { db in
            if let appID = messages.first?.appID {
                try db.execute(
                    "DELETE FROM baidu_kept_messages WHERE app_id = ? AND expires_at <= ?",
                    [.integer(appID), .integer(nowMs)])
            }
            for message in messages {
                try db.execute(
                    """
                    INSERT INTO baidu_kept_messages (app_id, msg_id, user_id, channel_id, msg_key, message,
                        message_type, expires_at, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .integer(message.appID), .text(message.msgID), .text(message.userID),
                        .text(message.channelID), SQLValue(message.msgKey), .text(message.message),
                        .integer(Int64(message.messageType)), .integer(SQLTime.milliseconds(message.expiresAt)),
                        .integer(SQLTime.milliseconds(message.createdAt)),
                    ])
            }
        }
    }

    /// Unexpired kept messages of the user (and channel), oldest first, `start` rows skipped.
    func keptMessages(appID: Int64, userID: String, channelID: String?, now: Date, start: Int, limit: Int)
        async throws -> (total: Int, messages: [BaiduKeptMessage])
    {
        var condition = "app_id = ? AND user_id = ? AND expires_at > ?"
        var arguments: [SQLValue] = [.integer(appID), .text(userID), .integer(SQLTime.milliseconds(now))]
        if let channelID {
            condition += " AND channel_id = ?"
            arguments.append(.text(channelID))
        }
        let filter = condition
        let filterArguments = arguments
        return try await database.read { db in
            let total = try Self.count(db, "SELECT count(*) FROM baidu_kept_messages WHERE \(filter)", filterArguments)
            let rows = try db.query(
                """
                SELECT app_id, msg_id, user_id, channel_id, msg_key, message, message_type, expires_at, created_at
                FROM baidu_kept_messages WHERE \(filter) ORDER BY id LIMIT ? OFFSET ?
                """, filterArguments + Self.window(start: start, limit: limit))
            let messages = rows.map { row in
                BaiduKeptMessage(
                    appID: row[0].int ?? 0, msgID: row[1].string ?? "", userID: row[2].string ?? "",
                    channelID: row[3].string ?? "", msgKey: row[4].string, message: row[5].string ?? "",
                    messageType: Int(row[6].int ?? 0), expiresAt: SQLTime.date(row[7].int ?? 0),
                    createdAt: SQLTime.date(row[8].int ?? 0))
            }
            return (total, messages)
        }
    }

    /// Deletes the user's kept messages with these ids; returns the ids that were deleted, in
    /// the order asked.
    func deleteKeptMessages(appID: Int64, userID: String, channelID: String?, msgIDs: [String]) async throws
        -> [String]
    {
        let wanted = Array(Set(msgIDs))
        guard !wanted.isEmpty else { return [] }
        let deleted = try await database.write { db in
            var deleted = Set<String>()
            for chunk in wanted.chunks(ofCount: Self.chunkSize) {
                var filter = "app_id = ? AND user_id = ? AND msg_id IN (\(SQLList.placeholders(chunk.count)))"
                var arguments: [SQLValue] = [.integer(appID), .text(userID)] + chunk.map(SQLValue.text)
                if let channelID {
                    filter += " AND channel_id = ?"
                    arguments.append(.text(channelID))
                }
                for row in try db.query("SELECT DISTINCT msg_id FROM baidu_kept_messages WHERE \(filter)", arguments) {
                    if let id = row[0].string { deleted.insert(id) }
                }
                try db.execute("DELETE FROM baidu_kept_messages WHERE \(filter)", arguments)
            }
            return deleted
        }
        return msgIDs.filter { deleted.contains($0) }.reduce(into: [String]()) { result, id in
            if !result.contains(id) { result.append(id) }
        }
    }

    /// Drops every kept row of one message (its push was refused after they were written).
    func discardKeptMessages(appID: Int64, msgID: String) async throws {
        try await database.write { db in
            try db.execute(
                "DELETE FROM baidu_kept_messages WHERE app_id = ? AND msg_id = ?", [.integer(appID), .text(msgID)])
        }
    }

    // MARK: Messages, timers, topics, statistics
    //
    // Baidu's message lookups filter the core `messages` table on the labels the pusher
    // stored (`timer_id`, `topic_id`), spelled by the database's dialect (`SQLDialect.jsonText`)
    // exactly as the expression indexes are (SQLite's core v3 migration, PostgreSQL's
    // `1-kept-messages-by-channel` step), so the indexes apply. A message's delivered count is
    // read as the store keeps it (`SQLDialect.messageCounter`: per slice on PostgreSQL).

    /// Baidu messages of the app with these `msg_id`s, in the order asked (unknown ones left out).
    func messages(appID: Int64, msgIDs: [String]) async throws -> [MessageRecord] {
        var records: [MessageRecord] = []
        for msgID in msgIDs {
            let id = try await database.read { db in
                try db.queryOne(
                    "SELECT id FROM messages WHERE app_id = ? AND vendor = 'baidu' AND vendor_message_id = ?",
                    [.integer(appID), .text(msgID)])?[0].int
            }
            if let id, let record = try await store.message(id: id) { records.append(record) }
        }
        return records
    }

    /// Scheduled Baidu messages still waiting (one `timer_id` when given), by send time.
    func timers(appID: Int64, timerID: String?, start: Int, limit: Int) async throws
        -> (total: Int, messages: [MessageRecord])
    {
        let timer = database.dialect.jsonText("labels", "timer_id")
        var condition = """
            app_id = ? AND vendor = 'baidu' AND state = 'scheduled'
                AND \(timer) IS NOT NULL
            """
        var arguments: [SQLValue] = [.integer(appID)]
        if let timerID {
            condition += " AND \(timer) = ?"
            arguments.append(.text(timerID))
        }
        let filter = condition
        let filterArguments = arguments
        let (total, ids) = try await database.read { db in
            let total = try Self.count(db, "SELECT count(*) FROM messages WHERE \(filter)", filterArguments)
            let ids = try db.query(
                "SELECT id FROM messages WHERE \(filter) ORDER BY send_at, id LIMIT ? OFFSET ?",
                filterArguments + Self.window(start: start, limit: limit)
            ).compactMap { $0[0].int }
            return (total, ids)
        }
        return (total, try await records(ids))
    }

    /// The message behind a `timer_id`, whatever its state.
    func timerMessage(appID: Int64, timerID: String) async throws -> MessageRecord? {
        let timer = database.dialect.jsonText("labels", "timer_id")
        let id = try await database.read { db in
            try db.queryOne(
                """
                SELECT id FROM messages
                WHERE app_id = ? AND vendor = 'baidu' AND \(timer) = ?
                """, [.integer(appID), .text(timerID)])?[0].int
        }
        guard let id else { return nil }
        return try await store.message(id: id)
    }

    /// Baidu messages whose label `label` is `value` and that have started sending (or
    /// completed), sent within `from...to` when given, newest first.
    func sentMessages(
        appID: Int64, label: String, value: String, from: Date?, to: Date?, start: Int, limit: Int
    ) async throws -> [MessageRecord] {
        // The label goes into the SQL text so the expression indexes apply; only plain names.
        guard !label.isEmpty, label.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (97...122).contains($0) }) else {
            throw StoreError(.conflict, "label name \(label) is not [a-z_]+")
        }
        let sentAt = "coalesce(started_at, send_at, created_at)"
        var condition = """
            app_id = ? AND vendor = 'baidu' AND \(database.dialect.jsonText("labels", label)) = ?
                AND (started_at IS NOT NULL OR state IN ('sending', 'completed'))
            """
        var arguments: [SQLValue] = [.integer(appID), .text(value)]
        if let from {
            condition += " AND \(sentAt) >= ?"
            arguments.append(.integer(SQLTime.milliseconds(from)))
        }
        if let to {
            condition += " AND \(sentAt) <= ?"
            arguments.append(.integer(SQLTime.milliseconds(to)))
        }
        let filter = condition
        let filterArguments = arguments
        let ids = try await database.read { db in
            try db.query(
                "SELECT id FROM messages WHERE \(filter) ORDER BY \(sentAt) DESC, id DESC LIMIT ? OFFSET ?",
                filterArguments + Self.window(start: start, limit: limit)
            ).compactMap { $0[0].int }
        }
        return try await records(ids)
    }

    /// Topics (`labels["topic_id"]`) of the app's Baidu messages, by first use.
    func topics(appID: Int64, start: Int, limit: Int) async throws -> (total: Int, topics: [BaiduTopicSummary]) {
        let topic = database.dialect.jsonText("labels", "topic_id")
        let delivered = database.dialect.messageCounter("delivered")
        return try await database.read { db in
            let total = try Self.count(
                db,
                """
                SELECT count(DISTINCT \(topic)) FROM messages
                WHERE app_id = ? AND vendor = 'baidu' AND \(topic) IS NOT NULL
                """, [.integer(appID)])
            let rows = try db.query(
                """
                SELECT \(topic) AS topic, min(created_at), max(created_at), CAST(sum(coalesce(total, 0)) AS BIGINT),
                    CAST(sum(\(delivered)) AS BIGINT)
                FROM messages WHERE app_id = ? AND vendor = 'baidu' AND \(topic) IS NOT NULL
                GROUP BY topic ORDER BY min(created_at), topic LIMIT ? OFFSET ?
                """, [.integer(appID)] + Self.window(start: start, limit: limit))
            let topics = rows.map { row in
                BaiduTopicSummary(
                    topicID: row[0].string ?? "", firstPushAt: SQLTime.date(row[1].int ?? 0),
                    lastPushAt: SQLTime.date(row[2].int ?? 0), pushed: Int(row[3].int ?? 0),
                    delivered: Int(row[4].int ?? 0))
            }
            return (total, topics)
        }
    }

    /// Delivered counts of a topic's messages per day since `since`, keyed by the day's first
    /// instant in the fixed UTC offset `utcOffset` (seconds).
    func topicDeliveries(appID: Int64, topicID: String, since: Date, utcOffset: Int) async throws -> [Date: Int] {
        let offset = Int64(utcOffset) * 1000
        let topic = database.dialect.jsonText("labels", "topic_id")
        let delivered = database.dialect.messageCounter("delivered")
        let days = try await database.read { db in
            try db.query(
                """
                SELECT (created_at + ?) / ? AS day, CAST(sum(\(delivered)) AS BIGINT) FROM messages
                WHERE app_id = ? AND vendor = 'baidu' AND \(topic) = ?
                    AND created_at >= ?
                GROUP BY day
                """,
                [
                    .integer(offset), .integer(Self.dayMilliseconds), .integer(appID), .text(topicID),
                    .integer(SQLTime.milliseconds(since)),
                ]
            ).map { row in (row[0].int ?? 0, Int(row[1].int ?? 0)) }
        }
        var result: [Date: Int] = [:]
        for (day, delivered) in days {
            result[SQLTime.date(day * Self.dayMilliseconds - offset)] = delivered
        }
        return result
    }

    /// Binding statistics for the `days` days ending with the one containing `now`.
    func deviceDays(appID: Int64, now: Date, days: Int, utcOffset: Int) async throws -> [BaiduDeviceDay] {
        let offset = Int64(utcOffset) * 1000
        let dayLength = Self.dayMilliseconds
        let today = Self.floorDivide(SQLTime.milliseconds(now) + offset, dayLength)
        let firstDay = today - Int64(max(1, days)) + 1
        let firstStart = firstDay * dayLength - offset
        let (events, active, boundNow) = try await database.read { db in
            var events: [Int64: (bound: Int, unbound: Int)] = [:]
            for row in try db.query(
                """
                SELECT (at + ?) / ? AS day, kind, count(*) FROM baidu_binding_events
                WHERE app_id = ? GROUP BY day, kind
                """, [.integer(offset), .integer(dayLength), .integer(appID)])
            {
                let day = row[0].int ?? 0
                let count = Int(row[2].int ?? 0)
                if row[1].string == "bind" {
                    events[day, default: (0, 0)].bound += count
                } else {
                    events[day, default: (0, 0)].unbound += count
                }
            }
            var active: [Int64: Int] = [:]
            for row in try db.query(
                """
                SELECT (d.updated_at + ?) / ? AS day, count(*) FROM baidu_bindings b
                JOIN devices d ON d.id = b.device_id
                WHERE b.app_id = ? AND d.updated_at >= ? GROUP BY day
                """, [.integer(offset), .integer(dayLength), .integer(appID), .integer(firstStart)])
            {
                active[row[0].int ?? 0] = Int(row[1].int ?? 0)
            }
            let boundNow = try Self.count(
                db, "SELECT count(*) FROM baidu_bindings WHERE app_id = ?",
                [.integer(appID)])
            return (events, active, boundNow)
        }
        var result: [BaiduDeviceDay] = []
        for day in firstDay...today {
            let cumulative = events.filter { $0.key <= day }.reduce(0) { $0 + $1.value.bound }
            let later = events.filter { $0.key > day }
            let total = boundNow - later.reduce(0) { $0 + $1.value.bound } + later.reduce(0) { $0 + $1.value.unbound }
            result.append(
                BaiduDeviceDay(
                    start: SQLTime.date(day * dayLength - offset), bound: events[day]?.bound ?? 0,
                    unbound: events[day]?.unbound ?? 0, active: active[day] ?? 0, cumulative: cumulative,
                    total: max(0, total)))
        }
        return result
    }

    // MARK: Plumbing

    private var nowMilliseconds: Int64 { SQLTime.milliseconds(clock.now) }

    private func records(_ ids: [Int64]) async throws -> [MessageRecord] {
        var records: [MessageRecord] = []
        for id in ids {
            if let record = try await store.message(id: id) { records.append(record) }
        }
        return records
    }

    private static func tag(_ row: SQLRow) -> BaiduTag {
        BaiduTag(id: row[0].int ?? 0, name: row[1].string ?? "", createdAt: row[2].int.map(SQLTime.date))
    }

    /// Inserts the tag unless the app has it; whether it was inserted.
    private static func insertTag(_ db: any SQLExecutor, appID: Int64, name: String, now: Int64) throws -> Bool {
        try db.execute(
            """
            INSERT INTO tags (app_id, name, created_at)
            SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM tags WHERE app_id = ? AND name = ?)
            """, [.integer(appID), .text(name), .integer(now), .integer(appID), .text(name)])
        return db.changedRows > 0
    }

    private static func existingTag(_ db: any SQLExecutor, appID: Int64, name: String) throws -> BaiduTag {
        guard
            let row = try db.queryOne(
                "SELECT id, name, created_at FROM tags WHERE app_id = ? AND name = ?", [.integer(appID), .text(name)])
        else { throw StoreError.notFound("tag \(name) of app \(appID)") }
        return tag(row)
    }

    private static func count(_ db: any SQLExecutor, _ sql: String, _ arguments: [SQLValue]) throws -> Int {
        Int(try db.queryOne(sql, arguments)?[0].int ?? 0)
    }

    private static func window(start: Int, limit: Int) -> [SQLValue] {
        [.integer(Int64(max(0, limit))), .integer(Int64(max(0, start)))]
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return (value % divisor < 0) ? quotient - 1 : quotient
    }
}
