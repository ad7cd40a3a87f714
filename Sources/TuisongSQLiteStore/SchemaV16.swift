import TuisongSQLStore

extension Schema {
    static let v16Identifier = "v16-delivery-receipts"

    /// Delivery receipts (回执) from the services and from apps: one row per (message, token)
    /// that has a receipt, apart from `deliveries` (a push delivered on its first attempt has
    /// no delivery row, and a receipt may come before the send's flush commits), and the
    /// counts per message, channel and outcome (`arrived`, `clicked`, or a reason) that a
    /// status reads without scanning the receipts.
    static let v16DeliveryReceipts = """
        CREATE TABLE delivery_receipts (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            token TEXT NOT NULL,
            channel TEXT NOT NULL,
            arrived_at INTEGER,
            clicked_at INTEGER,
            -- why the service did not show it (notifications_disabled, replaced, …)
            reason TEXT,
            PRIMARY KEY (message_id, token)
        ) STRICT, WITHOUT ROWID;
        CREATE TABLE message_receipt_counts (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            channel TEXT NOT NULL,
            outcome TEXT NOT NULL,
            count INTEGER NOT NULL,
            PRIMARY KEY (message_id, channel, outcome)
        ) STRICT, WITHOUT ROWID;
        """
}
