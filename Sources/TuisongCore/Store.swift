import Foundation
import Synchronization

/// Apps: created by the CLI or the console, found by the hash of their native API key.
public protocol AppStore: Sendable {
    func createApp(name: String, bundleID: String, apiKeyHash: String) async throws -> App
    func app(id: Int64) async throws -> App?
    func app(apiKeyHash: String) async throws -> App?
    func apps() async throws -> [App]
    /// The app whose `vendorSettings[vendor][setting]` is `value` (for settings unique across
    /// apps, which is how a vendor API names its app), or nil.
    func app(vendor: String, setting: String, value: String) async throws -> App?
    /// Replaces name, bundle id, API key hash and vendor settings of an existing app.
    func updateApp(_ app: App) async throws
    /// Deletes the app and everything that belongs to it. `false` if there was none.
    func deleteApp(id: Int64) async throws -> Bool
}

/// Devices and their tags, always scoped to one app.
public protocol DeviceStore: Sendable {
    /// Registers a device or updates the existing one with the same (app, token).
    /// Idempotent, and safe when many callers register the same token at once.
    /// A registration clears `invalidatedAt`. Returns the stored device and whether it is new.
    func registerDevice(appID: Int64, _ registration: DeviceRegistration) async throws -> (
        device: Device, created: Bool
    )
    func device(appID: Int64, token: DeviceToken) async throws -> Device?
    func device(id: Int64) async throws -> Device?
    /// The app's devices among `ids` (any number; unknown ids and other apps' devices left
    /// out), by id: how a provider reads the devices its own tables name.
    func devices(appID: Int64, ids: [Int64]) async throws -> [Device]
    /// The device and its sorted tags in one read (the native API's lookup path).
    func deviceWithTags(appID: Int64, token: DeviceToken) async throws -> (device: Device, tags: [String])?
    /// `false` when there was no such device.
    func deleteDevice(appID: Int64, token: DeviceToken) async throws -> Bool

    /// Adds a tag to a registered device (no-op if present). Throws `StoreError.notFound`
    /// when the device does not exist.
    func addTag(appID: Int64, token: DeviceToken, tag: TagName) async throws
    /// `false` when the device did not have the tag. Throws `.notFound` for an unknown device.
    func removeTag(appID: Int64, token: DeviceToken, tag: TagName) async throws -> Bool
    /// Tags of a device, sorted. Throws `.notFound` for an unknown device.
    func tags(appID: Int64, token: DeviceToken) async throws -> [String]
    /// Devices carrying `tag`, ordered by device id, starting after `cursor`.
    func devices(appID: Int64, tag: TagName, cursor: String?, limit: Int) async throws -> Page<Device>
}

/// Errors the store reports in its own terms; callers map them to their API's dialect.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case notFound = "not_found"
        case conflict
        case invalidCursor = "invalid_cursor"
        case unavailable
        /// A fenced write of a work slice whose lease ended or was taken over by another node
        /// (`WorkQueue`): the writer must stop sending that slice.
        case leaseLost = "lease_lost"
    }
    /// Why the store cannot serve now (`.unavailable` only): what an API says and how long it
    /// asks a client to wait.
    public enum Unavailability: String, Sendable, Hashable {
        /// Locked by another writer, a pool exhausted: a moment.
        case busy = "unavailable"
        /// The disk (or the database's quota) is full: nothing can be written until space is
        /// freed (SQLite `SQLITE_FULL`, PostgreSQL class 53).
        case storageFull = "insufficient_storage"
        /// The database cannot be reached or opened (PostgreSQL down or restarting, an I/O
        /// error, a read-only file).
        case databaseDown = "database_unavailable"

        /// What the client is told, in a sentence.
        public var explanation: String {
            switch self {
            case .busy: "the database is busy; retry shortly"
            case .storageFull: "the database's disk is full; nothing can be stored until space is freed"
            case .databaseDown: "the database cannot be reached; retry shortly"
            }
        }

        /// The `Retry-After` sent with it, in seconds.
        public var retryAfterSeconds: Int {
            switch self {
            case .busy: 1
            case .storageFull: 30
            case .databaseDown: 5
            }
        }
    }

    public var code: Code
    public var message: String
    /// Set with `.unavailable`: which kind (`.busy` when the backend did not say).
    public var unavailability: Unavailability?

    public init(_ code: Code, _ message: String, unavailability: Unavailability? = nil) {
        self.code = code
        self.message = message
        self.unavailability = code == .unavailable ? (unavailability ?? .busy) : nil
    }

    public static func notFound(_ what: String) -> StoreError { StoreError(.notFound, what) }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// Whether the database has lately refused writes for want of space or of a connection:
/// `/healthz` and the `tuisong_database_unavailable` gauge read it while it lasts (a read, as
/// `/healthz`'s ping is, still works on a full disk). Each backend notes every write's outcome.
/// On a full disk some writes still succeed (an update that fits its page), so a success
/// clears the trouble only once no write has failed for `quietPeriod`.
public final class StoreHealth: Sendable {
    private struct Trouble {
        var kind: StoreError.Unavailability
        var since: Date
        var lastFailure: Date
    }

    private let state = Mutex<Trouble?>(nil)
    private let quietPeriod: TimeInterval

    public init(quietPeriod: TimeInterval = 5) {
        self.quietPeriod = quietPeriod
    }

    /// The trouble now, and since when; nil when writes go through.
    public var trouble: (kind: StoreError.Unavailability, since: Date)? {
        state.withLock { $0.map { ($0.kind, $0.since) } }
    }

    /// A write failed with `error`: full or unreachable is remembered (busy is not a health
    /// problem).
    public func noteFailure(_ error: any Error) {
        guard let kind = (error as? StoreError)?.unavailability, kind != .busy else { return }
        let now = Date()
        state.withLock { current in
            if current?.kind == kind {
                current?.lastFailure = now
            } else {
                current = Trouble(kind: kind, since: now, lastFailure: now)
            }
        }
    }

    /// A write went through.
    public func noteSuccess() {
        state.withLock { current in
            if let trouble = current, Date().timeIntervalSince(trouble.lastFailure) >= quietPeriod { current = nil }
        }
    }
}

extension StoreHealth {
    /// Runs one write of a backend and notes its outcome here: a success, or the failure as
    /// `mapError` turns it into the store's terms (then thrown). `observer` is told how long it
    /// took, failure or not (the gateway's store metrics). Every write path of both backends
    /// goes through this one place, so `/healthz` hears of each the same way.
    public func noting<T>(
        timedBy observer: (@Sendable (Duration) -> Void)? = nil, mapError: (any Error) -> any Error = { $0 },
        _ write: () async throws -> T
    ) async throws -> T {
        let started = ContinuousClock.now
        defer { observer?(ContinuousClock.now - started) }
        do {
            let result = try await write()
            noteSuccess()
            return result
        } catch {
            let mapped = mapError(error)
            noteFailure(mapped)
            throw mapped
        }
    }
}

/// The whole store as the gateway sees it. Later issues add message, delivery, credential
/// and template stores to this composition.
public protocol Store: AppStore, DeviceStore {
    /// Answers when the database does; used by `/healthz`.
    func ping() async throws
    /// What the writes lately said about the database (`/healthz`, metrics).
    var health: StoreHealth { get }
}

extension Store {
    /// A store that does not track it (test doubles) is always healthy.
    public var health: StoreHealth { StoreHealth() }
}

/// Small gateway-wide settings (admin password hash, console session secret, …).
public protocol SettingsStore: Sendable {
    func setting(_ key: String) async throws -> String?
    func setSetting(_ key: String, value: String) async throws
    /// Sets `key` only when it has no value yet; `true` when this call set it. Two processes
    /// starting at once agree on one value.
    func insertSettingIfAbsent(_ key: String, value: String) async throws -> Bool
}
