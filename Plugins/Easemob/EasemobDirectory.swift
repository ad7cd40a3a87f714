import Foundation
import Synchronization
import TuisongCore
import TuisongPlugin

/// Which app answers `/{org}/{app_name}/…`, and the per-app secrets authentication needs.
///
/// The router asks synchronously, on the server's thread, whether a path belongs to Easemob
/// (`claims`), so the configured pairs are cached in memory. The cache is the app list read
/// from the store; it is read again when it is older than `maxAge` (and a path names a pair
/// the cache does not know), so an app configured by the console or the CLI in another
/// process is served within about a second. Handlers then take the app by id from `openedApps`
/// (read, its secret opened, kept until the app changes on any node or for at most a second),
/// so a changed secret or a removed pair takes effect at once, or within that second when it was
/// changed where no notice reaches this node (the CLI beside a SQLite gateway).
final class EasemobDirectory: Sendable {
    private struct Snapshot: Sendable {
        var pairs: [EasemobPair: [Int64]] = [:]
        var loadedAt: ContinuousClock.Instant?
        var reloading = false
        /// Reads of the app list are numbered as they start; `pairs` holds the latest-started
        /// one that finished, so a slow read (begun before an app was configured) that ends after
        /// a newer one cannot put back a list without that app.
        var readsStarted: UInt64 = 0
        var pairsRead: UInt64 = 0
    }

    private let apps: any AppStore
    private let sealer: any SecretSealer
    private let maxAge: Duration
    private let snapshot = Mutex(Snapshot())
    /// Token signing keys by app id (they never change once created).
    private let keys = Mutex<[Int64: [UInt8]]>([:])
    /// `EasemobStore.legacyTokenSecret` by app id, "" for none (written once, by a migration).
    private let legacySecrets = Mutex<[Int64: String]>([:])

    /// Apps by id with their Easemob settings, the client secret opened: a message's call
    /// neither reads its app nor opens the secret again.
    private let openedApps: OpenedApps<Int64, (app: App, settings: EasemobAppSettings)>

    init(
        apps: any AppStore, sealer: any SecretSealer, clock: any Clock, changes: AppChangeNotices,
        maxAge: Duration = .seconds(1)
    ) {
        self.apps = apps
        self.sealer = sealer
        self.maxAge = maxAge
        openedApps = OpenedApps(clock: clock, changes: changes)
    }

    /// Whether `/org/app/…` names a configured pair, as far as the cache knows. A stale cache
    /// starts a reload in the background and answers with what it has.
    func claims(org: String, app: String) -> Bool {
        let pair = EasemobPair(org: org, appName: app)
        let (known, stale) = snapshot.withLock { state -> (Bool, Bool) in
            let known = state.pairs[pair] != nil
            let stale = state.loadedAt.map { ContinuousClock.now - $0 > maxAge } ?? true
            let start = stale && !state.reloading
            if start { state.reloading = true }
            return (known, start)
        }
        if stale {
            Task { [weak self] in try? await self?.reload() }
        }
        return known
    }

    /// Reads every app's pair again.
    func reload() async throws {
        defer { snapshot.withLock { $0.reloading = false } }
        let read = snapshot.withLock { state in
            state.readsStarted += 1
            return state.readsStarted
        }
        let all = try await apps.apps()
        var pairs: [EasemobPair: [Int64]] = [:]
        for app in all {
            if let pair = EasemobAppSettings.pair(of: app) { pairs[pair, default: []].append(app.id) }
        }
        snapshot.withLock { state in
            guard read > state.pairsRead else { return }
            state.pairs = pairs
            state.pairsRead = read
            state.loadedAt = ContinuousClock.now
        }
    }

    /// The app serving `/org/app`, with its settings (secret opened). Nil when no app is
    /// configured for the pair. A pair two apps claim is refused (500), never guessed.
    func resolve(org: String, app appName: String) async throws -> (app: App, settings: EasemobAppSettings)? {
        let pair = EasemobPair(org: org, appName: appName)
        let (known, loadedAt) = snapshot.withLock { ($0.pairs[pair], $0.loadedAt) }
        var ids = known
        // An unknown pair reads the apps again, but not more than ten times a second: requests
        // naming pairs nobody configured must not turn into a read of every app each.
        if ids == nil, loadedAt.map({ ContinuousClock.now - $0 > .milliseconds(100) }) ?? true {
            try await reload()
            ids = snapshot.withLock { $0.pairs[pair] }
        }
        guard let ids, !ids.isEmpty else { return nil }
        guard ids.count == 1 else {
            // The console and the CLI refuse a second app with the pair; one written into the
            // database by other means is refused rather than guessed, and the operator told why.
            throw EasemobError.internalError(
                "\(org)/\(appName) is configured on more than one app; an operator must remove it from all but one")
        }
        guard let opened = try await opened(appID: ids[0]), EasemobAppSettings.pair(of: opened.app) == pair else {
            try await reload()
            return nil
        }
        return opened
    }

    /// The app with its Easemob settings, the secret opened; nil when it is gone or has none.
    func opened(appID: Int64) async throws -> (app: App, settings: EasemobAppSettings)? {
        try await openedApps.value(for: appID) {
            guard let app = try await apps.app(id: appID), let settings = try EasemobAppSettings.of(app, sealer: sealer)
            else { return nil }
            return (appID, (app, settings))
        }
    }

    func cachedKey(appID: Int64) -> [UInt8]? { keys.withLock { $0[appID] } }

    func remember(key: [UInt8], appID: Int64) { keys.withLock { $0[appID] = key } }

    /// The app's legacy token secret as last read: "" for none, nil when not read yet.
    func cachedLegacySecret(appID: Int64) -> String? { legacySecrets.withLock { $0[appID] } }

    func remember(legacySecret: String, appID: Int64) { legacySecrets.withLock { $0[appID] = legacySecret } }
}
