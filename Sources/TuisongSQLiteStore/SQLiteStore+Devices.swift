import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// The device queries SQLite writes by hand (the rest is written once, `SQLStoreBackend+Devices`):
// registering (group commit).
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

    /// `applyRegistration` in a write of the shared queries (`bindDevice`).
    public func sqlRegister(_ executor: any SQLExecutor, appID: Int64, _ registration: DeviceRegistration, now: Int64)
        throws -> Int64
    {
        guard let grdb = executor as? GRDBExecutor else {
            throw StoreError(.unavailable, "a registration was handed another store's executor")
        }
        return try Self.applyRegistration(grdb.db, appID: appID, registration, now: now).device.id
    }

    // MARK: - Statements run on the writer

    /// The device upsert both backends write (`Rows.deviceUpsertConflict`), with SQLite's
    /// numbered placeholders: `?1` app, `?2` token, `?3` environment, `?4` user, `?5` locale,
    /// `?6` now, `?7` credential selector, `?8` channel.
    static let upsertDeviceSQL = """
        INSERT INTO devices (\(Rows.deviceInsertColumns))
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8)
        \(Rows.deviceUpsertConflict)
        RETURNING \(Rows.deviceColumns)
        """

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
        let upsert = try db.cachedStatement(sql: Self.upsertDeviceSQL)
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
}
