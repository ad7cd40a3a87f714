import Foundation

/// A push service's credential of one app, whatever its channel: of the form its transport
/// declares (a service account, an OAuth client, an app key and secret) or a file an operator
/// uploaded (a signing key, a client certificate). The secret (a private key, a client secret,
/// a certificate bundle) is only ever held sealed here; the gateway opens it to sign in.
/// A channel whose credentials each serve one environment (`ChannelDeclaration
/// .credentialsServeEnvironments`) stores theirs with `environment`; the others without.
public struct ChannelCredentialRecord: Sendable, Hashable {
    public var id: Int64
    public var appID: Int64
    public var channel: PushChannel
    /// The vendor selector devices name it by; nil = the app's default for the channel.
    public var selector: String?
    /// The service's name of the sender: a project id, an app id.
    public var vendorAppID: String
    /// Who signs in: the service account's `client_email`, the OAuth client id.
    public var clientID: String
    public var encryptedSecret: [UInt8]
    /// Settings that are not secret, as the form declares them (`badge_class`, `receipt_id`),
    /// or an uploaded file's public fields.
    public var options: [String: String]
    /// `ok`, or `failing` after the service refused it.
    public var status: String
    public var statusReason: String?
    public var createdAt: Date
    /// A keyed digest of the upload (app, channel, selector, identifiers, options and secret),
    /// so a repeated upload finds this one instead of making a second; never the secret.
    public var secretDigest: String?
    /// The environment it serves, for a channel whose credentials serve one; nil for the others.
    public var environment: PushEnvironment?
    /// Whether it serves both environments (`environment` is then the one a probe uses).
    public var servesBothEnvironments: Bool
    /// When it stops working (a certificate's end), where the service says.
    public var expiresAt: Date?

    public init(
        id: Int64, appID: Int64, channel: PushChannel, selector: String?, vendorAppID: String, clientID: String,
        encryptedSecret: [UInt8], options: [String: String] = [:], status: String, statusReason: String?,
        createdAt: Date, secretDigest: String? = nil, environment: PushEnvironment? = nil,
        servesBothEnvironments: Bool = false, expiresAt: Date? = nil
    ) {
        self.environment = environment
        self.servesBothEnvironments = servesBothEnvironments
        self.expiresAt = expiresAt
        self.secretDigest = secretDigest
        self.id = id
        self.appID = appID
        self.channel = channel
        self.selector = selector
        self.vendorAppID = vendorAppID
        self.clientID = clientID
        self.encryptedSecret = encryptedSecret
        self.options = options
        self.status = status
        self.statusReason = statusReason
        self.createdAt = createdAt
    }

    public var isFailing: Bool { status == "failing" }

    /// Whether pushes to devices of `environment` may go through it: any, for a credential
    /// that serves no environment in particular.
    public func serves(_ environment: PushEnvironment) -> Bool {
        guard let own = self.environment else { return true }
        return servesBothEnvironments || own == environment
    }
}

public struct NewChannelCredential: Sendable, Hashable {
    public var appID: Int64
    public var channel: PushChannel
    public var selector: String?
    public var vendorAppID: String
    public var clientID: String
    public var encryptedSecret: [UInt8]
    public var options: [String: String]
    public var secretDigest: String?
    /// As `ChannelCredentialRecord`'s: set for a channel whose credentials serve an environment.
    public var environment: PushEnvironment?
    public var servesBothEnvironments: Bool
    public var expiresAt: Date?

    public init(
        appID: Int64, channel: PushChannel, selector: String? = nil, vendorAppID: String, clientID: String,
        encryptedSecret: [UInt8], options: [String: String] = [:], secretDigest: String? = nil,
        environment: PushEnvironment? = nil, servesBothEnvironments: Bool = false, expiresAt: Date? = nil
    ) {
        self.environment = environment
        self.servesBothEnvironments = servesBothEnvironments
        self.expiresAt = expiresAt
        self.secretDigest = secretDigest
        self.options = options
        self.appID = appID
        self.channel = channel
        self.selector = selector
        self.vendorAppID = vendorAppID
        self.clientID = clientID
        self.encryptedSecret = encryptedSecret
    }
}

/// Every channel's credentials, in one shape (`ChannelCredentialRecord`).
public protocol ChannelCredentialStore: Sendable {
    /// Stores the credential; when the app already has one with the same `secretDigest` (a
    /// repeated upload), nothing is added and that one is answered. `.conflict` when it has an
    /// environment and its channel's credentials serve none, or the other way round.
    func addChannelCredential(_ credential: NewChannelCredential) async throws -> ChannelCredentialRecord
    /// The app's channel credential with this digest (a repeated upload's first), if any.
    func channelCredential(appID: Int64, secretDigest: String) async throws -> ChannelCredentialRecord?
    /// Every credential of the app, of every channel, oldest first.
    func channelCredentials(appID: Int64) async throws -> [ChannelCredentialRecord]
    /// The credential of an app for `channel` carrying `selector` (nil: the default,
    /// selector-less one) that pushes use: the newest that is not failing, else the newest. A
    /// credential the service refused does not replace one that works.
    func activeChannelCredential(appID: Int64, channel: PushChannel, selector: String?) async throws
        -> ChannelCredentialRecord?
    /// The default (selector-less) credential of an app for `channel` serving `environment`
    /// (its own, or both), the one pushes to devices without a selector use: the newest that is
    /// not failing, else the newest.
    func activeChannelCredential(appID: Int64, channel: PushChannel, environment: PushEnvironment) async throws
        -> ChannelCredentialRecord?
    func channelCredential(id: Int64) async throws -> ChannelCredentialRecord?
    func deleteChannelCredential(id: Int64) async throws -> Bool
    func setChannelCredentialStatus(id: Int64, status: String, reason: String?) async throws
}

extension ChannelCredentialStore {
    /// The app's credentials of the channels whose credentials serve no environment (those of a
    /// form a transport declares), oldest first: what the channel-credential API, the console's
    /// forms and the transports that are handed theirs read.
    public func formCredentials(appID: Int64) async throws -> [ChannelCredentialRecord] {
        try await channelCredentials(appID: appID).filter { $0.environment == nil }
    }

    /// The Android service of the app's newest credential carrying `selector` (a Tencent
    /// busiId, an Easemob notifier name); nil when no Android credential carries it (an uploaded
    /// file credential may). A vendor's device call registers the device on that channel.
    public func channel(appID: Int64, selector: String) async throws -> PushChannel? {
        try await channelCredentials(appID: appID).last { $0.selector == selector && $0.channel.isAndroid }?.channel
    }
}
