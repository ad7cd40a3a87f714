import Foundation
import Logging
import TuisongLookAlikes

/// The directory that holds the database (`data/` by default) should be 0700: the file names
/// alone say what is kept there, and a directory others can read invites a later file to be
/// created readable. The store creates it 0700; one created earlier (0755 before this fix)
/// is tightened on start — but only when it holds nothing except Tuisong's own files, so a
/// database configured into a shared directory (`/var/lib`) never changes that directory.
enum DataDirectory {
    /// Tightens the database's directory if it is open to group or others and holds only
    /// Tuisong's files; logs what it did, or why it left the directory alone.
    static func secure(_ config: GatewayConfig, logger: Logger) {
        let database = config.database.sqlitePath ?? config.database.path
        let directory = (database as NSString).deletingLastPathComponent
        let path = directory.isEmpty ? "." : directory
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o077 != 0 else { return }
        let previous = "0" + String(info.st_mode & 0o777, radix: 8)
        let ours = ownFileNames(config)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        let lookAlikeFiles = config.transports.lookAlikes.legacyNames.command
        let foreign = entries.filter { !ours.contains($0) && !$0.hasPrefix(lookAlikeFiles) }
        guard info.st_uid == geteuid(), foreign.isEmpty else {
            logger.warning(
                "the database's directory is readable by others; left alone because it holds other files too: chmod 700 it or move the database to a directory of its own",
                metadata: ["path": "\(path)", "mode": "\(previous)"]
            )
            return
        }
        if chmod(path, 0o700) == 0 {
            logger.notice(
                "the directory holding the database and keys was open to others; set to 0700",
                metadata: ["path": "\(path)", "mode": "\(previous)"])
        } else {
            logger.warning(
                "the database's directory could not be set to 0700",
                metadata: ["path": "\(path)", "mode": "\(previous)", "error": "\(String(cString: strerror(errno)))"])
        }
    }

    /// The names Tuisong creates beside its database.
    private static func ownFileNames(_ config: GatewayConfig) -> Set<String> {
        let base = ((config.database.sqlitePath ?? config.database.path) as NSString).lastPathComponent
        var names: Set<String> = [base, base + "-wal", base + "-shm", base + "-journal"]
        for file in [config.security.masterKeyFile, config.security.initialAdminPasswordFile] where !file.isEmpty {
            names.insert((file as NSString).lastPathComponent)
        }
        return names
    }
}
