import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// A plugin that keeps what v8 drops from `devices`, as a vendor moving its columns does: a
/// table of its own, the copy (before v8), and a later step.
private let keepTable = PluginMigration(
    "1-table", sql: "CREATE TABLE keep_channels (device_id INTEGER PRIMARY KEY, channel TEXT NOT NULL) STRICT")
private let keepCopy = PluginMigration(
    "2-copy", before: Schema.v8Identifier,
    sql: """
        INSERT INTO keep_channels (device_id, channel)
        SELECT id, baidu_channel_id FROM devices WHERE baidu_channel_id IS NOT NULL
        """)
private let keepLater = PluginMigration(
    "3-index", sql: "CREATE INDEX keep_channels_by_channel ON keep_channels(channel)")
private let keep = SQLiteStore.PluginSchema(name: "keep", migrations: [keepTable, keepCopy, keepLater])

@Suite("v8: vendor columns leave the core; plugin migrations that must run before a core one")
struct VendorColumnsMigrationTests {
    /// The database main wrote at 46ec891 (core v1–v3, two devices bound through Baidu).
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Fixtures/main-46ec891/tuisong.db")

    static func columns(_ table: String, _ store: SQLiteStore) async throws -> [String] {
        try await store.sharedDatabase.read { db in
            try db.query("SELECT name FROM pragma_table_info('\(table)') ORDER BY cid").compactMap { $0[0].string }
        }
    }

    static let core = SQLiteStore.migrationNames()
    static let v8 = core.firstIndex(of: Schema.v8Identifier)!
    /// v1…v7, the plugin's steps up to the copy, v8, the rest of the plugin.
    static let expectedOrder =
        Array(core[..<v8]) + ["keep:1-table", "keep:2-copy", Schema.v8Identifier]
        + Array(core[(v8 + 1)...]) + ["keep:3-index"]

    @Test("The old database: the copy runs before v8 drops the columns, nothing bound is lost")
    func oldDatabaseKeepsItsData() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        try FileManager.default.createDirectory(
            atPath: (database.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.fixture.path, toPath: database.path)

        let store = try SQLiteStore(path: database.path, configuration: .init(pluginMigrations: [keep]))
        #expect(store.migrationNames == Self.expectedOrder)
        let applied = try await store.sharedDatabase.read { db in
            try db.query("SELECT identifier FROM grdb_migrations ORDER BY rowid").compactMap { $0[0].string }
        }
        // The fixture had v1–v3; the rest ran in the registered order.
        #expect(applied == Self.expectedOrder)
        let kept = try await store.sharedDatabase.read { db in
            try db.query("SELECT device_id, channel FROM keep_channels ORDER BY device_id")
                .map { "\($0[0].int ?? 0):\($0[1].string ?? "")" }
        }
        #expect(kept == ["1:3982479587885260695", "2:5652258211787619968"])

        let devices = try await Self.columns("devices", store)
        #expect(!devices.contains("baidu_user_id") && !devices.contains("baidu_channel_id"))
        #expect(!devices.contains("unread_count"))
        #expect(devices.contains("token") && devices.contains("credential_selector"))
        // v24 moved the uploaded credentials, selector and all, into `channel_credentials`: the
        // vendor columns v8 dropped did not come back with them.
        #expect(try await Self.columns("credentials", store).isEmpty)
        let credentials = try await Self.columns("channel_credentials", store)
        #expect(!credentials.contains("tencent_busi_id") && !credentials.contains("easemob_cert_name"))
        #expect(credentials.contains("selector"))

        // The core still reads the devices, by token and by id.
        let first = try #require(
            try await store.device(appID: 1, token: DeviceToken(String(repeating: "ab", count: 32))!))
        #expect(try await store.devices(appID: 1, ids: [2, first.id, 99]).map(\.id) == [1, 2])
        #expect(try await store.devices(appID: 2, ids: [1, 2]).isEmpty)
        try store.close()
    }

    @Test("A fresh database gets the same order; the copy finds nothing to copy")
    func freshDatabase() async throws {
        let fixture = try StoreFixture(.init(pluginMigrations: [keep]))
        defer { fixture.tearDown() }
        #expect(try await fixture.store.appliedMigrations() == Self.expectedOrder)
        let count = try await fixture.store.sharedDatabase.read { db in
            try db.queryOne("SELECT count(*) FROM keep_channels")?[0].int
        }
        #expect(count == 0)
    }

    @Test("A database migrated past v8 without the plugin records the copy without running it")
    func copyAfterTheDropIsSkipped() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let plain = try SQLiteStore(path: database.path)
        #expect(try await plain.appliedMigrations() == Self.core)
        try plain.close()

        // The copy's SELECT names columns v8 dropped: run, it would fail the open.
        let store = try SQLiteStore(path: database.path, configuration: .init(pluginMigrations: [keep]))
        #expect(Set(try await store.appliedMigrations()) == Set(Self.expectedOrder))
        let objects = try await store.schemaObjectNames()
        #expect(objects.contains("keep_channels") && objects.contains("keep_channels_by_channel"))
        try store.close()
    }

    @Test("A migration naming no core migration in `before` is refused at open")
    func unknownBeforeIsRefused() throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let wrong = PluginMigration("1-copy", before: "v99-no-such-migration", sql: "SELECT 1")
        #expect(throws: StoreError.self) {
            _ = try SQLiteStore(
                path: database.path, configuration: .init(pluginMigrations: [.init(name: "keep", migrations: [wrong])]))
        }
    }
}
