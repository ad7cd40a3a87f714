import Foundation
import GRDB
import TuisongCore

// The `AppStore` half of `Store`.
extension SQLiteStore {
    /// Throws `StoreError(.conflict, …)` when another app already has this API key hash.
    public func createApp(name: String, bundleID: String, apiKeyHash: String) async throws -> App {
        let now = nowMilliseconds
        return try await write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        INSERT INTO apps (name, bundle_id, api_key_hash, vendor_settings, created_at, updated_at)
                        VALUES (?, ?, ?, '{}', ?, ?)
                        RETURNING \(Rows.appColumns)
                        """,
                    arguments: [name, bundleID, apiKeyHash, now, now])
            else {
                throw StoreError(.unavailable, "INSERT INTO apps … RETURNING returned no row")
            }
            return try Rows.app(row)
        }
    }

    public func app(id: Int64) async throws -> App? {
        try await pointLookUp(.appByID, [.int64(id)]) { row in try Rows.app(columns: row) }
    }

    /// The app whose native API key hashes to `apiKeyHash`; on the path of every native
    /// API request whose key is not cached.
    public func app(apiKeyHash: String) async throws -> App? {
        try await pointLookUp(.appByAPIKeyHash, [.text(apiKeyHash)]) { row in try Rows.app(columns: row) }
    }

    /// The app whose `vendorSettings[vendor][setting]` is `value`: how a provider finds the app
    /// a request names by a setting declared unique across apps (a vendor's API key or
    /// app id). A point lookup on the calling thread; it reads every app's settings (apps
    /// are few), so it is meant for unique settings, the first app by id answering otherwise.
    public func app(vendor: String, setting: String, value: String) async throws -> App? {
        // Quoted JSON path labels, so a name is taken literally (SQLite has no escape inside
        // them; vendor and setting names are plain words).
        guard !vendor.contains("\""), !setting.contains("\"") else { return nil }
        return try await pointLookUp(.appByVendorSetting, [.text("$.\"\(vendor)\".\"\(setting)\""), .text(value)]) {
            row in try Rows.app(columns: row)
        }
    }

    /// Every app, by id.
    public func apps() async throws -> [App] {
        try await readOneStatement { db in
            let rows = try Row.fetchAll(db, sql: "SELECT \(Rows.appColumns) FROM apps ORDER BY id")
            return try rows.map(Rows.app)
        }
    }

    /// Replaces name, bundle id, API key hash and vendor settings; `updatedAt` becomes now
    /// and `createdAt` is kept whatever `app` says. Throws `.notFound` for an unknown id and
    /// `.conflict` when the API key hash belongs to another app.
    public func updateApp(_ app: App) async throws {
        let settings = try Rows.vendorSettingsJSON(app.vendorSettings)
        let now = nowMilliseconds
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE apps SET name = ?, bundle_id = ?, api_key_hash = ?, vendor_settings = ?,
                        updated_at = ?
                    WHERE id = ?
                    """,
                arguments: [app.name, app.bundleID, app.apiKeyHash, settings, now, app.id])
            if db.changesCount == 0 { throw StoreError.notFound("app \(app.id)") }
        }
    }

    /// Deletes the app with its credentials, devices, tags, templates and push settings
    /// (foreign keys cascade).
    public func deleteApp(id: Int64) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM apps WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }
}
