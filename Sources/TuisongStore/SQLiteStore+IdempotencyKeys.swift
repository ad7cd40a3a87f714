import Foundation
import GRDB
import TuisongCore

extension SQLiteStore {
    public func forgetIdempotencyKeys(before: Date, limit: Int) async throws -> Int {
        try await write { db in
            try db.execute(
                sql: """
                    DELETE FROM idempotency_keys WHERE (app_id, key) IN (
                        SELECT app_id, key FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?)
                    """,
                arguments: [SQLTime.milliseconds(before), max(limit, 0)])
            return db.changesCount
        }
    }

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
