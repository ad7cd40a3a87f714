import TuisongSQLStore

extension Schema {
    static let v16Identifier = "v16-delivery-receipts"

    /// `SharedMigrationSQL.deliveryReceipts`: both databases run it (PostgreSQL through `portable`).
    static let v16DeliveryReceipts = SharedMigrationSQL.deliveryReceipts
}
