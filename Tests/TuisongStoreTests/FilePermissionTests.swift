import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// The database holds password and key hashes, tokens and sealed secrets: 0700 directory,
/// 0600 files, whatever the umask.
@Suite struct FilePermissionTests {
    func mode(_ path: String) -> mode_t? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
    }

    @Test func aNewDatabaseIsPrivate() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        // A write, so the WAL and shared-memory files exist.
        _ = try await store.createApp(name: "a", bundleID: "com.example.a", apiKeyHash: "h")
        let directory = (database.path as NSString).deletingLastPathComponent
        #expect(mode(directory) == 0o700)
        #expect(mode(database.path) == 0o600)
        #expect(mode(database.path + "-wal") == 0o600)
        #expect(mode(database.path + "-shm") == 0o600)
        #expect(store.permissionChanges.isEmpty)
    }

    @Test func anExistingReadableDatabaseIsTightened() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        do {
            let store = try SQLiteStore(path: database.path)
            _ = try await store.createApp(name: "a", bundleID: "com.example.a", apiKeyHash: "h")
            try store.close()
        }
        // As an older version (or a loose umask) left it.
        chmod(database.path, 0o644)
        _ = FileManager.default.createFile(atPath: database.path + "-shm", contents: nil)
        chmod(database.path + "-shm", 0o644)
        let store = try SQLiteStore(path: database.path)
        defer { try? store.close() }
        _ = try await store.createApp(name: "b", bundleID: "com.example.b", apiKeyHash: "i")
        #expect(mode(database.path) == 0o600)
        #expect(mode(database.path + "-wal") == 0o600)
        #expect(mode(database.path + "-shm") == 0o600)
        #expect(store.permissionChanges.contains { $0.hasPrefix(database.path + " 0644") })
        #expect(try await store.apps().count == 2)
    }
}
