import Foundation
import GRDB
import TuisongCore

// The `DeviceStore` half of `Store`, plus the device queries the gateway needs beyond it.
extension SQLiteStore {
    /// Registers or updates the device (app, token) and returns it with `created`.
    ///
    /// The registration is group-committed: concurrent calls are written by the single
    /// writer in one transaction, and each call returns once that transaction has committed
    /// (durable as `Options.synchronousFull` says). Registering the same token from many
    /// tasks at once yields one row; the last registration applied wins.
    ///
    /// Throws `.notFound` when the app does not exist.
    public func registerDevice(appID: Int64, _ registration: DeviceRegistration) async throws -> (
        device: Device, created: Bool
    ) {
        try await batcher.submit(appID: appID, registration)
    }

    /// Registers many devices in one transaction, for imports and seeding: either all of
    /// them are stored or, on an error, none. Same semantics per device as
    /// `registerDevice(appID:_:)`; a token repeated in `registrations` is applied in order.
    ///
    /// - Returns: how many devices were created (the others already existed and were updated).
    public func registerDevices(
        appID: Int64, _ registrations: [DeviceRegistration]
    ) async throws -> Int {
        let now = nowMilliseconds
        return try await write { db in
            var created = 0
            for registration in registrations {
                if try Self.applyRegistration(db, appID: appID, registration, now: now).created {
                    created += 1
                }
            }
            return created
        }
    }

    /// One statement: the tags ride along as a unit-separator-joined column.
    public func deviceWithTags(appID: Int64, token: DeviceToken) async throws -> (device: Device, tags: [String])? {
        try await pointLookUp(.deviceWithTagsByToken, [.int64(appID), .text(token.value)]) { row in
            let tags =
                row.optionalString(Int32(Rows.deviceColumnCount)).map {
                    $0.split(separator: "\u{1F}").map(String.init).sorted()
                } ?? []
            return (try Rows.device(columns: row), tags)
        }
    }

    public func device(appID: Int64, token: DeviceToken) async throws -> Device? {
        try await pointLookUp(.deviceByToken, [.int64(appID), .text(token.value)]) { row in
            try Rows.device(columns: row)
        }
    }

    public func device(id: Int64) async throws -> Device? {
        try await pointLookUp(.deviceByID, [.int64(id)]) { row in try Rows.device(columns: row) }
    }

    public func devices(appID: Int64, ids: [Int64]) async throws -> [Device] {
        let unique = Array(Set(ids))
        guard !unique.isEmpty else { return [] }
        let devices = try await read { db in
            var devices: [Device] = []
            // Chunks far below SQLite's limit on parameters.
            for chunk in unique.chunks(ofCount: 500) {
                let marks = SQLList.placeholders(chunk.count)
                devices += try Row.fetchAll(
                    db, sql: "SELECT \(Rows.deviceColumns) FROM devices WHERE app_id = ? AND id IN (\(marks))",
                    arguments: StatementArguments([appID] + Array(chunk))
                ).map(Rows.device)
            }
            return devices
        }
        return devices.sorted { $0.id < $1.id }
    }

    /// Deletes the device and its tag memberships.
    public func deleteDevice(appID: Int64, token: DeviceToken) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM devices WHERE app_id = ? AND token = ?",
                arguments: [appID, token.value])
            return db.changesCount > 0
        }
    }

    /// Every device of the app, valid or invalidated.
    public func deviceCount(appID: Int64) async throws -> Int {
        try await readOneStatement { db in
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM devices WHERE app_id = ?", arguments: [appID]) ?? 0
        }
    }

    /// Marks the device invalid after APNs answered 410 (Unregistered, ExpiredToken) or
    /// BadDeviceToken; it receives no pushes until it registers again.
    ///
    /// - Parameters:
    ///   - since: APNs's `timestamp` of a 410, the moment the token stopped being valid
    ///     (`nil`: now). A device whose `updatedAt` (its last registration) is later holds
    ///     a token the app confirmed again, so it is left alone.
    /// - Returns: `false` when there is no such device or it registered after `since`.
    public func invalidateDevice(
        id: Int64, reason: String, since: Date? = nil
    ) async throws -> Bool {
        let now = nowMilliseconds
        let cutoff = since.map(SQLTime.milliseconds) ?? now
        return try await write { db in
            try db.execute(
                sql: """
                    UPDATE devices SET invalidated_at = ?, invalid_reason = ?
                    WHERE id = ? AND updated_at <= ?
                    """,
                arguments: [now, reason, id, cutoff])
            return db.changesCount > 0
        }
    }

    // MARK: Tags

    public func addTag(appID: Int64, token: DeviceToken, tag: TagName) async throws {
        try await write { db in
            let deviceID = try Self.existingDeviceID(db, appID: appID, token: token)
            let tagID = try Self.tagID(db, appID: appID, name: tag.value)
            try db.execute(
                sql: "INSERT OR IGNORE INTO device_tags (tag_id, device_id) VALUES (?, ?)",
                arguments: [tagID, deviceID])
        }
    }

    /// The tag row itself stays (it is shared by the app's other devices and costs nothing).
    public func removeTag(appID: Int64, token: DeviceToken, tag: TagName) async throws -> Bool {
        try await write { db in
            let deviceID = try Self.existingDeviceID(db, appID: appID, token: token)
            try db.execute(
                sql: """
                    DELETE FROM device_tags
                    WHERE device_id = ? AND tag_id = (SELECT id FROM tags WHERE app_id = ? AND name = ?)
                    """,
                arguments: [deviceID, appID, tag.value])
            return db.changesCount > 0
        }
    }

    public func tags(appID: Int64, token: DeviceToken) async throws -> [String] {
        try await read { db in
            let deviceID = try Self.existingDeviceID(db, appID: appID, token: token)
            return try String.fetchAll(
                db,
                sql: """
                    SELECT t.name FROM device_tags dt JOIN tags t ON t.id = dt.tag_id
                    WHERE dt.device_id = ? ORDER BY t.name
                    """,
                arguments: [deviceID])
        }
    }

    /// Devices carrying `tag`, by ascending id, invalidated ones included (the dispatcher
    /// decides what to skip). `limit` is clamped to 1…1000; an unknown tag is an empty page.
    /// Throws `.invalidCursor` for a cursor this store did not issue.
    public func devices(
        appID: Int64, tag: TagName, cursor: String?, limit: Int
    ) async throws -> Page<Device> {
        let afterID = try cursor.map(Cursor.decode) ?? 0
        let pageSize = min(max(limit, 1), 1000)
        let devices = try await readOneStatement { db in
            // One more than the page: if it comes back, there is a next page.
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Rows.qualifiedDeviceColumns)
                    FROM tags t
                    JOIN device_tags dt ON dt.tag_id = t.id
                    JOIN devices d ON d.id = dt.device_id
                    WHERE t.app_id = ? AND t.name = ? AND dt.device_id > ?
                    ORDER BY dt.device_id
                    LIMIT ?
                    """)
            let rows = try Row.fetchAll(
                statement, arguments: [appID, tag.value, afterID, pageSize + 1])
            return try rows.map(Rows.device)
        }
        if devices.count > pageSize {
            let page = Array(devices.prefix(pageSize))
            return Page(items: page, nextCursor: Cursor.encode(page[page.count - 1].id))
        }
        return Page(items: devices, nextCursor: nil)
    }

    // MARK: - Statements run on the writer

    /// Applies one registration inside the caller's transaction. Runs only on the writer
    /// connection, so the existence check and the upsert cannot interleave with another
    /// registration of the same token.
    static func applyRegistration(
        _ db: Database, appID: Int64, _ registration: DeviceRegistration, now: Int64
    ) throws -> (device: Device, created: Bool) {
        // The upsert alone cannot say whether it inserted or updated; the lookup before it
        // can, and costs one index probe.
        let existing = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM devices WHERE app_id = ? AND token = ?"),
            arguments: [appID, registration.token.value])
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO devices (app_id, token, environment, user, locale, created_at, updated_at,
                    credential_selector, channel)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8)
                ON CONFLICT (app_id, token) DO UPDATE SET
                    environment = excluded.environment,
                    channel = excluded.channel,
                    user = coalesce(excluded.user, devices.user),
                    locale = coalesce(excluded.locale, devices.locale),
                    credential_selector = coalesce(excluded.credential_selector, devices.credential_selector),
                    updated_at = excluded.updated_at,
                    invalidated_at = NULL,
                    invalid_reason = NULL
                RETURNING \(Rows.deviceColumns)
                """)
        guard
            let row = try Row.fetchOne(
                upsert,
                arguments: [
                    appID, registration.token.value, registration.environment.rawValue,
                    registration.user, registration.locale, now, registration.credentialSelector,
                    registration.channel.rawValue,
                ])
        else {
            throw StoreError(.unavailable, "the device upsert returned no row")
        }
        let device = try Rows.device(row)
        if let tags = registration.tags {
            try replaceTags(
                db, appID: appID, deviceID: device.id, with: tags, deviceIsNew: existing == nil)
        }
        return (device, existing == nil)
    }

    private static func replaceTags(
        _ db: Database, appID: Int64, deviceID: Int64, with tags: [TagName], deviceIsNew: Bool
    ) throws {
        if !deviceIsNew {
            try db.cachedStatement(sql: "DELETE FROM device_tags WHERE device_id = ?")
                .execute(arguments: [deviceID])
        }
        let insert = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO device_tags (tag_id, device_id) VALUES (?, ?)")
        for tag in tags {
            try insert.execute(arguments: [try tagID(db, appID: appID, name: tag.value), deviceID])
        }
    }

    /// The id of the app's tag `name`, creating the tag if needed. Writer only.
    private static func tagID(_ db: Database, appID: Int64, name: String) throws -> Int64 {
        if let id = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM tags WHERE app_id = ? AND name = ?"),
            arguments: [appID, name])
        {
            return id
        }
        try db.cachedStatement(sql: "INSERT INTO tags (app_id, name) VALUES (?, ?)")
            .execute(arguments: [appID, name])
        return db.lastInsertedRowID
    }

    private static func existingDeviceID(
        _ db: Database, appID: Int64, token: DeviceToken
    ) throws -> Int64 {
        guard
            let id = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT id FROM devices WHERE app_id = ? AND token = ?"),
                arguments: [appID, token.value])
        else {
            throw StoreError.notFound("device \(token.value) of app \(appID)")
        }
        return id
    }
}
