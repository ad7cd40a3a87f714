import TuisongSQLStore

extension Schema {
    static let v14Identifier = "v14-held-deliveries-expire"

    /// A held delivery (no credential for its service, a refused one) waits until its message
    /// expires: its `next_attempt_at` is that moment, and the retry worker fails the rows whose
    /// moment has passed, found through this index (held rows are few; the table is large).
    static let v14HeldDeliveriesExpire = SharedMigrationSQL.heldDeliveriesExpire
}
