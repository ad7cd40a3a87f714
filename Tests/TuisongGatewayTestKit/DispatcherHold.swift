import Foundation
import Synchronization

/// Keeps a gateway on SQLite from dispatching: holds the `flock` its store takes to become the
/// file's dispatcher (`<database>-dispatcher.lock`, the lock a second `serve` on the same file
/// finds taken), so every message accepted meanwhile stays queued — a backlog that does not
/// drain, as under overload, until `release()`. Start the gateway with `directory`.
public final class DispatcherHold: Sendable {
    /// Where the gateway's `tuisong.db` goes (`RunningGateway.start(directory:)`).
    public let directory: URL
    private let descriptor: Mutex<Int32>

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-hold-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = directory.appending(path: "tuisong.db-dispatcher.lock").path
        let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        // A second open file description: the store's own `flock` conflicts with this one even
        // in the same process.
        guard opened >= 0, flock(opened, LOCK_EX | LOCK_NB) == 0 else {
            if opened >= 0 { close(opened) }
            throw CocoaError(.fileLocking)
        }
        descriptor = Mutex(opened)
    }

    /// Lets the gateway become the dispatcher (at its next poll). Safe to call twice.
    public func release() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
    }

    deinit { release() }
}
