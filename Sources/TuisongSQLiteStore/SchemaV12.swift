import TuisongSQLStore

extension Schema {
    static let v12Identifier = "v12-idempotency-keys"

    /// The native API's `Idempotency-Key`s: per app, the message the key's first request
    /// created, committed in the same transaction as the message. A key answers its message for
    /// `IdempotencyKey.lifetime` after `created_at` (milliseconds); older rows are ignored and
    /// deleted in bounded sweeps, by `created_at`. Keys go with their app and their message.
    static let v12IdempotencyKeys = SharedMigrationSQL.idempotencyKeys
}
