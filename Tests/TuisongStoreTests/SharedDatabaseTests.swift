import Foundation
import Testing
import TuisongCore

@testable import TuisongStore

/// A plugin schema as a provider declares it: a table of its own, then a later step.
private let notesV1 = PluginMigration(
    "1-notes",
    sql: """
        CREATE TABLE notes_items (id INTEGER PRIMARY KEY, app_id INTEGER NOT NULL REFERENCES apps(id)
            ON DELETE CASCADE, body TEXT NOT NULL UNIQUE);
        CREATE TABLE notes_runs (id INTEGER PRIMARY KEY, step TEXT NOT NULL);
        INSERT INTO notes_runs (step) VALUES ('1-notes')
        """)
private let notesV2 = PluginMigration(
    "2-notes-pinned",
    sql: """
        ALTER TABLE notes_items ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
        INSERT INTO notes_runs (step) VALUES ('2-notes-pinned')
        """)

private struct PluginOwnError: Error, Equatable {}

@Suite("SharedDatabase and plugin migrations")
struct SharedDatabaseTests {
    @Test("Plugin migrations run after the core ones, once, recorded as <name>:<identifier>")
    func migrationsRunOnce() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let options = SQLiteStore.Options(pluginMigrations: [.init(name: "notes", migrations: [notesV1])])
        let expected = SQLiteStore.migrationNames() + ["notes:1-notes"]
        for _ in 0..<3 {
            let store = try SQLiteStore(path: database.path, configuration: options)
            #expect(store.migrationNames == expected)
            #expect(try await store.appliedMigrations() == expected)
            let runs = try await store.sharedDatabase.read { db in try db.query("SELECT step FROM notes_runs") }
            #expect(runs.map { $0["step"].string } == ["1-notes"])
            try store.close()
        }
        // A later build declares a second step: only that one runs.
        let later = SQLiteStore.Options(pluginMigrations: [.init(name: "notes", migrations: [notesV1, notesV2])])
        for _ in 0..<2 {
            let store = try SQLiteStore(path: database.path, configuration: later)
            #expect(try await store.appliedMigrations() == expected + ["notes:2-notes-pinned"])
            let runs = try await store.sharedDatabase.read { db in
                try db.query("SELECT step FROM notes_runs ORDER BY id")
            }
            #expect(runs.map { $0["step"].string } == ["1-notes", "2-notes-pinned"])
            try store.close()
        }
        // A binary that does not know the plugin still opens the file.
        let plain = try SQLiteStore(path: database.path)
        #expect(try await plain.appliedMigrations() == SQLiteStore.migrationNames())
        try plain.close()
    }

    @Test("A migration declared twice, or a plugin name with ':', is refused at open")
    func badDeclarations() throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        #expect(throws: StoreError.self) {
            _ = try SQLiteStore(
                path: database.path,
                configuration: .init(pluginMigrations: [.init(name: "notes", migrations: [notesV1, notesV1])]))
        }
        #expect(throws: StoreError.self) {
            _ = try SQLiteStore(
                path: database.path, configuration: .init(pluginMigrations: [.init(name: "a:b", migrations: [notesV1])])
            )
        }
    }

    @Test("A write is one transaction: a throw rolls every statement back; the plugin's own error passes through")
    func writeIsOneTransaction() async throws {
        let fixture = try StoreFixture(.init(pluginMigrations: [.init(name: "notes", migrations: [notesV1])]))
        defer { fixture.tearDown() }
        let app = try await makeApp(fixture.store)
        let shared: any SharedDatabase = fixture.store.sharedDatabase

        let inserted = try await shared.write { db -> Int64 in
            try db.execute("INSERT INTO notes_items (app_id, body) VALUES (?, ?)", [.integer(app.id), "first"])
            #expect(db.changedRows == 1)
            return db.lastInsertedRowID
        }
        #expect(inserted > 0)

        await #expect(throws: PluginOwnError()) {
            try await shared.write { db in
                try db.execute("INSERT INTO notes_items (app_id, body) VALUES (?, ?)", [.integer(app.id), "second"])
                throw PluginOwnError()
            }
        }
        // A constraint fails as the store's own conflict, and takes the first insert with it.
        await #expect(throws: StoreError.self) {
            try await shared.write { db in
                try db.execute("INSERT INTO notes_items (app_id, body) VALUES (?, ?)", [.integer(app.id), "third"])
                try db.execute("INSERT INTO notes_items (app_id, body) VALUES (?, ?)", [.integer(app.id), "first"])
            }
        }
        let bodies = try await shared.read { db in
            try db.query("SELECT id, body FROM notes_items ORDER BY id").map { $0["body"].string }
        }
        #expect(bodies == ["first"])
    }

    @Test("Values round-trip by type; rows read by column name and position; core tables are readable")
    func valuesRoundTrip() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let app = try await makeApp(fixture.store)
        let shared = fixture.store.sharedDatabase
        let row = try await shared.read { db in
            try db.queryOne(
                "SELECT ? AS i, ? AS r, ? AS t, ? AS b, ? AS n, (SELECT name FROM apps WHERE id = ?) AS app",
                [.integer(-7), .real(2.5), "天", .blob([0, 255]), nil, .integer(app.id)])
        }
        let found = try #require(row)
        #expect(found["i"] == .integer(-7))
        #expect(found["r"].double == 2.5)
        #expect(found["t"].string == "天")
        #expect(found["b"].bytes == [0, 255])
        #expect(found["n"].isNull)
        #expect(found["app"].string == app.name)
        #expect(found[0] == found["i"])
        #expect(found["no_such_column"] == .null)
    }

    @Test("A read sees one snapshot: a write committed during it is not half-seen")
    func readIsASnapshot() async throws {
        let fixture = try StoreFixture(.init(pluginMigrations: [.init(name: "notes", migrations: [notesV1])]))
        defer { fixture.tearDown() }
        let app = try await makeApp(fixture.store)
        let shared = fixture.store.sharedDatabase
        let store = fixture.store
        let counts = try await shared.read { db -> [Int64] in
            let before = try db.queryOne("SELECT count(*) FROM notes_items")?[0].int ?? -1
            // Another connection commits while this read is open.
            let writer = Thread.detachNewThreadAndWait {
                try? store.pool.write { db in
                    try db.execute(
                        sql: "INSERT INTO notes_items (app_id, body) VALUES (?, 'during')", arguments: [app.id])
                }
            }
            _ = writer
            let after = try db.queryOne("SELECT count(*) FROM notes_items")?[0].int ?? -1
            return [before, after]
        }
        #expect(counts == [0, 0])
        let now = try await shared.read { db in try db.queryOne("SELECT count(*) FROM notes_items")?[0].int }
        #expect(now == 1)
    }
}

extension Thread {
    /// Runs `work` on a new thread and waits for it (a second connection's write, off the
    /// reader's thread).
    static func detachNewThreadAndWait(_ work: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            work()
            done.signal()
        }
        done.wait()
        return true
    }
}
