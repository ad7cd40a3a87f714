import Foundation
import GRDB
import TuisongCore

// Skip reasons for the console's monitor, beside `failureReasons` (SQLiteStore+Console.swift).
extension SQLiteStore {
    public func skipReasons(since: Date, scanLimit: Int) async throws -> [String: Int] {
        let sinceMilliseconds = Milliseconds.from(since)
        return try await read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT s.reason, sum(s.count) FROM message_skips s
                    WHERE s.message_id IN (
                        SELECT id FROM (SELECT id, created_at FROM messages ORDER BY id DESC LIMIT ?)
                        WHERE created_at >= ?)
                    GROUP BY s.reason
                    """,
                arguments: [min(max(scanLimit, 1), 100_000), sinceMilliseconds])
            var result: [String: Int] = [:]
            for row in rows {
                let count: Int = row[1]
                if count > 0 { result[row[0]] = count }
            }
            return result
        }
    }
}
