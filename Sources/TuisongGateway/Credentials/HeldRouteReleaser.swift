import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongDelivery

/// Releases pushes this node just held when their route can send after all (`HoldWatcher`).
///
/// A credential added beside a running gateway (the CLI on SQLite writes the file from another
/// process; another node on PostgreSQL) releases the held rows once, right after its commit;
/// this node may meanwhile hold them again from a lookup it cached before the commit, and no
/// one would release them a second time. So after each committed hold, the route's credential
/// is looked up again from the store: when one can send, the app's cached lookups are dropped
/// and the route's holds released. Holds reported while a check runs are checked by the next
/// pass, so a burst of holds costs one lookup per route, not one per flush.
final class HeldRouteReleaser: HoldWatcher {
    private struct State {
        var pending: Set<HeldRoute> = []
        var running = false
    }

    private let store: any MessageStore
    private let transports: GatewayTransports
    private let engine: DeliveryEngine
    private let changes: (any StoreChangeFeed)?
    private let clock: any Clock
    private let logger: Logger
    private let state = Mutex(State())

    init(
        store: any MessageStore, transports: GatewayTransports, engine: DeliveryEngine,
        changes: (any StoreChangeFeed)?, clock: any Clock, logger: Logger
    ) {
        self.store = store
        self.transports = transports
        self.engine = engine
        self.changes = changes
        self.clock = clock
        self.logger = logger
    }

    func held(_ routes: Set<HeldRoute>) {
        let start = state.withLock { state -> Bool in
            state.pending.formUnion(routes)
            guard !state.running else { return false }
            state.running = true
            return true
        }
        guard start else { return }
        Task { await drain() }
    }

    private func drain() async {
        while let routes = state.withLock({ state -> Set<HeldRoute>? in
            guard !state.pending.isEmpty else {
                state.running = false
                return nil
            }
            defer { state.pending = [] }
            return state.pending
        }) {
            var released = 0
            for route in routes where await transports.canSend(route) {
                released += await release(route)
            }
            if released > 0 {
                engine.wake()
                await changes?.publish(.wake)
            }
        }
    }

    /// Drops the app's cached lookups (one may still say "no credential"), then releases.
    private func release(_ route: HeldRoute) async -> Int {
        await transports.forget(route)
        do {
            let released: Int
            if let selector = route.selector {
                released = try await store.releaseHeldDeliveries(appID: route.appID, selector: selector, now: clock.now)
            } else if transports.holdsPerEnvironment(route.channel) {
                released = try await store.releaseHeldDeliveries(
                    appID: route.appID, environment: route.environment, now: clock.now)
            } else {
                released = try await store.releaseHeldDeliveries(
                    appID: route.appID, channel: route.channel, now: clock.now)
            }
            if released > 0 {
                logger.info(
                    "released deliveries held while a credential was being added",
                    metadata: [
                        "app": "\(route.appID)", "channel": "\(route.channel.rawValue)", "released": "\(released)",
                    ])
            }
            return released
        } catch {
            // Tried again shortly: nothing else would release these.
            logger.error(
                "cannot release held deliveries of a route that can send; trying again",
                metadata: ["app": "\(route.appID)", "channel": "\(route.channel.rawValue)", "error": "\(error)"])
            Task { [self] in
                try? await clock.sleep(for: .seconds(1))
                held([route])
            }
            return 0
        }
    }
}
