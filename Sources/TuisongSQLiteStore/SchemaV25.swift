import TuisongSQLStore

extension Schema {
    static let v25Identifier = "v25-receipt-service-requests"

    /// `SharedMigrationSQL.receiptServiceRequests`: both databases run it (PostgreSQL through `portable`).
    static let v25ReceiptServiceRequests = SharedMigrationSQL.receiptServiceRequests
}
