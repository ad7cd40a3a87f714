import Foundation
import GRDB
import TuisongCore
import TuisongPluginTestKit
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// A temporary directory holding one test's database, removed when the test ends.
struct TemporaryDatabase {
    let directory: URL
    var path: String { directory.appendingPathComponent("nested/tuisong.db").path }

    init() throws {
        StandardChannels.declare()
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("tuisong-store-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The core schema migrated through `identifier` only, on this file (its directory made):
    /// a database as an older release left it, for a migration test.
    func openMigrated(through identifier: String) throws -> DatabasePool {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        return try Schema.openDatabase(path: path, through: identifier)
    }
}

/// A store on a fresh file, in a directory that does not exist yet (so the store has to
/// create it). `tearDown()` closes the store and deletes the files.
struct StoreFixture {
    let database: TemporaryDatabase
    let store: SQLiteStore

    init(_ options: SQLiteStore.Options = .init()) throws {
        database = try TemporaryDatabase()
        store = try SQLiteStore(path: database.path, configuration: options)
    }

    func tearDown() {
        try? store.close()
        database.remove()
    }
}

/// A valid 64-hex-digit token derived from `n`.
func token(_ n: Int) -> DeviceToken {
    StandardChannels.declare()
    return DeviceToken(testToken(n, prefix: String(repeating: "0", count: 48)))!
}

func tag(_ name: String) -> TagName { TagName(name)! }

func makeApp(_ store: SQLiteStore, _ name: String = "demo") async throws -> App {
    try await store.createApp(
        name: name, bundleID: "com.example.\(name)", apiKeyHash: "hash-\(name)-\(UUID().uuidString)"
    )
}

/// The databases the store runs on (the kit's one enum); suites marked
/// `arguments: Backend.allCases` run on both.
typealias Backend = PluginStoreBackend

/// A fresh store on `backend` (a new SQLite file, or a new PostgreSQL database in the test
/// cluster), closed and removed after `body` (`withTestStore`, the kit's).
func withStore<T>(
    _ backend: Backend, clock: any TuisongCore.Clock = SystemClock(), plugins: [PluginSchema] = [],
    _ body: (any GatewayStore) async throws -> T
) async throws -> T {
    try await withTestStore(backend, clock: clock, plugins: plugins, poolSize: 4, body)
}

func makeApp(_ store: any GatewayStore, _ name: String = "demo") async throws -> App {
    try await store.createApp(
        name: name, bundleID: "com.example.\(name)", apiKeyHash: "hash-\(name)-\(UUID().uuidString)"
    )
}
