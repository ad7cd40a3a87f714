import TuisongSQLStore

extension Schema {
    static let v20Identifier = "v20-receipt-sends"

    /// The requests to many tokens that asked a service for receipts by one `param` (Xiaomi's
    /// batches): the message and a digest of each token, so a receipt naming the request is
    /// taken only for the tokens it was sent to. Deleted with the message.
    static let v20ReceiptSends = """
        CREATE TABLE receipt_sends (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            channel TEXT NOT NULL,
            -- the tokens' digests (16 hex characters each), comma-separated
            token_digests TEXT NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX receipt_sends_message ON receipt_sends(message_id);
        """
}
