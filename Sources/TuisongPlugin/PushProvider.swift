import Logging
import TuisongCore
import TuisongHTTP

/// A vendor adapter: it speaks one vendor's HTTP API (a push or IM vendor's) and turns
/// what it receives into devices, tags and `PushJob`s.
///
/// To add a vendor: a folder `Plugins/<Vendor>/` with a type conforming to this protocol, a
/// target in `Package.swift`, and one line in the gateway's provider registry. The provider
/// reaches the rest of the gateway only through its `ProviderContext`: never through the
/// store implementation, another provider, or C.
///
///     struct AcmeProvider: PushProvider {
///         static let name = "acme"
///         init(context: ProviderContext) throws { … }
///         func register(on router: Router) {
///             router.addGroup(name: Self.name, claims: { $0.hasPrefix("/acme/") }, errorResponder: AcmeError.render)
///             { group in group.add(.POST, "/acme/push") { … } }
///         }
///     }
public protocol PushProvider: Sendable {
    /// The name the config's `providers` list uses (`"acme"`); also its route group's name, which labels its requests.
    static var name: String { get }
    /// Builds the provider; throw a `ProviderConfigError` for a bad config section.
    init(context: ProviderContext) throws
    /// Mounts the vendor's routes at the vendor's own paths, as a route group with its error
    /// dialect (`router.addGroup(name:claims:errorResponder:)`). Called once before the server
    /// starts.
    func register(on router: Router)

    /// The provider's own tables (named `<name>_…`), applied in order on the shared database.
    static var migrations: [PluginMigration] { get }
    /// App-level settings (keys, ids, secrets) the provider reads from `App.vendorSettings[name]`.
    static var settings: [VendorSetting] { get }
    /// Groups of setting keys whose values, taken together, no two apps may share (an
    /// `org` + `app_name`: two apps may share an org, not a pair). The console, the admin API
    /// and `tuisong app set-<name>` refuse a second app with the same values.
    static var settingsUniqueTogether: [[String]] { get }
    /// The name operators see in the console (`Acme Push`, `阿克米推送`); `name` by default.
    static var displayName: LocalizedText { get }
    /// Vendor columns the console's device views show.
    static var deviceColumns: [DeviceColumn] { get }
    /// Values of `deviceColumns` for these devices of an app (device id → column key → value).
    func deviceColumnValues(appID: Int64, deviceIDs: [Int64]) async throws -> [Int64: [String: String]]
    /// Decides per receiver whether and how this provider's messages are pushed; `nil` = every
    /// device of the audience gets the message's one payload.
    var deliveryPolicy: (any DeliveryPolicy)? { get }
    /// How the vendor's devices name their credential, if they do (the CLI flag that sets a
    /// credential's selector); nil by default.
    static var credentialSelector: CredentialSelectorDeclaration? { get }
    /// Keys a native device registration (`PUT /api/v1/devices/{token}`) may carry for this
    /// provider besides the device's own (JPush's `registration_id`: the id an app server knew
    /// the phone by). The native API refuses any other key.
    static var deviceFields: [String] { get }
    /// The native device API registered or updated `device` of `app`: the provider's keys the
    /// body carried (`deviceFields`, possibly none) and the fields it adds to the answer (a
    /// JPush `registration_id`). Throw `ProviderFieldError` for a value it refuses; the
    /// registration itself stands.
    func deviceRegistered(app: App, device: Device, fields: [String: JSONValue]) async throws -> [String: JSONValue]
}

extension PushProvider {
    public static var migrations: [PluginMigration] { [] }
    public static var settings: [VendorSetting] { [] }
    public static var settingsUniqueTogether: [[String]] { [] }
    public static var displayName: LocalizedText { LocalizedText(en: name, zh: name) }
    public static var deviceColumns: [DeviceColumn] { [] }
    public func deviceColumnValues(appID: Int64, deviceIDs: [Int64]) async throws -> [Int64: [String: String]] {
        [:]
    }
    public var deliveryPolicy: (any DeliveryPolicy)? { nil }
    public static var credentialSelector: CredentialSelectorDeclaration? { nil }
    public static var deviceFields: [String] { [] }
    public func deviceRegistered(
        app: App, device: Device, fields: [String: JSONValue]
    ) async throws -> [String: JSONValue] { [:] }
}

/// A provider's refusal of a native device API field (`PushProvider.deviceRegistered`), answered
/// in the native API's dialect: `{"error": {"code", "message"}}` with `status`.
public struct ProviderFieldError: Error, Sendable, Equatable {
    public var status: Int
    public var code: String
    public var message: String

    public init(status: Int, code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }
}

/// Everything a provider may use.
public struct ProviderContext: Sendable {
    /// Apps, devices, tags, messages.
    public var store: any ProviderStore
    /// IM accounts: devices bound to them, app state, badge counters (core tables).
    public var accounts: any AccountStore
    /// The provider's own tables (its `migrations`) and reads of the core ones, as SQL.
    public var database: any SharedDatabase
    /// Where pushes go.
    public var gateway: any PushGateway
    /// Seals vendor secrets (secret keys) under the gateway's master key before they are stored.
    public var secrets: any SecretSealer
    public var clock: any Clock
    public var logger: Logger
    /// The provider's own config section (`"acme": {…}`), or nil.
    public var configuration: JSONValue?
    /// This node's share of the gateway's limits (`RateLimiter`): 1 / live nodes.
    public var nodeShare: NodeShare
    /// Where CPU-bound work goes (password hashing, key derivation): never inline in a handler,
    /// where it would hold a request thread or a cooperative-pool thread. Its `Busy` is the
    /// provider's "busy, retry" (503 with `Retry-After`) in its own dialect.
    public var compute: ComputePool
    /// Every change to an app (settings, secrets, deletion), on this node or another: what a
    /// provider's per-app cache (`OpenedApps`) forgets by.
    public var appChanges: AppChangeNotices

    public init(
        store: any ProviderStore, accounts: any AccountStore, database: any SharedDatabase, gateway: any PushGateway,
        secrets: any SecretSealer, clock: any Clock, logger: Logger, configuration: JSONValue?,
        nodeShare: NodeShare = NodeShare(), compute: ComputePool = .standard(),
        appChanges: AppChangeNotices = AppChangeNotices()
    ) {
        self.nodeShare = nodeShare
        self.compute = compute
        self.appChanges = appChanges
        self.store = store
        self.accounts = accounts
        self.database = database
        self.gateway = gateway
        self.secrets = secrets
        self.clock = clock
        self.logger = logger
        self.configuration = configuration
    }
}

/// The store as providers see it: apps, devices, tags, messages and the app's templates (which
/// the console edits; a vendor's template API serves the same ones). Not the gateway's own
/// settings (admin password hash, session secret) nor another vendor's data; a provider's
/// own data lives in its tables on `ProviderContext.database`. The app's Android credentials are
/// readable (never their secrets' plaintext) so a vendor's device call can tell which push
/// service a credential selector names; the services' receipts are readable so a vendor's report
/// API can say what arrived (JPush's `/v3/received`).
public typealias ProviderStore = Store & MessageStore & TemplateStore & ChannelCredentialStore & ReceiptStore

/// Encrypts and decrypts small secrets (AES-256-GCM under the master key). `context` binds a
/// sealed value to where it belongs (e.g. `"acme:app:3"`), so it cannot be moved elsewhere.
public protocol SecretSealer: Sendable {
    func seal(_ plaintext: String, context: String) throws -> String
    func open(_ sealed: String, context: String) throws -> String
}

/// A provider's config section is wrong; names the key.
public struct ProviderConfigError: Error, Sendable, CustomStringConvertible {
    public var provider: String
    public var key: String
    public var message: String

    public init(provider: String, key: String, message: String) {
        self.provider = provider
        self.key = key
        self.message = message
    }

    public var description: String { "config: \(provider).\(key): \(message)" }
}
