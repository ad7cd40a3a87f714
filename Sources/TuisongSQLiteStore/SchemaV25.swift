import TuisongSQLStore

extension Schema {
    static let v25Identifier = "v25-receipt-service-requests"

    /// The requests the services that sign their receipts accepted, by the service's id of each
    /// (Huawei's `requestId`): one row per request (up to 1,000 devices), written with the flush
    /// of its outcomes, so a receipt status without Tuisong's tag finds its message by the
    /// request and its delivery by the token. Deleted with the message, so kept as long as it.
    static let v25ReceiptServiceRequests = """
        CREATE TABLE receipt_service_requests (
            channel TEXT NOT NULL,
            request_id TEXT NOT NULL,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (channel, request_id)
        ) STRICT;
        CREATE INDEX receipt_service_requests_message ON receipt_service_requests(message_id);
        """
}
