import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// The app lookups of `AppStore` that SQLite answers on its point readers, on the calling thread
// (the native API's hot path); the rest of `AppStore` is written once (`SQLStoreBackend+Apps`).
extension SQLiteStore {
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
    /// Written twice: SQLite's JSON path (`json_extract`) against PostgreSQL's `jsonb` operators.
    public func app(vendor: String, setting: String, value: String) async throws -> App? {
        // Quoted JSON path labels, so a name is taken literally (SQLite has no escape inside
        // them; vendor and setting names are plain words).
        guard !vendor.contains("\""), !setting.contains("\"") else { return nil }
        return try await pointLookUp(.appByVendorSetting, [.text("$.\"\(vendor)\".\"\(setting)\""), .text(value)]) {
            row in try Rows.app(columns: row)
        }
    }
}
