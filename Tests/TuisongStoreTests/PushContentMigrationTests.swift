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
            // The migration wrote the APNs fields under `apns` beside the shared ones (nulls for
            // those unset): the APNs entry, which only the APNs transport reads.
            var shared = queued.content
            shared.services = [:]
            #expect(
                shared
                    == PushContent(
                        title: "订单", body: "已发货", bodyLocArgs: ["a", "b"], badge: 3, sound: "alarm.caf",
                        thread: "t-1", data: ["order": ["id": 42], "k": "v"]))
            #expect(
                queued.content.apns
                    == APNsContent(
                        interruptionLevel: .timeSensitive, mutableContent: true, alertAsObject: true,
                        criticalVolume: 0.5))
            // The APNs transport renders what was stored before, key for key.
            #expect(
                try JSONValue(parsing: APNsPayload.render(queued.content))
                    == JSONValue(parsing: Array(Self.messagePayload.utf8)))
            let sending = try #require(try await store.message(id: 72))
            var sendingShared = sending.content
            sendingShared.services = [:]
            #expect(sendingShared == PushContent(data: ["sync": "inbox"], background: true))
            #expect(sending.content.apns == APNsContent())
            #expect(APNsPayload.render(sending.content) == Array(Self.backgroundPayload.utf8))
            let rows = try await store.deliveries(messageID: 72, state: .failed, cursor: nil, limit: 10).items
            #expect(rows.map(\.token) == ["aa", "bb"])
            let policyContent = try #require(rows.first?.content)
            #expect(
                policyContent.body == "only for bob" && policyContent.badge == 7 && policyContent.data == ["ext": "e"])
            #expect(policyContent.apns == APNsContent() && rows.last?.content == nil)
            #expect(APNsPayload.render(policyContent) == Array(Self.deliveryPayload.utf8))
        }
    }

    /// Content stored by the builds between v13/pg7 and the APNs entry: the APNs fields in their
    /// own object under the content's `apns` key, beside the shared ones. Read back, it is the
    /// APNs entry (`PushContent.services["apns"]`) and renders the payload those builds sent.
    static let olderLayout =
        #"{"body":"Fire","sound":"alarm.caf","thread":"t-2","data":{"k":1},"apns":{"interruption_level":"critical","#
        + #""relevance_score":0.5,"mutable_content":true,"target_content_id":"w-1","launch_image":"L.png","#
        + #""action_loc_key":"AK","alert_as_object":true,"summary_arg":"Ann","summary_arg_count":2,"#
        + #""critical_volume":0.25,"timestamp":1700000000.9,"event":"update","content_state":{"home":2},"#
        + #""stale_date":1700003600,"dismissal_date":1700007200,"attributes_type":"Match","attributes":{"m":"A"}}}"#
    static let olderLayoutPayload =
        #"{"aps":{"alert":{"action-loc-key":"AK","body":"Fire","launch-image":"L.png","summary-arg":"Ann","#
        + #""summary-arg-count":2},"attributes":{"m":"A"},"attributes-type":"Match","content-state":{"home":2},"#
        + #""dismissal-date":1700007200,"event":"update","interruption-level":"critical","mutable-content":1,"#
        + #""relevance-score":0.5,"sound":{"critical":1,"name":"alarm.caf","volume":0.25},"stale-date":1700003600,"#
        + #""target-content-id":"w-1","thread-id":"t-2","timestamp":1700000000},"k":1}"#

    @Test(arguments: Backend.allCases)
    func contentInTheOlderLayoutReadsBackAndRendersAsBefore(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let record = try await store.createMessage(
                PushJob(
                    appID: app.id, vendor: "native", audience: .all, content: PushContent(body: "new"),
                    options: PushOptions()),
                state: .scheduled)
            try await store.sharedDatabase.write { db in
                try db.execute("UPDATE messages SET content = '\(Self.olderLayout)' WHERE id = \(record.id)")
            }
            let stored = try #require(try await store.message(id: record.id)).content
            #expect(stored.services.keys.sorted() == ["apns"])
            #expect(
                stored.apns
                    == APNsContent(
                        interruptionLevel: .critical, relevanceScore: 0.5, mutableContent: true, targetContentID: "w-1",
                        launchImage: "L.png", actionLocKey: "AK", alertAsObject: true, summaryArg: "Ann",
                        summaryArgCount: 2, criticalVolume: 0.25,
                        timestamp: Date(timeIntervalSince1970: 1_700_000_000.9),
                        event: .update, contentState: ["home": 2],
                        staleDate: Date(timeIntervalSince1970: 1_700_003_600),
                        dismissalDate: Date(timeIntervalSince1970: 1_700_007_200), attributesType: "Match",
                        attributes: ["m": "A"]))
            #expect(String(decoding: APNsPayload.render(stored), as: UTF8.self) == Self.olderLayoutPayload)
            // What the accept path checks of it passes too (a console view of an old message).
            #expect(try APNsPayload.build(stored, pushType: .alert) == APNsPayload.render(stored))
        }
    }
}
