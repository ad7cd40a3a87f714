import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// `v13-push-content` (SQLite) and `pg7-push-content` (PostgreSQL): messages and deliveries
/// written in the old form (APNs payload bytes) come out as `PushContent`.
@Suite struct PushContentMigrationTests {
    static let messagePayload =
        #"{"aps":{"alert":{"title":"订单","body":"已发货","loc-args":["a","b"]},"badge":3,"#
        + #""sound":{"critical":1,"name":"alarm.caf","volume":0.5},"thread-id":"t-1","mutable-content":1,"#
        + #""interruption-level":"time-sensitive"},"order":{"id":42},"k":"v"}"#
    static let deliveryPayload = #"{"aps":{"alert":"only for bob","badge":7},"ext":"e"}"#
    static let backgroundPayload = #"{"aps":{"content-available":1},"sync":"inbox"}"#

    @Test(arguments: Backend.allCases)
    func storedAPNsPayloadsBecomeContent(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let (undo, blob, migration): (String, (String) -> String, String) =
                switch backend {
                case .sqlite:
                    (
                        """
                        ALTER TABLE messages ADD COLUMN notification TEXT NOT NULL DEFAULT '{}';
                        ALTER TABLE messages ADD COLUMN payload BLOB NOT NULL DEFAULT X'';
                        ALTER TABLE messages DROP COLUMN content;
                        ALTER TABLE deliveries ADD COLUMN payload BLOB;
                        ALTER TABLE deliveries DROP COLUMN content;
                        """, { "CAST('\($0)' AS BLOB)" }, Schema.v13PushContent
                    )
                case .postgresql:
                    (
                        """
                        ALTER TABLE messages ADD COLUMN notification TEXT NOT NULL DEFAULT '{}';
                        ALTER TABLE messages ADD COLUMN payload BYTEA NOT NULL DEFAULT '';
                        ALTER TABLE messages DROP COLUMN content;
                        ALTER TABLE deliveries ADD COLUMN payload BYTEA;
                        ALTER TABLE deliveries DROP COLUMN content;
                        """, { "convert_to('\($0)', 'UTF8')" }, PostgresSchema.pushContent
                    )
                }
            let (message, background, own) = (
                blob(Self.messagePayload), blob(Self.backgroundPayload), blob(Self.deliveryPayload)
            )
            // The tables as v12 / pg6 left them, a queued and a sending message and two delivery
            // rows (one with a policy's own payload) in the old form, then the migration.
            try await store.sharedDatabase.write { db in
                try db.execute(undo)
                try db.execute(
                    """
                    INSERT INTO messages (id, app_id, vendor, audience, notification, options, payload, state,
                        created_at)
                    VALUES (71, \(app.id), 'native', '{"all":{}}', '{}', '{"pushType":"alert"}', \(message), 'queued', 5),
                        (72, \(app.id), 'tencent', '{"all":{}}', '{}', '{"pushType":"background"}', \(background), 'sending', 5)
                    """)
                try db.execute(
                    """
                    INSERT INTO deliveries (message_id, token, environment, state, attempts, updated_at, payload)
                    VALUES (72, 'aa', 'production', 'failed', 1, 1, \(own)),
                        (72, 'bb', 'production', 'failed', 1, 1, NULL)
                    """)
                try db.execute(migration)
            }
            let queued = try #require(try await store.message(id: 71))
            #expect(
                queued.content
                    == PushContent(
                        title: "订单", body: "已发货", bodyLocArgs: ["a", "b"], badge: 3, sound: "alarm.caf",
                        thread: "t-1", data: ["order": ["id": 42], "k": "v"],
                        apns: .init(
                            interruptionLevel: .timeSensitive, mutableContent: true, alertAsObject: true,
                            criticalVolume: 0.5)))
            // The APNs transport renders what was stored before, key for key.
            #expect(
                try JSONValue(parsing: APNsPayload.render(queued.content))
                    == JSONValue(parsing: Array(Self.messagePayload.utf8)))
            let sending = try #require(try await store.message(id: 72))
            #expect(sending.content == PushContent(data: ["sync": "inbox"], background: true))
            #expect(APNsPayload.render(sending.content) == Array(Self.backgroundPayload.utf8))
            let rows = try await store.deliveries(messageID: 72, state: .failed, cursor: nil, limit: 10).items
            #expect(rows.map(\.token) == ["aa", "bb"])
            #expect(rows.map(\.content) == [PushContent(body: "only for bob", badge: 7, data: ["ext": "e"]), nil])
        }
    }
}
