import Foundation
import Synchronization
import TuisongCore

/// Devices of one app whose pushes go out the same way: the channel, the environment (what an
/// environment-serving credential is chosen by; Android rows carry the device's too) and the credential selector. Pushes are
/// held per route (no credential for it, or one the service refused).
public struct HeldRoute: Sendable, Hashable {
    public var appID: Int64
    public var channel: PushChannel
    public var environment: PushEnvironment
    public var selector: String?

    public init(appID: Int64, channel: PushChannel, environment: PushEnvironment, selector: String?) {
        self.appID = appID
        self.channel = channel
        self.environment = environment
        self.selector = selector
    }

    /// The route of a row held for `reason`, or nil when a credential change cannot end the
    /// hold by itself: `credential_unusable` (a secret this node cannot open) would be found
    /// sendable and held again at once.
    static func of(appID: Int64, channel: PushChannel, environment: PushEnvironment, selector: String?, reason: String?)
        -> HeldRoute?
    {
        guard reason != SendReason.credentialUnusable.description else { return nil }
        return HeldRoute(appID: appID, channel: channel, environment: environment, selector: selector)
    }
}

/// Told which routes had pushes held, each time such holds are committed.
///
/// A hold is decided from a credential lookup a transport may have cached, and a credential
/// can be added (by the console, another node, or the CLI in another process) between that
/// lookup and the hold's commit: the writer's release, run after its own commit, then finds
/// nothing held yet, and the hold would stay until the message expires. Since the engine tells
/// the watcher only after the hold is committed, a watcher that looks the credential up again
/// (uncached) and releases the route's holds when one can send closes that gap whatever the
/// interleaving: either it sees the new credential, or the credential was committed after the
/// hold, and its writer's release finds the hold.
public protocol HoldWatcher: Sendable {
    /// Called on the engine's flush or retry path: keep it short (hand the work off).
    func held(_ routes: Set<HeldRoute>)
}

extension DeliveryEngine {
    /// Sets who hears of committed holds (the gateway's credential reconciler).
    public func setHoldWatcher(_ watcher: any HoldWatcher) {
        holdWatcher.withLock { $0 = watcher }
    }

    /// Tells the watcher, if any, of `routes` just held (after their commit).
    func heldCommitted(_ routes: Set<HeldRoute>) {
        guard !routes.isEmpty, let watcher = holdWatcher.withLock({ $0 }) else { return }
        watcher.held(routes)
    }
}
