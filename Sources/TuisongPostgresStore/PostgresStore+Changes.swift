import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

/// Changes between nodes: `publish` sends `pg_notify('tuisong_changes', payload)`; the first
/// `subscribe` starts a `PostgresListener` on a connection of its own, which hands every
/// node's notifications (this node's included) to the subscribers, and tells them to
/// resynchronise (`nil`) whenever it (re)connects. `close()` stops it.
extension PostgresStore {
    /// The NOTIFY channel of store changes.
    public static let changeChannel = "tuisong_changes"

    public func publish(_ change: StoreChange) async {
        do {
            try await read { conn in
                try conn.run("SELECT pg_notify(\(Self.changeChannel), \(change.payload))")
            }
        } catch {
            // Caches still expire on their own; a lost wake-up is found by the next poll.
            logger.warning(
                "cannot publish a store change", metadata: ["change": "\(change.payload)", "error": "\(error)"])
        }
    }

    public func subscribe(_ handler: @escaping @Sendable (StoreChange?) -> Void) {
        changes.local.subscribe(handler)
        changes.startListening(url: url, clock: clock, logger: logger)
    }
}

/// The subscribers of one `PostgresStore` and its listener.
final class PostgresChanges: Sendable {
    let local = LocalChangeFeed()
    private struct State {
        var listener: PostgresListener?
        var starting = false
        var stopped = false
    }
    private let state = Mutex(State())

    /// Starts the listener unless it runs (or is being started). When the database cannot be
    /// reached it tries again every 2 s of `clock` until it can or the store closes.
    func startListening(url: String, clock: any TuisongCore.Clock, logger: Logger) {
        let start = state.withLock { state -> Bool in
            guard state.listener == nil, !state.starting, !state.stopped else { return false }
            state.starting = true
            return true
        }
        guard start else { return }
        if attempt(url: url, logger: logger) { return }
        // The pause waits on the store's clock (a test moves it); each try connects on a thread
        // of its own, since libpq's connect blocks and must not hold a cooperative-pool thread.
        Task.detached { [self] in
            while !state.withLock({ $0.stopped }) {
                try? await clock.sleep(for: .seconds(2))
                let started = await withCheckedContinuation { continuation in
                    Thread.detachNewThread { continuation.resume(returning: self.attempt(url: url, logger: logger)) }
                }
                if started { return }
            }
        }
    }

    /// One try at starting the listener; true when it runs or the store closed meanwhile.
    private func attempt(url: String, logger: Logger) -> Bool {
        let local = self.local
        do {
            let listener = try PostgresListener(
                url: url, channels: [PostgresStore.changeChannel], label: "tuisong-changes", logger: logger,
                onConnect: { local.deliver(nil) },
                handler: { notification in
                    // A payload this build does not know (a newer node's) is not for us.
                    if let change = StoreChange(payload: notification.payload) { local.deliver(change) }
                })
            let keep = state.withLock { state -> Bool in
                state.starting = false
                guard !state.stopped else { return false }
                state.listener = listener
                return true
            }
            if !keep { listener.shutdown() }
            return true
        } catch {
            logger.warning(
                "cannot listen for store changes; caches expire on their own meanwhile",
                metadata: ["error": "\(error)", "retry_seconds": "2"])
            return state.withLock { state in
                if state.stopped { state.starting = false }
                return state.stopped
            }
        }
    }

    /// Stops the listener; later subscriptions start nothing.
    func stop() {
        let listener = state.withLock { state -> PostgresListener? in
            state.stopped = true
            defer { state.listener = nil }
            return state.listener
        }
        listener?.shutdown()
    }
}
