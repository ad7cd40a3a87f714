import Foundation
import Synchronization
import TuisongCore

/// Tells providers that an app changed (its settings, secrets, deletion): the gateway calls
/// `changed(appID:)` from its one app cache's invalidation (`AppCache.changed(id:)`), which
/// every writer of an app on this node calls and the store's change feed calls for writers on
/// other nodes, so a provider's own per-app cache has no second path to keep true.
public final class AppChangeNotices: Sendable {
    private let listeners = Mutex<[@Sendable (Int64) -> Void]>([])

    public init() {}

    /// `listener` is called with the id of every changed app.
    public func subscribe(_ listener: @escaping @Sendable (Int64) -> Void) {
        listeners.withLock { $0.append(listener) }
    }

    public func changed(appID: Int64) {
        for listener in listeners.withLock({ $0 }) { listener(appID) }
    }
}

/// An app as a vendor's calls resolve it, with its secret opened, kept per lookup key (an
/// SDKAppID, an app id) so a chat message does not read the app and open its secret again:
/// dropped when the app changes (`AppChangeNotices`), and kept at most `ttl` so that a change
/// made where no notice reaches this node (the CLI beside a SQLite gateway) is seen within it.
/// Only in memory: the store keeps the secret sealed, and nothing here is logged.
///
///     let opened = try await cache.value(for: sdkAppID) { try await load(sdkAppID) }
public final class OpenedApps<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        var appID: Int64
        var value: Value
        var expires: Date
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Bumped by every change: a load that began before a change does not store its
        /// (possibly stale) result.
        var generation: UInt64 = 0
    }

    private let clock: any Clock
    private let ttl: TimeInterval
    private let state = Mutex(State())

    /// Entries at most; past it the cache starts over (a bound, not a policy: apps are few).
    static var capacity: Int { 4096 }

    public init(clock: any Clock, ttl: TimeInterval = 1, changes: AppChangeNotices) {
        self.clock = clock
        self.ttl = ttl
        changes.subscribe { [weak self] appID in self?.forget(appID: appID) }
    }

    /// The value kept for `key`, or what `load` answers (the app's id and the value; nil for
    /// none, which is not kept: an unknown key is looked up each time, as without the cache).
    public func value(for key: Key, load: () async throws -> (appID: Int64, value: Value)?) async throws -> Value? {
        let now = clock.now
        let (kept, generation) = state.withLock { state in
            (state.entries[key].flatMap { $0.expires > now ? $0.value : nil }, state.generation)
        }
        if let kept { return kept }
        guard let loaded = try await load() else { return nil }
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count >= Self.capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[key] = Entry(appID: loaded.appID, value: loaded.value, expires: now.addingTimeInterval(ttl))
        }
        return loaded.value
    }

    /// Drops what was kept for `appID`, under every key.
    public func forget(appID: Int64) {
        state.withLock { state in
            state.generation &+= 1
            state.entries = state.entries.filter { $0.value.appID != appID }
        }
    }
}
