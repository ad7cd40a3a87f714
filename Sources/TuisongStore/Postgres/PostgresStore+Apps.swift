import Foundation
import TuisongCore
import TuisongPostgres

// The `AppStore` half of `Store`; SQLiteStore+Apps.swift is the contract.
extension PostgresStore {
    /// Throws `StoreError(.conflict, …)` when another app already has this API key hash.
    public func createApp(name: String, bundleID: String, apiKeyHash: String) async throws -> App {
        let now = nowMilliseconds
        return try await writeStatement { conn in
            let rows = try conn.run(
                """
                INSERT INTO apps (name, bundle_id, api_key_hash, vendor_settings, created_at, updated_at)
                VALUES ($1, $2, $3, '{}', $4, $4)
                RETURNING \(Self.appColumns)
                """,
                [.text(name), .text(bundleID), .text(apiKeyHash), .int(now)]
            ).rows
            guard let row = rows.first else {
                throw StoreError(.unavailable, "INSERT INTO apps … RETURNING returned no row")
            }
            return try Self.app(row)
        }
    }

    public func app(id: Int64) async throws -> App? {
        try await read { conn in
            try conn.run("SELECT \(Self.appColumns) FROM apps WHERE id = $1", [.int(id)]).rows.first.map(Self.app)
        }
    }

    /// The app whose native API key hashes to `apiKeyHash`; on the path of every native
    /// API request whose key is not cached.
    public func app(apiKeyHash: String) async throws -> App? {
        try await read { conn in
            try conn.run("SELECT \(Self.appColumns) FROM apps WHERE api_key_hash = $1", [.text(apiKeyHash)])
                .rows.first.map(Self.app)
        }
    }

    /// The app whose `vendorSettings[vendor][setting]` is `value`, the first by id when several
    /// answer (meant for settings declared unique across apps).
    public func app(vendor: String, setting: String, value: String) async throws -> App? {
        // As SQLite's store, which cannot quote such names in a JSON path: no app answers.
        guard !vendor.contains("\""), !setting.contains("\"") else { return nil }
        return try await read { conn in
            try conn.run(
                """
                SELECT \(Self.appColumns) FROM apps
                WHERE (vendor_settings::jsonb -> $1 ->> $2) = $3
                ORDER BY id LIMIT 1
                """,
                [.text(vendor), .text(setting), .text(value)]
            ).rows.first.map(Self.app)
        }
    }

    /// Every app, by id.
    public func apps() async throws -> [App] {
        try await read { conn in
            try conn.run("SELECT \(Self.appColumns) FROM apps ORDER BY id").rows.map(Self.app)
        }
    }

    /// Replaces name, bundle id, API key hash and vendor settings; `updatedAt` becomes now
    /// and `createdAt` is kept whatever `app` says. Throws `.notFound` for an unknown id and
    /// `.conflict` when the API key hash belongs to another app.
    public func updateApp(_ app: App) async throws {
        let settings = try Rows.vendorSettingsJSON(app.vendorSettings)
        let now = nowMilliseconds
        try await writeStatement { conn in
            let result = try conn.run(
                """
                UPDATE apps SET name = $1, bundle_id = $2, api_key_hash = $3, vendor_settings = $4, updated_at = $5
                WHERE id = $6
                """,
                [.text(app.name), .text(app.bundleID), .text(app.apiKeyHash), .text(settings), .int(now), .int(app.id)])
            if result.affectedRows == 0 { throw StoreError.notFound("app \(app.id)") }
        }
    }

    /// Deletes the app with its credentials, devices, tags, templates and push settings
    /// (foreign keys cascade).
    public func deleteApp(id: Int64) async throws -> Bool {
        try await writeStatement { conn in
            (try conn.run("DELETE FROM apps WHERE id = $1", [.int(id)]).affectedRows ?? 0) > 0
        }
    }
}
