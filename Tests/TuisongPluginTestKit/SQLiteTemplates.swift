import Foundation
import Synchronization
import TuisongCore
import TuisongStore

/// SQLite files that hold a schema, made once per process and copied for each test that opens a
/// new store — the counterpart of the PostgreSQL test templates (`TestTemplates`). Migrating a new
/// file ran every core and plugin migration for each of the suite's SQLite stores: ~55 ms of CPU
/// and, with the commits' syncs, ~0.2 s of wall time each on the 2-core machine (issue #46); a copy
/// of the ~0.5 MB file costs about a millisecond, and the store opened on it finds every migration
/// applied. Per process, so a template never holds a schema an earlier build wrote; removed when
/// the process exits.
///
/// A copy opens as the migrated file it is: what a store does to a new file (create its
/// directory, migrate from nothing, set the file's mode) is tested on new files
/// (`StoreFixture`, `FilePermissionTests`, the migration suites), not through these.
public enum SQLiteTemplates {
    /// Writes a new database migrated with the core migrations then `plugins` to `path`, creating
    /// its directory; `path` must not exist yet.
    public static func copyMigrated(plugins: [PluginSchema] = [], to path: String) throws {
        let template = try file(plugins: plugins)
        let target = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        try FileManager.default.copyItem(atPath: template, toPath: path)
    }

    /// The template file for `plugins`, made the first time this process asks for that schema;
    /// callers asking for the same schema meanwhile wait for it.
    static func file(plugins: [PluginSchema]) throws -> String {
        let key = String(reflecting: plugins.map { ($0.name, $0.migrations) })
        let slot = slots.withLock { slots in
            if let slot = slots[key] { return slot }
            let slot = Slot()
            slots[key] = slot
            return slot
        }
        return try slot.path.withLock { path in
            if let path { return path }
            let made = try make(plugins: plugins)
            path = made
            return made
        }
    }

    private static func make(plugins: [PluginSchema]) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appending(
            path: "tuisong-sqlite-template-\(getpid())-\(UUID().uuidString)")
        let path = directory.appending(path: "template.db").path
        registerRemovalAtExit(directory)
        try SQLiteStore(path: path, configuration: .init(pluginMigrations: plugins)).close()
        // The last connection's close checkpoints the WAL into the file and deletes it: what is
        // copied is then the whole database. A WAL left behind would mean a connection still
        // open, and a copy without it a database missing its last commits.
        for leftover in ["-wal", "-journal"] where FileManager.default.fileExists(atPath: path + leftover) {
            let size = (try? FileManager.default.attributesOfItem(atPath: path + leftover)[.size] as? Int) ?? 0
            guard size == 0 else {
                throw TemplateError(message: "the template \(path) kept a \(leftover) of \(size) bytes after closing")
            }
        }
        return path
    }

    struct TemplateError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    private final class Slot: Sendable {
        let path = Mutex<String?>(nil)
    }

    private static let slots = Mutex<[String: Slot]>([:])
    private static let madeDirectories = Mutex<[URL]?>(nil)

    private static func registerRemovalAtExit(_ directory: URL) {
        let first = madeDirectories.withLock { made in
            defer { made = (made ?? []) + [directory] }
            return made == nil
        }
        guard first else { return }
        atexit {
            for directory in SQLiteTemplates.madeDirectories.withLock({ $0 ?? [] }) {
                try? FileManager.default.removeItem(at: directory)
            }
        }
    }
}
