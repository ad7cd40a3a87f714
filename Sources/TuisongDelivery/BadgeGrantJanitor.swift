import Logging
import Synchronization
import TuisongCore

/// Deletes, in the background, the badge grants of messages that finished sending
/// (`AccountStore.grantBadges` keeps one per counted account while a message may still be
/// decided). At most one clean-up runs at a time, and requests while it runs are folded into
/// one more run after it, which then sees every message that finished meanwhile: a chat load
/// finishing a thousand messages a second starts a few clean-ups, not a chain of a thousand
/// tasks each waiting for the one before.
final class BadgeGrantJanitor: Sendable {
    private struct State {
        var running: Task<Void, Never>?
        /// A message finished while a clean-up ran: run once more after it.
        var again = false
    }

    private let store: any MessageStore
    private let logger: Logger
    private let state = Mutex(State())

    init(store: any MessageStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// Starts a clean-up unless one runs (then one more follows it); nothing once `stopping` holds.
    func forgetFinished(unlessStopping stopping: @escaping @Sendable () -> Bool) {
        state.withLock { state in
            guard state.running == nil else {
                state.again = true
                return
            }
            state.running = Task { await self.run(unlessStopping: stopping) }
        }
    }

    private func run(unlessStopping stopping: @escaping @Sendable () -> Bool) async {
        while !stopping() {
            do {
                let forgotten = try await store.forgetFinishedBadgeGrants()
                if forgotten > 0 {
                    logger.debug("forgot badge grants of finished messages", metadata: ["grants": "\(forgotten)"])
                }
            } catch {
                logger.warning(
                    "forgetting the badge grants of finished messages failed", metadata: ["error": "\(error)"])
            }
            let again = state.withLock { state -> Bool in
                if state.again {
                    state.again = false
                    return true
                }
                state.running = nil
                return false
            }
            if !again { return }
        }
        state.withLock { $0.running = nil }
    }

    /// Returns once the clean-up running now (if any) has ended.
    func finished() async {
        await state.withLock { $0.running }?.value
    }
}
