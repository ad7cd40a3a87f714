import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// `AppStore` is written once (`SQLStoreBackend+Apps`) but for this lookup: PostgreSQL's `jsonb`
// operators take the vendor and setting names as parameters, where SQLite builds a JSON path
// for its point readers (`SQLiteStore+Apps`).
extension PostgresStore {
    /// The app whose `vendorSettings[vendor][setting]` is `value`, the first by id when several
    /// answer (meant for settings declared unique across apps).
    public func app(vendor: String, setting: String, value: String) async throws -> App? {
        // As SQLite's store, which cannot quote such names in a JSON path: no app answers.
        guard !vendor.contains("\""), !setting.contains("\"") else { return nil }
        return try await read { conn in
            try conn.run(
                """
                SELECT \(raw: Rows.appColumns) FROM apps
                WHERE (vendor_settings::jsonb -> \(vendor) ->> \(setting)) = \(value)
                ORDER BY id LIMIT 1
                """
            ).rows.first.map(Self.app)
        }
    }
}
