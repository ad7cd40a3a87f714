import Foundation
import TuisongCore

// Devices and tags, written once. Each backend keeps by hand what differs: registering (SQLite's
// group commit, PostgreSQL's upsert by unnest and bulk import by COPY). The lookups by token, by
// id and with tags are point lookups (`SQLPointLookup`). A list of ids goes in `SQLList`
// chunks, on both databases.
extension SQLStoreBackend {
    /// The app's devices among `ids`, in id order (unknown ids left out). The list goes in
    /// padded `SQLList` chunks: a handful of statement texts, each prepared once per connection.
    public func devices(appID: Int64, ids: [Int64]) async throws -> [Device] {
        let chunks = SQLList.chunks(ids.map { SQLValue.integer($0) })
        guard !chunks.isEmpty else { return [] }
        return try await sqlRead { db in
            var devices: [Device] = []
            for list in chunks {
                devices += try db.fetchAll(
                    """
                    SELECT \(raw: Rows.deviceColumns) FROM devices
                    WHERE app_id = \(appID) AND id IN (\(SQLQuery.list(list)))
                    """
                ).map { try Rows.device(columns: $0) }
            }
            return devices.sorted { $0.id < $1.id }
        }
    }

    /// Deletes the device and its tag memberships; what was not sent to it yet (held, queued,
    /// retried) is cancelled in the same transaction (`DeliveryCancellation`).
    public func deleteDevice(appID: Int64, token: DeviceToken) async throws -> Bool {
        let now = nowMilliseconds
        return try await sqlWrite { db in
            try DeliveryCancellation.cancel(
                db, devices: "SELECT id FROM devices WHERE app_id = \(appID) AND token = \(token.value)",
                reason: DeliveryCancellation.deviceDeleted, now: now)
            return try db.run("DELETE FROM devices WHERE app_id = \(appID) AND token = \(token.value)") > 0
        }
    }

    /// Every device of the app, valid or invalidated.
    public func deviceCount(appID: Int64) async throws -> Int {
        try await sqlRead { db in
            Int(try db.fetchOne("SELECT count(*) FROM devices WHERE app_id = \(appID)")?[0].int ?? 0)
        }
    }

    /// Marks the device invalid after its service said the token is gone (an `.invalidate`
    /// outcome); it receives no pushes until it registers again.
    ///
    /// - Parameters:
    ///   - since: when the service says the token stopped being valid (a 410's `timestamp`)
    ///     (`nil`: now). A device whose `updatedAt` (its last registration) is later holds
    ///     a token the app confirmed again, so it is left alone.
    /// - Returns: `false` when there is no such device or it registered after `since`.
    public func invalidateDevice(id: Int64, reason: String, since: Date? = nil) async throws -> Bool {
        let now = nowMilliseconds
        let cutoff = since.map(SQLTime.milliseconds) ?? now
        return try await sqlWriteStatement { db in
            try db.run(
                """
                UPDATE devices SET invalidated_at = \(now), invalid_reason = \(reason)
                WHERE id = \(id) AND updated_at <= \(cutoff)
                """) > 0
        }
    }

    // MARK: Tags

    /// Adds a tag to a registered device (no-op if present); `.notFound` for an unknown device.
    public func addTag(appID: Int64, token: DeviceToken, tag: TagName) async throws {
        try await sqlWrite { db in
            let deviceID = try Self.existingDeviceID(db, appID: appID, token: token)
            try db.run(
                "INSERT INTO tags (app_id, name) VALUES (\(appID), \(tag.value)) ON CONFLICT (app_id, name) DO NOTHING")
            try db.run(
                """
                INSERT INTO device_tags (tag_id, device_id)
                SELECT id, \(deviceID) FROM tags WHERE app_id = \(appID) AND name = \(tag.value)
                ON CONFLICT DO NOTHING
                """)
        }
    }

    /// The tag row itself stays (it is shared by the app's other devices and costs nothing).
    public func removeTag(appID: Int64, token: DeviceToken, tag: TagName) async throws -> Bool {
        try await sqlWrite { db in
            let deviceID = try Self.existingDeviceID(db, appID: appID, token: token)
            return try db.run(
                """
                DELETE FROM device_tags
                WHERE device_id = \(deviceID) AND tag_id = (SELECT id FROM tags WHERE app_id = \(appID) AND name = \(tag.value))
                """) > 0
        }
    }

    /// Tags of a device, sorted by code point; `.notFound` for an unknown device.
    public func tags(appID: Int64, token: DeviceToken) async throws -> [String] {
        try await sqlRead { db in
            let rows = try db.fetchAll(
                """
                SELECT d.id, t.name FROM devices d
                LEFT JOIN device_tags dt ON dt.device_id = d.id
                LEFT JOIN tags t ON t.id = dt.tag_id
                WHERE d.app_id = \(appID) AND d.token = \(token.value)
                ORDER BY t.name\(raw: db.dialect.binaryCollation)
                """)
            guard !rows.isEmpty else { throw StoreError.notFound("device \(token.value) of app \(appID)") }
            return rows.compactMap { $0.isNull(1) ? nil : $0.string(1) }
        }
    }

    /// Devices carrying `tag`, by ascending id, invalidated ones included (the dispatcher
    /// decides what to skip). `limit` is clamped to 1…1000; an unknown tag is an empty page.
    /// Throws `.invalidCursor` for a cursor this store did not issue.
    public func devices(appID: Int64, tag: TagName, cursor: String?, limit: Int) async throws -> Page<Device> {
        let afterID = try cursor.map(Cursor.decode) ?? 0
        let pageSize = min(max(limit, 1), 1000)
        let devices = try await sqlRead { db in
            // One more than the page: if it comes back, there is a next page.
            try db.fetchAll(
                """
                SELECT \(raw: Rows.qualifiedDeviceColumns)
                FROM tags t
                JOIN device_tags dt ON dt.tag_id = t.id
                JOIN devices d ON d.id = dt.device_id
                WHERE t.app_id = \(appID) AND t.name = \(tag.value) AND dt.device_id > \(afterID)
                ORDER BY dt.device_id
                LIMIT \(pageSize + 1)
                """
            ).map { try Rows.device(columns: $0) }
        }
        if devices.count > pageSize {
            let page = Array(devices.prefix(pageSize))
            return Page(items: page, nextCursor: Cursor.encode(page[page.count - 1].id))
        }
        return Page(items: devices, nextCursor: nil)
    }

    private static func existingDeviceID(_ db: any SQLExecutor, appID: Int64, token: DeviceToken) throws -> Int64 {
        guard
            let id = try db.fetchOne("SELECT id FROM devices WHERE app_id = \(appID) AND token = \(token.value)")?[0]
                .int
        else { throw StoreError.notFound("device \(token.value) of app \(appID)") }
        return id
    }
}
