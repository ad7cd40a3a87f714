import Foundation
import GRDB
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// v15 (SQLite) and pg9 (PostgreSQL): the channel columns are checked for the shape of a name
/// (`^[a-z][a-z0-9_-]{0,31}$`), not against v9's list, so a transport's new channel (`harmony`)
/// needs no migration; the registry decides which names exist.
@Suite("v15-open-channels / pg9-open-channels: a channel is checked for its shape")
struct OpenChannelsMigrationTests {
    static let fcmToken = "dGVzdC1pbnN0YW5jZQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx1l8ELEtGjyL4UbCk7xMWIG_Zz"
    static let badNames = [
        "Harmony OS", "", String(repeating: "a", count: 40), String(repeating: "a", count: 33),
        "harmony!", "9lives", "-x", "_x", "harmonY", "harmony\n",
    ]
    static let goodNames = ["harmony", "a", "a-b_c9", String(repeating: "a", count: 32)]

    static func insertDevice(_ db: any SQLExecutor, app: Int64, token: String, channel: String) throws {
        try db.execute(
            """
            INSERT INTO devices (app_id, token, environment, created_at, updated_at, channel)
            VALUES (?, ?, 'production', 0, 0, ?)
            """, [.integer(app), .text(token), .text(channel)])
    }

    static func insertMessage(_ db: any SQLExecutor, app: Int64) throws -> Int64 {
        let row = try db.queryOne(
            """
            INSERT INTO messages (app_id, vendor, audience, options, state, created_at)
            VALUES (?, 'native', '"all"', '{}', 'completed', 0) RETURNING id
            """, [.integer(app)])
        return try #require(row?[0].int)
    }

    static func insertDelivery(_ db: any SQLExecutor, message: Int64, token: String, channel: String) throws {
        try db.execute(
            """
            INSERT INTO deliveries (message_id, token, environment, state, updated_at, channel)
            VALUES (?, ?, 'production', 'failed', 0, ?)
            """, [.integer(message), .text(token), .text(channel)])
    }

    static func insertCredential(_ db: any SQLExecutor, app: Int64, channel: String) throws {
        try db.execute(
            """
            INSERT INTO channel_credentials (app_id, channel, vendor_app_id, client_id, encrypted_secret, created_at)
            VALUES (?, ?, 'vendor-app', 'client', ?, 0)
            """, [.integer(app), .text(channel), .blob([1, 2, 3])])
    }

    static func channels(_ store: any GatewayStore, _ table: String) async throws -> [String] {
        try await store.sharedDatabase.read { db in
            try db.query("SELECT channel FROM \(table) ORDER BY id").compactMap { $0[0].string }
        }
    }

    /// One channel-name rule: the names the databases' CHECKs store and refuse below are the
    /// names `PushChannel` accepts and refuses, so a name fails at once, not at its first row.
    @Test func swiftAcceptsExactlyWhatTheDatabasesStore() {
        for name in Self.goodNames { #expect(PushChannel(rawValue: name) != nil, "\(name)") }
        for name in Self.badNames { #expect(PushChannel(rawValue: name) == nil, "\(name.debugDescription)") }
    }

    @Test(arguments: Backend.allCases)
    func anyWellFormedNameIsStoredAndReadBackOthersAreRefused(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let message = try await store.sharedDatabase.write { db in try Self.insertMessage(db, app: app.id) }
            for (index, name) in Self.goodNames.enumerated() {
                try await store.sharedDatabase.write { db in
                    try Self.insertDevice(db, app: app.id, token: "good-\(index)", channel: name)
                    try Self.insertDelivery(db, message: message, token: "good-\(index)", channel: name)
                    try Self.insertCredential(db, app: app.id, channel: name)
                }
            }
            for table in ["devices", "deliveries", "channel_credentials"] {
                #expect(try await Self.channels(store, table) == Self.goodNames, "\(table)")
            }
            for (index, name) in Self.badNames.enumerated() {
                await #expect(throws: (any Error).self, "device on \(name.debugDescription)") {
                    try await store.sharedDatabase.write { db in
                        try Self.insertDevice(db, app: app.id, token: "bad-\(index)", channel: name)
                    }
                }
                await #expect(throws: (any Error).self, "delivery on \(name.debugDescription)") {
                    try await store.sharedDatabase.write { db in
                        try Self.insertDelivery(db, message: message, token: "bad-\(index)", channel: name)
                    }
                }
                await #expect(throws: (any Error).self, "credential on \(name.debugDescription)") {
                    try await store.sharedDatabase.write { db in
                        try Self.insertCredential(db, app: app.id, channel: name)
                    }
                }
            }
            // Every channel's credentials live here since v24 / pg18, APNs's too; so do its devices.
            try await store.sharedDatabase.write { db in
                try Self.insertCredential(db, app: app.id, channel: "apns")
                try Self.insertDevice(db, app: app.id, token: "apns-device", channel: "apns")
            }
            for table in ["devices", "deliveries", "channel_credentials"] {
                #expect(
                    try await Self.channels(store, table).count == Self.goodNames.count
                        + (table == "deliveries" ? 0 : 1))
            }
        }
    }

    /// A v14 file, kept open on a connection of its own across the upgrade.
    static func v14Database(_ database: TemporaryDatabase) throws -> DatabasePool {
        try database.openMigrated(through: Schema.v14Identifier)
    }

    static func seed(_ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO apps (id, name, bundle_id, api_key_hash, created_at, updated_at)
                VALUES (1, 'demo', 'com.example.demo', 'hash', 0, 0);
                INSERT INTO devices (app_id, token, environment, created_at, updated_at, channel)
                VALUES (1, ?, 'sandbox', 0, 0, 'apns'), (1, ?, 'production', 0, 0, 'fcm');
                INSERT INTO messages (id, app_id, vendor, audience, options, state, created_at)
                VALUES (1, 1, 'native', '"all"', '{}', 'completed', 0);
                INSERT INTO deliveries (message_id, token, environment, state, updated_at, channel)
                VALUES (1, ?, 'production', 'failed', 0, 'fcm');
                INSERT INTO channel_credentials (app_id, channel, vendor_app_id, client_id, encrypted_secret, created_at)
                VALUES (1, 'fcm', 'project', 'client', x'010203', 0);
                """, arguments: [token(1).value, Self.fcmToken, Self.fcmToken])
    }

    static func tableSQL(_ db: Database, _ table: String) throws -> String {
        try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE name = ?", arguments: [table]) ?? ""
    }

    @Test func aSQLiteDatabaseAtV14KeepsItsRowsAndEveryConnectionSeesTheNewChecks() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let old = try Self.v14Database(database)
        try await old.write { db in try Self.seed(db) }
        // v14 refuses the name.
        await #expect(throws: DatabaseError.self) {
            try await old.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO devices (app_id, token, environment, created_at, updated_at, channel)
                        VALUES (1, 'early', 'production', 0, 0, 'harmony')
                        """)
            }
        }

        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        let applied = try await store.appliedMigrations()
        #expect(applied.contains(Schema.v15Identifier))
        #expect(applied == store.migrationNames)
        let integrity = try await store.sharedDatabase.read { db in
            try db.query("PRAGMA integrity_check").compactMap { $0[0].string }
        }
        #expect(integrity == ["ok"])

        // The rows are kept, and read through the store.
        #expect(try await store.device(appID: 1, token: token(1))?.channel == .apns)
        let fcm = try #require(DeviceToken(Self.fcmToken, channel: .fcm))
        #expect(try await store.device(appID: 1, token: fcm)?.channel == .fcm)
        #expect(try await store.channelCredentials(appID: 1).map(\.channel) == [.fcm])
        #expect(try await Self.channels(store, "deliveries") == ["fcm"])

        // Only the CHECK text changed, exactly once per table.
        for table in ["devices", "deliveries", "channel_credentials"] {
            let sql = try await old.read { db in try Self.tableSQL(db, table) }
            #expect(!sql.contains("channel IN ("), "\(table)")
            #expect(sql.components(separatedBy: Schema.channelShape).count == 2, "\(table)")
        }

        // The connection opened before the migration sees the new schema.
        try await old.write { db in
            try db.execute(
                sql: """
                    INSERT INTO devices (app_id, token, environment, created_at, updated_at, channel)
                    VALUES (1, 'late', 'production', 0, 0, 'harmony')
                    """)
        }
        await #expect(throws: DatabaseError.self) {
            try await old.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO devices (app_id, token, environment, created_at, updated_at, channel)
                        VALUES (1, 'spaced', 'production', 0, 0, 'Harmony OS')
                        """)
            }
        }
        try old.close()
        #expect(try await Self.channels(store, "devices") == ["apns", "fcm", "harmony"])
    }

    @Test func aSQLiteCheckThatIsNotV9sTextFailsTheMigration() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let old = try Self.v14Database(database)
        // Someone's hand-edited schema: devices lists one more channel.
        try await old.write { db in
            let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
            try db.execute(sql: "PRAGMA writable_schema = ON")
            try db.execute(
                sql:
                    "UPDATE sqlite_schema SET sql = replace(sql, '''vivo''))', '''vivo'', ''meizu''))') WHERE name = 'devices'"
            )
            try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
            try db.execute(sql: "PRAGMA writable_schema = OFF")
        }
        let before = try await old.read { db in try Self.tableSQL(db, "devices") }
        #expect(before.contains("'meizu'"))
        #expect(throws: StoreError.self) { _ = try SQLiteStore(path: database.path) }
        // Nothing of v15 stayed: not recorded, no table edited.
        let applied = try await old.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        }
        #expect(applied.last == Schema.v14Identifier)
        #expect(try await old.read { db in try Self.tableSQL(db, "devices") } == before)
        #expect(try await old.read { db in try Self.tableSQL(db, "deliveries") }.contains(Schema.v9ChannelCheck))
        try old.close()
    }

    @Test func aPostgresDatabaseAtPg8KeepsItsRows() async throws {
        try await withTestDatabase { url in
            let old = try PostgresConnection(url: url)
            try PostgresSchema.migrate(old, plugins: [], through: "pg8-held-deliveries-expire")
            try old.execute(
                """
                INSERT INTO apps (id, name, bundle_id, api_key_hash, created_at, updated_at)
                VALUES (1, 'demo', 'com.example.demo', 'hash', 0, 0)
                """)
            try old.execute(
                """
                INSERT INTO devices (app_id, token, environment, created_at, updated_at, channel)
                VALUES (1, $1, 'sandbox', 0, 0, 'apns'), (1, $2, 'production', 0, 0, 'fcm')
                """, [.text(token(1).value), .text(Self.fcmToken)])
            try old.execute(
                """
                INSERT INTO channel_credentials (app_id, channel, vendor_app_id, client_id, encrypted_secret, created_at)
                VALUES (1, 'fcm', 'project', 'client', '\\x010203', 0)
                """)
            #expect(throws: PostgresError.self) {
                try old.execute(
                    """
                    INSERT INTO devices (app_id, token, environment, created_at, updated_at, channel)
                    VALUES (1, 'early', 'production', 0, 0, 'harmony')
                    """)
            }

            let store = try PostgresStore(url: url)
            defer { try? store.close() }
            let applied = try await store.appliedMigrations()
            #expect(applied.contains("pg9-open-channels"))
            #expect(applied == store.migrationNames)
            #expect(try await store.device(appID: 1, token: token(1))?.channel == .apns)
            let fcm = try #require(DeviceToken(Self.fcmToken, channel: .fcm))
            #expect(try await store.device(appID: 1, token: fcm)?.channel == .fcm)
            #expect(try await store.channelCredentials(appID: 1).map(\.channel) == [.fcm])

            let checks = try old.execute(
                """
                SELECT conname, convalidated::text, pg_get_constraintdef(oid) FROM pg_constraint
                WHERE conname LIKE '%channel_check' ORDER BY conname
                """
            ).rows.map { "\($0[0].string ?? ""): \($0[1].string ?? "") \($0[2].string ?? "")" }
            #expect(
                checks == [
                    "channel_credentials_channel_check: true CHECK ((channel ~ '^[a-z][a-z0-9_-]{0,31}$'::text))",
                    "deliveries_channel_check: true CHECK ((channel ~ '^[a-z][a-z0-9_-]{0,31}$'::text))",
                    "devices_channel_check: true CHECK ((channel ~ '^[a-z][a-z0-9_-]{0,31}$'::text))",
                ])
            try old.execute(
                """
                INSERT INTO devices (app_id, token, environment, created_at, updated_at, channel)
                VALUES (1, 'late', 'production', 0, 0, 'harmony')
                """)
            #expect(try await Self.channels(store, "devices") == ["apns", "fcm", "harmony"])
        }
    }
}
