import Foundation
import Synchronization
import TuisongCore

/// Apps by id, as the delivery path reads them (the bundle id a transport builds its topic on), cached for `ttl`.
///
/// Every writer of an app in this process (the admin API's update, key regeneration, delete)
/// calls `changed(id:)`, which drops the entry and tells the listeners (the API key cache), so
/// the next push uses the new bundle id at once. Writers in other processes (the CLI) are
/// seen within `ttl`.
public final class AppCache: Sendable {
    private struct Entry {
        var app: App
        var expires: Date
    }

    private struct State {
        var entries: [Int64: Entry] = [:]
        /// Bumped by every change: a load that began before a change does not store its
        /// (possibly stale) result.
        var generation: UInt64 = 0
        var listeners: [@Sendable (Int64) -> Void] = []
    }

    private let store: any AppStore
    private let clock: any Clock
    private let ttl: TimeInterval
    private let state = Mutex(State())

    public init(store: any AppStore, clock: any Clock, ttl: TimeInterval = 5) {
        self.store = store
        self.clock = clock
        self.ttl = ttl
    }

    public func app(id: Int64) async throws -> App? {
        let now = clock.now
        let (cached, generation) = state.withLock { state in
            (state.entries[id].flatMap { $0.expires > now ? $0.app : nil }, state.generation)
        }
        if let cached { return cached }
        let app = try await store.app(id: id)
        state.withLock { state in
            guard state.generation == generation else { return }
            if let app {
                if state.entries.count >= 10_000 { state.entries.removeAll(keepingCapacity: true) }
                state.entries[id] = Entry(app: app, expires: now.addingTimeInterval(ttl))
            } else {
                state.entries[id] = nil
            }
        }
        return app
    }

    /// The app was updated or deleted: forget it here and in every listener.
    public func changed(id: Int64) {
        let listeners = state.withLock { state in
            state.generation &+= 1
            state.entries[id] = nil
            return state.listeners
        }
        for listener in listeners { listener(id) }
    }

    /// `listener` is called with the id of every changed app (other caches keyed by app).
    public func onChange(_ listener: @escaping @Sendable (Int64) -> Void) {
        state.withLock { $0.listeners.append(listener) }
    }
}
