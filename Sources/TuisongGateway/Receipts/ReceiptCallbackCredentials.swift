import Foundation
import Synchronization
import TuisongCore
import TuisongCrypto
import TuisongTransportKit

/// The apps' callback credentials with the services that sign their receipts (each transport
/// whose `ReceiptDeclaration.usesCallbackCredentials`): per app
/// and service, made on first need (a new user name `tuisong<app id>` and a random key; for an
/// app older than stored credentials, the pair earlier builds derived from the master key, so a
/// receipt configuration entered then keeps verifying), or set by the operator to what they
/// typed into the service's console. The key is sealed at rest under the master key, bound to
/// its app and service; it is shown to an authenticated operator (who must copy it into the
/// service's console) and never logged.
///
/// With a `cache` (the gateway's: one per process, shared by the receipt routes and the admin
/// API), `credentials` answers from it; `set` and `rotate` drop what they replace from it.
public struct ReceiptCallbackCredentialService: Sendable {
    let store: any ReceiptSettingsStore
    let box: SecretBox
    let keys: ReceiptKeys
    let registry: TransportRegistry
    let clock: any Clock
    /// The opened credentials this process verifies with; nil: each call reads the store.
    public let cache: ReceiptCallbackCredentialCache?

    public init(
        store: any ReceiptSettingsStore, masterKey: MasterKey, registry: TransportRegistry, clock: any Clock,
        cache: ReceiptCallbackCredentialCache? = nil
    ) {
        self.store = store
        self.box = masterKey.box
        self.keys = ReceiptKeys(masterKey: masterKey)
        self.registry = registry
        self.clock = clock
        self.cache = cache
    }

    /// The channels whose services sign receipts with callback credentials.
    public var channels: [PushChannel] {
        registry.declarations.filter { $0.receipts?.usesCallbackCredentials == true }.map(\.channel.channel)
    }

    /// Whether `channel`'s service signs with callback credentials.
    public func uses(_ channel: PushChannel) -> Bool { channels.contains(channel) }

    /// The app's credentials with `channel`'s service, made and stored if it has none yet;
    /// from the cache while it holds them. Throws `StoreError.notFound` for an app that does not
    /// exist.
    public func credentials(appID: Int64, channel: PushChannel) async throws -> CallbackCredentials {
        guard let cache else { return try await read(appID: appID, channel: channel) }
        let now = clock.now
        let (cached, generation) = cache.lookup(appID: appID, channel: channel, now: now)
        if let cached { return cached }
        let read = try await read(appID: appID, channel: channel)
        cache.keep(read, appID: appID, channel: channel, now: now, ifStill: generation)
        return read
    }

    /// The credentials as stored now, whatever the cache holds (which they then replace): a
    /// POST whose signature does not verify under the cached pair is checked against these once
    /// more, in case they were changed where this process was not told (another node, the CLI).
    public func storedCredentials(appID: Int64, channel: PushChannel) async throws -> CallbackCredentials {
        let now = clock.now
        let generation = cache?.generation
        let read = try await read(appID: appID, channel: channel)
        if let generation { cache?.keep(read, appID: appID, channel: channel, now: now, ifStill: generation) }
        return read
    }

    private func read(appID: Int64, channel: PushChannel) async throws -> CallbackCredentials {
        let stored = try await store.receiptCallbackCredentials(appID: appID)
        if let record = stored.byChannel[channel] { return try open(record) }
        let made =
            stored.predatesStoredCredentials
            ? keys.derivedCallbackCredentials(appID: appID, channel: channel)
            : CallbackCredentials(userName: "tuisong\(appID)", key: CallbackCredentials.randomKey())
        // Another node (or request) may store one first: the stored one wins everywhere.
        return try open(try await store.addReceiptCallbackCredential(try seal(made, appID: appID, channel: channel)))
    }

    /// Puts `credentials` in place (what the operator typed into the service's console).
    /// (The caller tells the other nodes: `StoreChange.receiptCallbackCredentials`.)
    public func set(_ credentials: CallbackCredentials, appID: Int64, channel: PushChannel) async throws {
        try await store.replaceReceiptCallbackCredential(try seal(credentials, appID: appID, channel: channel))
        cache?.changed(appID: appID)
    }

    /// A new random key under the app's current user name; the old key stops verifying at once
    /// (the operator enters the new one in the service's console).
    public func rotate(appID: Int64, channel: PushChannel) async throws -> CallbackCredentials {
        let current = try await credentials(appID: appID, channel: channel)
        let rotated = CallbackCredentials(userName: current.userName, key: CallbackCredentials.randomKey())
        try await set(rotated, appID: appID, channel: channel)
        return rotated
    }

    /// What the operator registers in each service's receipt configuration for the app: the
    /// receipt URL under `baseURL` and, for a service that signs, the callback user name and key
    /// (made on first need). One object per transport that declares receipts.
    public func registrations(appID: Int64, baseURL: String) async throws -> [[String: String]] {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        var result: [[String: String]] = []
        for declaration in registry.declarations {
            guard let receipts = declaration.receipts else { continue }
            let channel = declaration.channel.channel
            let url = base.isEmpty ? "" : "\(base)/receipts/\(channel.rawValue)/\(appID)"
            var credentials: CallbackCredentials?
            if receipts.usesCallbackCredentials {
                credentials = try await self.credentials(appID: appID, channel: channel)
            }
            var fields =
                receipts.consoleRegistration?(url, credentials)
                ?? ["url": url].merging(
                    credentials.map { ["callback_user_name": $0.userName, "callback_key": $0.key] } ?? [:]
                ) { $1 }
            fields["channel"] = channel.rawValue
            if url.isEmpty { fields["url"] = "" }
            result.append(fields)
        }
        return result
    }

    private func associatedData(appID: Int64, channel: PushChannel) -> [UInt8] {
        Array("receipt-callback-key:\(appID):\(channel.rawValue)".utf8)
    }

    private func seal(_ credentials: CallbackCredentials, appID: Int64, channel: PushChannel) throws
        -> ReceiptCallbackCredential
    {
        ReceiptCallbackCredential(
            appID: appID, channel: channel, userName: credentials.userName,
            encryptedKey: try box.seal(
                Array(credentials.key.utf8), associatedData: associatedData(appID: appID, channel: channel)),
            updatedAt: clock.now)
    }

    private func open(_ record: ReceiptCallbackCredential) throws -> CallbackCredentials {
        let key = try box.open(
            record.encryptedKey, associatedData: associatedData(appID: record.appID, channel: record.channel))
        return CallbackCredentials(userName: record.userName, key: String(decoding: key, as: UTF8.self))
    }
}

extension ReceiptKeys {
    /// The receipt keys derived from the master key (every node derives the same).
    public init(masterKey: MasterKey) { self.init(root: masterKey.box.derivedKey("receipts")) }
}

/// The apps' callback credentials as this process verifies receipts with them, opened, per app
/// and service: a receipt POST costs no database read and no AES-GCM open. (A service posting 100
/// statuses at a time made the read and the open a POST's largest fixed cost.)
///
/// A key changed elsewhere must neither keep verifying here for long nor be refused here:
/// - every writer in this process drops what it replaces (`ReceiptCallbackCredentialService.set`,
///   used by `rotate`, the admin API and the CLI), and the admin API and the CLI publish
///   `StoreChange.receiptCallbackCredentials`, which drops it on every node of a cluster
///   (PostgreSQL's `NOTIFY`; a SQLite gateway beside the CLI is not told);
/// - a POST that does not verify under a cached pair is checked once more against the stored
///   one (`ReceiptCallbackCredentialService.storedCredentials`), so a new key verifies at once
///   on every node;
/// - an entry is read again after `lifetime`, so an old key stops verifying within it wherever
///   no change reached this process.
public final class ReceiptCallbackCredentialCache: Sendable {
    /// How long an entry is used before it is read again: how long an old key can keep
    /// verifying on a node that was not told of its change.
    public static let defaultLifetime: TimeInterval = 5

    private struct Key: Hashable {
        var appID: Int64
        var channel: PushChannel
    }

    private struct Entry {
        var credentials: CallbackCredentials
        var expires: Date
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Bumped by every change: a read that began before a change does not keep its
        /// (possibly stale) result.
        var generation: UInt64 = 0
    }

    public let lifetime: TimeInterval
    private let state = Mutex(State())

    public init(lifetime: TimeInterval = ReceiptCallbackCredentialCache.defaultLifetime) {
        self.lifetime = lifetime
    }

    /// The entry of the app's channel while it lasts, and the generation a read made now must
    /// still be current at to be kept.
    func lookup(appID: Int64, channel: PushChannel, now: Date) -> (CallbackCredentials?, UInt64) {
        state.withLock { state in
            let entry = state.entries[Key(appID: appID, channel: channel)]
            return (entry.flatMap { $0.expires > now ? $0.credentials : nil }, state.generation)
        }
    }

    var generation: UInt64 { state.withLock { $0.generation } }

    /// Keeps `credentials` read at `now`, unless something changed since `generation`.
    func keep(
        _ credentials: CallbackCredentials, appID: Int64, channel: PushChannel, now: Date, ifStill generation: UInt64
    ) {
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count >= 10_000 { state.entries.removeAll(keepingCapacity: true) }
            state.entries[Key(appID: appID, channel: channel)] = Entry(
                credentials: credentials, expires: now.addingTimeInterval(lifetime))
        }
    }

    /// The app's credentials changed (or the app did): its entries are read again.
    public func changed(appID: Int64) {
        state.withLock { state in
            state.generation &+= 1
            state.entries = state.entries.filter { $0.key.appID != appID }
        }
    }

    /// Anything may have changed (the change feed reconnected): every entry is read again.
    public func changedAll() {
        state.withLock { state in
            state.generation &+= 1
            state.entries.removeAll()
        }
    }
}
