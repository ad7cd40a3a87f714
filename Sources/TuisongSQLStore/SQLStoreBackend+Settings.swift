import Foundation
import TuisongCore

// SettingsStore, written once for both databases.
extension SQLStoreBackend {
    public func setting(_ key: String) async throws -> String? {
        try await sqlRead { db in try db.fetchOne("SELECT value FROM settings WHERE key = \(key)")?[0].string }
    }

    public func setSetting(_ key: String, value: String) async throws {
        try await sqlWriteStatement { db in
            try db.run(
                """
                INSERT INTO settings (key, value) VALUES (\(key), \(value))
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """)
        }
    }

    /// `true` when the setting was stored, `false` when the key already had a value (kept).
    public func insertSettingIfAbsent(_ key: String, value: String) async throws -> Bool {
        try await sqlWriteStatement { db in
            try db.run("INSERT INTO settings (key, value) VALUES (\(key), \(value)) ON CONFLICT (key) DO NOTHING") > 0
        }
    }
}
