import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// `v22-delivery-service-message-id` (SQLite) and `pg16-delivery-service-message-id`
/// (PostgreSQL): a delivery's message id on its service, whichever service, keeps its value
/// under its neutral name; and a message stored before per-service options reads as it did.
@Suite struct DeliveryServiceMessageIDMigrationTests {
    @Test(arguments: Backend.allCases)
    func aStoredRowsServiceMessageIDReadsUnchanged(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let job = PushJob(
                appID: app.id, vendor: "native", audience: .all, content: PushContent(body: "hi"),
                options: PushOptions())
            let message = try await store.createMessage(job, state: .sending)
            let migration =
                switch backend {
                case .sqlite: Schema.v22DeliveryServiceMessageID
                case .postgresql: PostgresSchema.deliveryServiceMessageID
                }
            // The table as v21 / pg15 left it, a row an FCM answer named, then the migration.
            try await store.sharedDatabase.write { db in
                try db.execute("ALTER TABLE deliveries RENAME COLUMN service_message_id TO apns_id")
                try db.execute(
                    """
                    INSERT INTO deliveries (message_id, token, environment, state, reason, apns_id, attempts, updated_at)
                    VALUES (?, 'fcm-1', 'production', 'failed', 'INTERNAL', 'projects/p/messages/0:1', 1, 1)
                    """, [.integer(message.id)])
                try db.execute(migration)
            }
            // A row written after it, through the store.
            try await store.recordProgress(
                MessageProgress(
                    messageID: message.id, cursor: 2,
                    deliveries: [
                        NewDelivery(
                            deviceID: nil, token: "huawei-1", environment: .production, state: .failed,
                            reason: "80300007", serviceMessageID: "request-7", attempts: 1, channel: .huawei)
                    ]), at: Date())
            let rows = try await store.deliveries(messageID: message.id, state: nil, cursor: nil, limit: 10).items
            #expect(Set(rows.map(\.token)) == ["fcm-1", "huawei-1"])
            #expect(rows.first { $0.token == "fcm-1" }?.serviceMessageID == "projects/p/messages/0:1")
            #expect(rows.first { $0.token == "huawei-1" }?.serviceMessageID == "request-7")
        }
    }

    /// Options as today's code stored them before services had entries of their own — one
    /// service's settings beside the shared ones, another's field in the Android object — read
    /// back into the entries (and the older field) the transports read.
    @Test(arguments: Backend.allCases)
    func aMessageStoredWithServiceSettingsOutsideItsEntryReadsTheSame(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let job = PushJob(
                appID: app.id, vendor: "native", audience: .all, content: PushContent(body: "hi"),
                options: PushOptions())
            let message = try await store.createMessage(job, state: .queued)
            let stored = """
                {"android":{"category":{"vivo":"IM"},"channelIDs":{},"importance":{},"vivoClassification":1},\
                "collapseID":"c-1","harmony":{"category":"IM","clickAction":"ChatAbility"},"pushType":"alert"}
                """
            try await store.sharedDatabase.write { db in
                try db.execute("UPDATE messages SET options = ? WHERE id = ?", [.text(stored), .integer(message.id)])
            }
            let options = try #require(try await store.message(id: message.id)?.options)
            #expect(options.collapseID == "c-1" && options.pushType == .alert)
            #expect(options.services == ["harmony": ["category": "IM", "clickAction": "ChatAbility"]])
            #expect(options.android?.category == ["vivo": "IM"])
            #expect(options.android?.olderFields == ["vivoClassification": 1])
        }
    }
}
