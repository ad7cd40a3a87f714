import Foundation
import GRDB
import Testing
import TuisongCore

@testable import TuisongSQLiteStore
@testable import TuisongStore

/// v27 (SQLite): the state CHECKs of `messages`, `deliveries` and `webhook_outbox` and the
/// condition of `messages_pending` as `=` comparisons joined by OR, not `IN` lists, which SQLite
/// runs by building a temporary B-tree every time; the same rows accepted, the claim's queries
/// still on their indexes.
@Suite("v27-state-conditions-without-in-lists")
struct StateConditionsMigrationTests {
    /// The temporary B-trees `sql` builds for `IN` lists: `OpenEphemeral` with a key (an
    /// UPDATE of an indexed column also opens one without, for the rowids it will change).
    static func listTrees(_ db: Database, _ sql: String) throws -> Int {
        try Row.fetchAll(db, sql: "EXPLAIN " + sql).filter { row in
            row["opcode"] == "OpenEphemeral" && (row["p4"] as String?)?.hasPrefix("k(") == true
        }.count
    }

    static func plan(_ db: Database, _ sql: String) throws -> String {
        try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String }.joined(separator: "; ")
    }

    static func tableSQL(_ db: Database, _ name: String) throws -> String {
        try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE name = ?", arguments: [name]) ?? ""
    }

    /// An app, a message in each state (the scheduled one due at 5), a delivery in each state
    /// and an outbox row in each state.
    static func seed(_ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO apps (id, name, bundle_id, api_key_hash, created_at, updated_at)
                VALUES (1, 'demo', 'com.example.demo', 'hash', 0, 0);
                INSERT INTO messages (id, app_id, vendor, audience, options, state, send_at, created_at) VALUES
                    (1, 1, 'native', '"all"', '{}', 'scheduled', 5, 0),
                    (2, 1, 'native', '"all"', '{}', 'queued', NULL, 0),
                    (3, 1, 'native', '"all"', '{}', 'sending', NULL, 0),
                    (4, 1, 'native', '"all"', '{}', 'completed', NULL, 0),
                    (5, 1, 'native', '"all"', '{}', 'cancelled', NULL, 0);
                INSERT INTO deliveries (message_id, token, environment, state, updated_at, channel)
                SELECT 3, 'token-' || value, 'production', value, 0, 'apns'
                FROM json_each('["queued", "sending", "delivered", "failed", "skipped", "held"]');
                INSERT INTO webhook_endpoints (id, app_id, url, events, encrypted_secret, created_at, updated_at)
                VALUES (1, 1, 'https://example.com/hook', '["message.completed"]', x'01', 0, 0);
                INSERT INTO webhook_outbox (endpoint_id, app_id, event_id, event_key, type, body, state,
                    next_attempt_at, created_at, updated_at)
                SELECT 1, 1, 'evt-' || value, 'key-' || value, 'message.completed', '{}', value, 0, 0, 0
                FROM json_each('["pending", "delivered", "failed"]');
                """)
    }

    /// Every state change of the three tables, and a new message.
    static let writes = [
        "INSERT INTO messages (app_id, vendor, audience, options, state, created_at) VALUES (1, 'native', '[]', '{}', 'queued', 0)",
        "UPDATE messages SET state = 'sending', started_at = 1 WHERE id = 2",
        "UPDATE messages SET state = 'completed', completed_at = 2 WHERE id = 3",
        "INSERT INTO deliveries (message_id, token, environment, state, updated_at, channel) VALUES (2, 't', 'sandbox', 'failed', 0, 'apns')",
        "UPDATE deliveries SET state = 'delivered' WHERE message_id = 3 AND token = 'token-sending'",
        "UPDATE webhook_outbox SET state = 'delivered' WHERE event_id = 'evt-pending'",
    ]

    @Test func aMessageAndItsStatesAreWrittenWithoutTemporaryTrees() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        try await fixture.store.write { db in
            try Self.seed(db)
            for sql in Self.writes {
                #expect(try Self.listTrees(db, sql) == 0, "\(sql)")
                try db.execute(sql: sql)
            }
        }
    }

    @Test func theClaimsQueriesStayOnTheirIndexes() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let condition = Schema.pendingMessagesCondition
        #expect(SQLiteDialect().pendingMessagesCondition == condition)
        let plans = try await fixture.store.write { db in
            try [
                "SELECT id FROM messages WHERE state = 'scheduled' AND send_at <= 9 AND \(condition) ORDER BY id LIMIT 5",
                "SELECT id FROM messages WHERE state = 'sending' AND \(condition) AND id > 0 ORDER BY id LIMIT 5",
                "SELECT id FROM messages WHERE state IN ('queued', 'sending') AND \(condition)",
                // A lone state now implies the index's condition too.
                "SELECT id FROM messages WHERE state = 'queued'",
            ].map { try Self.plan(db, $0) }
        }
        for plan in plans {
            let indexed = ["INDEX messages_pending", "INDEX messages_backlog_by_app"].contains { plan.contains($0) }
            #expect(indexed, "\(plan)")
        }
        // The store's own, through the store: every pending message and the due scheduled one.
        try await fixture.store.write { db in try Self.seed(db) }
        let dispatchable = try await fixture.store.dispatchableMessageIDs(now: Date(timeIntervalSince1970: 1))
        #expect(dispatchable == [1, 2, 3])
    }

    @Test func aDatabaseAtV26KeepsItsRowsAndRefusesWhatItRefusedBefore() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let old = try database.openMigrated(through: Schema.v26Identifier)
        try await old.write { db in try Self.seed(db) }
        let inserted = try await old.write { db in try Self.listTrees(db, Self.writes[0]) }
        #expect(inserted == 2, "v26's insert builds the trees v27 removes: its CHECK's and its index's")

        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        let applied = try await store.appliedMigrations()
        #expect(applied.contains(Schema.v27Identifier))
        #expect(applied == store.migrationNames)
        try await store.write { db in
            #expect(try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"])
            for table in ["messages", "deliveries", "webhook_outbox"] {
                let sql = try Self.tableSQL(db, table)
                #expect(!sql.contains("state IN ("), "\(table): \(sql)")
                #expect(sql.contains("CHECK (state = '"), "\(table): \(sql)")
            }
            #expect(try Self.tableSQL(db, "messages_pending").hasSuffix("WHERE \(Schema.pendingMessagesCondition)"))
            // Every row kept; the index holds the pending ones.
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM messages") == 5)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM deliveries") == 6)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM webhook_outbox") == 3)
            let condition = Schema.pendingMessagesCondition
            let pending = try Int64.fetchAll(
                db, sql: "SELECT id FROM messages INDEXED BY messages_pending WHERE \(condition) ORDER BY id")
            #expect(pending == [1, 2, 3])
            // A state no CHECK knows is refused, as before; each known one is written.
            for sql in [
                "UPDATE messages SET state = 'bogus' WHERE id = 2",
                "INSERT INTO deliveries (message_id, token, environment, state, updated_at, channel) VALUES (2, 'x', 'sandbox', 'QUEUED', 0, 'apns')",
                "UPDATE webhook_outbox SET state = 'pending ' WHERE event_id = 'evt-failed'",
            ] {
                #expect(throws: DatabaseError.self, "\(sql)") { try db.execute(sql: sql) }
            }
            for sql in Self.writes {
                try db.execute(sql: sql)
            }
        }
        // A connection opened before the migration sees the new texts (from its first
        // statement that reads the schema's version; EXPLAIN alone does not).
        let edited = try await old.write { db in
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM messages")
            return try Self.listTrees(db, Self.writes[0])
        }
        #expect(edited == 0)
        try old.close()
        #expect(try await store.dispatchableMessageIDs(now: Date(timeIntervalSince1970: 1)) == [1, 2, 6])
    }
}
