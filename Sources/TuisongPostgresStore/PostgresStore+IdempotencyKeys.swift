import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

extension PostgresSchema {
    /// SQLite's `v12-idempotency-keys`: per app, the message an `Idempotency-Key` created.
    static let idempotencyKeys = portable(SharedMigrationSQL.idempotencyKeys)
}
