import Foundation
import TuisongSQLStore

/// The database holds the admin password hash, API key hashes, device tokens and sealed
/// secrets: only the account running Tuisong may read it. SQLite creates a database's `-wal`,
/// `-shm` and `-journal` files with the mode of the database file itself, so a database
/// created (or tightened) 0600 before it is opened keeps all of them 0600.
enum DatabaseFilePermissions {
    static let fileMode: mode_t = 0o600
    static let directoryMode: mode_t = 0o700

    /// Creates the database's directory 0700 if missing (intermediate directories too), and
    /// the database file 0600 if missing; an existing database file or companion readable
    /// by group or others is set to 0600. Returns what was changed, for the caller to log.
    static func prepare(databasePath path: String) throws -> [String] {
        var changed: [String] = []
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty && !FileManager.default.fileExists(atPath: directory) {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: Int(directoryMode)])
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, fileMode)
        if descriptor >= 0 { close(descriptor) }
        for file in [path, path + "-wal", path + "-shm", path + "-journal"] {
            if let previous = tighten(file, to: fileMode) { changed.append("\(file) \(previous) → 0600") }
        }
        return changed
    }

    /// Sets `path` to `mode` when it grants group or others anything; returns the old mode
    /// (octal text) when it was changed, nil when the file is absent or already private.
    static func tighten(_ path: String, to mode: mode_t) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o077 != 0 else { return nil }
        guard chmod(path, mode) == 0 else { return nil }
        return "0" + String(info.st_mode & 0o777, radix: 8)
    }
}
