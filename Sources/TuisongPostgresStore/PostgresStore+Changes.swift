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

    /// Queued messages are announced by the statement that inserts them (`insertMessageRows`,
    /// `createMessage`): the `wake` goes with its commit, where a publish after it cost every
    /// accepted message a statement of its own (0.96 a chat line at 800 lines/s, issue #47).
    public var announcesQueuedMessages: Bool { true }

    /// The `wake` of an insert, as a CTE over its rows (`rows` has a `state` column): a
    /// notification when any of them is queued, sent when the statement's transaction commits
    /// (the same notification twice in a transaction is sent once). The statement must read it
    /// (`wakeRead`): a CTE nothing reads is not run.
    static func wakeWhenQueued(_ rows: String) -> String {
        "SELECT pg_notify('\(changeChannel)', '\(StoreChange.wake.payload)') FROM \(rows) WHERE state = 'queued' LIMIT 1"
    }
    /// A condition, true for every row, that makes the statement run its `woken` CTE.
    static let wakeRead = "(SELECT count(*) FROM woken) >= 0"

    /// One `NOTIFY` of a change at a time: a publish that finds the same change being sent
    /// leaves it to the one in flight, which sends it once more when it is done — after the
    /// commit that the later publish announces, so every node still hears of it. A chat load
    /// published a wake-up per accepted message (a statement, a commit and a notification to
    /// every node's listener each, issue #47); now about one per round trip.
    public func publish(_ change: StoreChange) async {
        let payload = change.payload
        guard changes.outgoing.begin(payload) else { return }
        await notify(payload)
        guard changes.outgoing.end(payload) else { return }
        // Asked for again meanwhile: sent from a task of its own, so that this caller (an API
        // request) does not wait for changes that are not its own.
        Task { [self] in
            repeat { await notify(payload) } while changes.outgoing.end(payload)
        }
    }

    private func notify(_ payload: String) async {
        do {
            try await read { conn in
                try conn.run("SELECT pg_notify(\(Self.changeChannel), \(payload))")
            }
        } catch {
            // Caches still expire on their own; a lost wake-up is found by the next poll.
            logger.warning("cannot publish a store change", metadata: ["change": "\(payload)", "error": "\(error)"])
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
    let outgoing = OutgoingChanges()
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

/// The changes a store is sending (`publish`), by payload: whether the same one was asked for
/// again while it was being sent.
final class OutgoingChanges: Sendable {
    private let sending = Mutex<[String: Bool]>([:])

    /// True when the caller should send `payload` now; false when a send of it is in flight,
    /// which will send it once more.
    func begin(_ payload: String) -> Bool {
        sending.withLock { sending in
            if sending[payload] != nil {
                sending[payload] = true
                return false
            }
            sending[payload] = false
            return true
        }
    }

    /// After a send: true when it must be sent again (asked for meanwhile), the caller still
    /// holding it; false when it is done.
    func end(_ payload: String) -> Bool {
        sending.withLock { sending in
            if sending[payload] == true {
                sending[payload] = false
                return true
            }
            sending[payload] = nil
            return false
        }
    }
}
