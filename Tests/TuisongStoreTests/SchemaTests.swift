import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

@Suite("Schema, connection settings and lifecycle")
struct SchemaTests {
    @Test("An empty file is migrated to the latest schema, with every table and index")
    func migratesFromEmpty() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let names = SQLiteStore.migrationNames()
        #expect(names.first?.hasPrefix("v1-") == true)
        #expect(try await store.appliedMigrations() == names)
        #expect(try await store.schemaVersion() == names.last)

        let objects = try await store.schemaObjectNames()
        for table in [
            "apps", "channel_credentials", "devices", "tags", "device_tags", "templates", "push_settings",
            "settings", "messages", "message_failures", "deliveries",
        ] {
            #expect(objects.contains(table), "missing table \(table)")
        }
        for index in [
            "devices_by_user", "devices_by_im_account",
            "device_tags_by_device", "channel_credentials_by_app", "messages_pending", "deliveries_due",
            "deliveries_by_message",
        ] {
            #expect(objects.contains(index), "missing index \(index)")
        }
    }

    @Test("v26: the statuses waiting in the receipt inbox are summed from an index, not the rows and their bodies")
    func waitingReceiptStatusesAreSummedFromAnIndex() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let objects = try await fixture.store.schemaObjectNames()
        #expect(objects.contains("receipt_inbox_app_statuses"))
        #expect(!objects.contains("receipt_inbox_app"))
        let plans = try await fixture.store.sharedDatabase.write { db in
            try [Int64?.some(7), nil].map { appID in
                try db.fetchAll("EXPLAIN QUERY PLAN " + SQLiteStore.waitingStatuses(appID: appID)).map { $0.string(3) }
            }
        }
        for plan in plans {
            #expect(plan.contains { $0.contains("USING COVERING INDEX receipt_inbox_app_statuses") }, "\(plan)")
        }
    }

    @Test("v6 keys the badge grants by account row, keeping those of accounts that still exist")
    func badgeGrantsMoveToAccountRowsInV6() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        // The table as v5 made it, with grants in it, then v6's statements over it.
        let rows = try await store.sharedDatabase.write { db in
            try db.execute(
                """
                INSERT INTO accounts (id, app_id, account, created_at, updated_at)
                    VALUES (41, \(app.id), 'alice', 0, 0);
                INSERT INTO messages (id, app_id, vendor, audience, content, options, state, created_at)
                    VALUES (7, \(app.id), 'tencent', '{}', '{}', '{}', 'sending', 0);
                DROP TABLE badge_grants;
                """)
            try db.execute(Schema.v5BadgeGrants)
            try db.execute(
                "INSERT INTO badge_grants (message_id, account, badge) VALUES (7, 'alice', 3), (7, 'deleted', 1)")
            try db.execute(Schema.v6BadgeGrantsByAccountRow)
            return try db.query("SELECT * FROM badge_grants")
        }
        #expect(rows.map(\.columns) == [["message_id", "account_id"]])
        #expect(rows.map { [$0["message_id"].int, $0["account_id"].int] } == [[7, 41]])
    }

    @Test("v7 gives each bound device its account's row id and app state")
    func devicesCarryTheirAccountFromV7() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        let rows = try await store.sharedDatabase.write { db in
            try db.execute(
                """
                INSERT INTO accounts (id, app_id, account, app_state, created_at, updated_at)
                    VALUES (41, \(app.id), 'alice', 'background', 0, 0), (42, \(app.id), 'bob', NULL, 0, 0);
                INSERT INTO devices (app_id, token, environment, im_account, app_state, created_at, updated_at)
                    VALUES (\(app.id), 'aa', 'production', 'alice', NULL, 0, 0),
                           (\(app.id), 'bb', 'production', 'bob', 'foreground', 0, 0),
                           (\(app.id), 'cc', 'production', NULL, 'foreground', 0, 0);
                ALTER TABLE devices DROP COLUMN account_id;
                """)
            try db.execute(Schema.v7DevicesCarryTheirAccount)
            return try db.query("SELECT account_id, app_state FROM devices ORDER BY token")
        }
        #expect(rows.map { $0["account_id"].int } == [41, 42, nil])
        #expect(rows.map { $0["app_state"].string } == ["background", nil, nil])
    }

    @Test("Re-opening a migrated file applies nothing twice and keeps the data")
    func reopenIsIdempotent() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }

        let first = try SQLiteStore(path: database.path)
        let app = try await makeApp(first)
        try first.close()

        for _ in 0..<2 {
            let again = try SQLiteStore(path: database.path)
            #expect(try await again.appliedMigrations() == SQLiteStore.migrationNames())
            #expect(try await again.app(id: app.id) == app)
            try again.close()
        }
    }

    @Test("Stores opening one fresh file at the same moment all succeed and migrate it once")
    func concurrentFirstOpen() async throws {
        // Eight at once, three fresh files: a store that loses several races in a row to the
        // others' migrations still finds the work done (CI once failed with four and a fixed
        // three attempts).
        for _ in 0..<3 {
            let database = try TemporaryDatabase()
            defer { database.remove() }
            let path = database.path
            let opened = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        let store = try SQLiteStore(path: path)
                        defer { try? store.close() }
                        return try await store.appliedMigrations()
                    }
                }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
            #expect(opened == Array(repeating: SQLiteStore.migrationNames(), count: 8))
        }
    }

    @Test("A migration that fails on its own is reported, not retried for ever")
    func aFailingMigrationFailsTheOpen() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let broken = PluginSchema(
            name: "probe",
            migrations: [
                PluginMigration("1-rows", sql: "CREATE TABLE probe_rows (id INTEGER PRIMARY KEY)"),
                PluginMigration("2-broken", sql: "CREATE TABLE probe_rows (id INTEGER PRIMARY KEY)"),
            ])
        #expect(throws: StoreError.self) {
            try SQLiteStore(path: database.path, configuration: .init(pluginMigrations: [broken]))
        }
        // The core and the plugin's first migration were applied: the next open starts there.
        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        #expect(try await store.appliedMigrations() == SQLiteStore.migrationNames())
    }

    @Test("Connections run in WAL mode with foreign keys, a busy timeout and synchronous=NORMAL")
    func connectionSettings() async throws {
        let fixture = try StoreFixture(.init(busyTimeout: 3))
        defer { fixture.tearDown() }
        let store = fixture.store
        #expect(try await store.writerPragma("journal_mode") == "wal")
        #expect(try await store.writerPragma("foreign_keys") == "1")
        #expect(try await store.writerPragma("synchronous") == "1")  // NORMAL
        #expect(try await store.writerPragma("busy_timeout") == "3000")

        let durable = try StoreFixture(.init(synchronousFull: true))
        defer { durable.tearDown() }
        #expect(try await durable.store.writerPragma("synchronous") == "2")  // FULL
    }

    @Test("ping answers on an open store and fails as unavailable once closed")
    func ping() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let store = try SQLiteStore(path: database.path)
        try await store.ping()
        try store.close()
        let error = await #expect(throws: StoreError.self) { try await store.ping() }
        #expect(error?.code == .unavailable)
    }

    @Test("close() twice is fine; later calls and queued registrations fail as unavailable")
    func closeTwice() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let store = try SQLiteStore(path: database.path)
        let app = try await makeApp(store)
        try store.close()
        try store.close()

        let readError = await #expect(throws: StoreError.self) {
            _ = try await store.app(id: app.id)
        }
        #expect(readError?.code == .unavailable)
        let registerError = await #expect(throws: StoreError.self) {
            _ = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(1), environment: .sandbox, channel: .apns))
        }
        #expect(registerError?.code == .unavailable)

        // The WAL was folded back into the file and emptied; a new store sees the app.
        let wal = database.path + "-wal"
        if FileManager.default.fileExists(atPath: wal) {
            #expect(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int == 0)
        }
        let reopened = try SQLiteStore(path: database.path)
        #expect(try await reopened.app(id: app.id)?.name == app.name)
        try reopened.close()
    }

    @Test("A path whose directory cannot be created is reported as unavailable")
    func unopenablePath() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        // A regular file where the parent directory should be.
        let blocker = database.directory.appendingPathComponent("file")
        try Data("x".utf8).write(to: blocker)
        let error = #expect(throws: StoreError.self) {
            _ = try SQLiteStore(path: blocker.appendingPathComponent("tuisong.db").path)
        }
        #expect(error?.code == .unavailable)
    }
}

@Suite("Two stores on one file (server and CLI)")
struct SharedFileTests {
    @Test("A second store on the same file sees the first one's writes, and the reverse")
    func secondStoreSeesWrites() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let server = fixture.store
        let cli = try SQLiteStore(path: fixture.database.path)
        defer { try? cli.close() }

        let app = try await cli.createApp(
            name: "cli", bundleID: "com.example.cli", apiKeyHash: "k1")
        #expect(try await server.app(apiKeyHash: "k1")?.id == app.id)

        let (device, _) = try await server.registerDevice(
            appID: app.id, DeviceRegistration(token: token(7), environment: .production, channel: .apns))
        #expect(try await cli.device(appID: app.id, token: token(7)) == device)

        // Both write at once: the busy timeout makes each wait for the other's lock.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<200 {
                let writer = n % 2 == 0 ? server : cli
                group.addTask {
                    _ = try await writer.registerDevice(
                        appID: app.id,
                        DeviceRegistration(token: token(1000 + n), environment: .sandbox, channel: .apns))
                }
            }
            try await group.waitForAll()
        }
        #expect(try await server.deviceCount(appID: app.id) == 201)
        #expect(try await cli.deviceCount(appID: app.id) == 201)

        #expect(try await cli.deleteApp(id: app.id))
        #expect(try await server.app(id: app.id) == nil)
    }
}
