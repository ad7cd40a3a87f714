import TuisongSQLStore

extension Schema {
    static let v26Identifier = "v26-receipt-inbox-statuses-by-app"

    /// `SharedMigrationSQL.receiptInboxStatusesByApp`: both databases run it (PostgreSQL through `portable`).
    static let v26ReceiptInboxStatusesByApp = SharedMigrationSQL.receiptInboxStatusesByApp
}
