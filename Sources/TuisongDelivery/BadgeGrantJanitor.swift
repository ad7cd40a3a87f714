import Logging
import Synchronization
import TuisongCore

/// Deletes, in the background, the badge grants of messages that finished sending
/// (`AccountStore.grantBadges` keeps one per counted account while a message may still be
/// decided). At most one clean-up runs at a time; a request while one runs starts another
/// after it, which then sees the message that just finished.
final class BadgeGrantJanitor: Sendable {
    private let store: any MessageStore
    private let logger: Logger
    private let running = Mutex<Task<Void, Never>?>(nil)

    init(store: any MessageStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Starts a clean-up after the one running, if any; it does nothing once `stopping` holds.
    func forgetFinished(unlessStopping stopping: @escaping @Sendable () -> Bool) {
        running.withLock { running in
            let previous = running
            running = Task {
                await previous?.value
                if stopping() { return }
                do {
                    let forgotten = try await self.store.forgetFinishedBadgeGrants()
                    if forgotten > 0 {
                        self.logger.debug(
                            "forgot badge grants of finished messages", metadata: ["grants": "\(forgotten)"])
                    }
                } catch {
                    self.logger.warning(
                        "forgetting the badge grants of finished messages failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    /// Returns once the clean-up running now (if any) has ended.
    func finished() async {
        await running.withLock { $0 }?.value
    }
}
