import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// The message an idempotency key names, read as this backend reads a message (SQLite: the key,
// then `message(id:)` with its record cache); the sweep is written once (`SQLStoreBackend+Messages`).
extension SQLiteStore {
    public func message(appID: Int64, idempotencyKey: String) async throws -> MessageRecord? {
        let cutoff = nowMilliseconds - Int64(IdempotencyKey.lifetime * 1000)
        let id = try await read { db in
            try Int64.fetchOne(
                db, sql: "SELECT message_id FROM idempotency_keys WHERE app_id = ? AND key = ? AND created_at > ?",
                arguments: [appID, idempotencyKey, cutoff])
        }
        guard let id else { return nil }
        return try await message(id: id)
    }
}
