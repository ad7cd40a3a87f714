import TuisongSQLStore

extension Schema {
    static let v22Identifier = "v22-delivery-service-message-id"

    /// A delivery's message id on its push service (APNs's `apns-id`, an FCM message name, a
    /// Huawei request id, …) is one column whatever the service: `apns_id`, named when APNs was
    /// the only one, becomes `service_message_id`. A rename keeps every row's value as it was.
    static let v22DeliveryServiceMessageID = SharedMigrationSQL.deliveryServiceMessageID
}
