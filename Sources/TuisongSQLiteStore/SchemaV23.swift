import TuisongSQLStore

extension Schema {
    static let v23Identifier = "v23-receipt-inbox"

    /// Receipt POSTs verified and answered but not yet digested: one row a POST (up to 1,000
    /// statuses), its body as the service posted it. The digest records a row's receipts and
    /// deletes the row in one transaction.
    static let v23ReceiptInbox = """
        CREATE TABLE receipt_inbox (
            id INTEGER PRIMARY KEY,
            channel TEXT NOT NULL,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            received_at INTEGER NOT NULL,
            statuses INTEGER NOT NULL,
            body BLOB NOT NULL
        ) STRICT;
        CREATE INDEX receipt_inbox_app ON receipt_inbox(app_id);
        """
}
