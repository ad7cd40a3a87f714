import Foundation
import TuisongCore

// AppStore, written once; the lookups by id, API key hash and vendor setting are point lookups
// (`SQLPointLookup`), which SQLite runs on its point readers.
extension SQLStoreBackend {
    /// Throws `StoreError(.conflict, …)` when another app already has this API key hash.
    public func createApp(name: String, bundleID: String, apiKeyHash: String) async throws -> App {
        let now = nowMilliseconds
        return try await sqlWriteStatement { db in
            try Rows.app(
                columns: Rows.returned(
                    db,
                    """
                    INSERT INTO apps (name, bundle_id, api_key_hash, vendor_settings, created_at, updated_at)
                    VALUES (\(name), \(bundleID), \(apiKeyHash), '{}', \(now), \(now))
                    RETURNING \(raw: Rows.appColumns)
                    """, "INSERT INTO apps"))
        }
    }

    /// Every app, by id.
    public func apps() async throws -> [App] {
        try await sqlRead { db in
            try db.fetchAll("SELECT \(raw: Rows.appColumns) FROM apps ORDER BY id").map { try Rows.app(columns: $0) }
        }
    }

    /// Replaces name, bundle id, API key hash, vendor settings and `appReceipts`; `updatedAt` becomes now
    /// and `createdAt` is kept whatever `app` says. Throws `.notFound` for an unknown id and
    /// `.conflict` when the API key hash belongs to another app.
    public func updateApp(_ app: App) async throws {
        let settings = try Rows.vendorSettingsJSON(app.vendorSettings)
        let now = nowMilliseconds
        try await sqlWriteStatement { db in
            let changed = try db.run(
                """
                UPDATE apps SET name = \(app.name), bundle_id = \(app.bundleID), api_key_hash = \(app.apiKeyHash),
                    vendor_settings = \(settings), app_receipts = \(app.appReceipts ? 1 : 0), updated_at = \(now)
                WHERE id = \(app.id)
                """)
            if changed == 0 { throw StoreError.notFound("app \(app.id)") }
        }
    }

    /// Deletes the app with its credentials, devices, tags, templates and push settings
    /// (foreign keys cascade).
    public func deleteApp(id: Int64) async throws -> Bool {
        try await sqlWriteStatement { db in try db.run("DELETE FROM apps WHERE id = \(id)") > 0 }
    }
}
