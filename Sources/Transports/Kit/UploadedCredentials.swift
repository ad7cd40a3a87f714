import Foundation
import TuisongCore
import TuisongDelivery

/// An uploaded credential file as its sealed secret opens (only ever in memory): what a
/// transport whose credentials are files (`ChannelCredentialStore`: `.p8` keys, `.p12` and PEM
/// certificates) parses into what it signs in with.
public enum CredentialFile: Sendable {
    case p8(pem: String)
    case p12(der: [UInt8], password: String)
    case pem(text: String, password: String?)
}

/// Opens a stored file credential's sealed secret (the gateway's master key does). Throws when
/// the secret cannot be opened (another master key, a corrupted row).
public protocol CredentialFileOpener: Sendable {
    func file(of record: CredentialRecord) throws -> CredentialFile
}

/// Where a transport whose credentials are uploaded files finds them (nil in a
/// `TransportContext` for the others: they are handed a `ChannelCredentialResolver`).
public struct UploadedCredentials: Sendable {
    /// The stored credentials, looked up by the transport itself per app, environment and selector.
    public var store: any ChannelCredentialStore
    public var opener: any CredentialFileOpener
    /// Where the gateway's nodes share signed provider tokens (nil: each connection signs its own).
    public var providerTokens: (any ProviderTokenStore)?

    public init(
        store: any ChannelCredentialStore, opener: any CredentialFileOpener,
        providerTokens: (any ProviderTokenStore)? = nil
    ) {
        self.store = store
        self.opener = opener
        self.providerTokens = providerTokens
    }
}

/// Local mode's look-alike as a transport made for it sees it: where it listens, the CA to
/// trust, its own credential (every app's fallback) and how to teach it a credential stored
/// later.
public struct LocalLookAlike: Sendable {
    /// `https://127.0.0.1:<port>`.
    public var baseURL: String
    /// The look-alike's CA certificate (PEM), for a transport that adds it to its trust.
    public var caCertificatePEM: String
    /// The look-alike's own credential of the channel; nil when it has none.
    public var fallback: ChannelCredential?
    /// Teaches the look-alike a credential (the public parts it checks signatures with), as
    /// the real service knows every credential its console issued.
    public var trust: @Sendable (ChannelCredential) throws -> Void

    public init(
        baseURL: String, caCertificatePEM: String, fallback: ChannelCredential?,
        trust: @escaping @Sendable (ChannelCredential) throws -> Void
    ) {
        self.baseURL = baseURL
        self.caCertificatePEM = caCertificatePEM
        self.fallback = fallback
        self.trust = trust
    }
}

/// What a service said when asked once about a credential just stored.
public enum CredentialProbe: Sendable, Hashable {
    /// It judged the request past the credential (the service's words).
    case accepted(String)
    /// It refused the credential: its reason, verbatim.
    case refused(String)
    /// It could not be asked (no connection, a timeout, a 5xx).
    case unavailable(String)
}

/// The console's "test connection" of a stored credential.
public struct ConnectionTest: Sendable, Hashable {
    public var ok: Bool
    public var detail: String
    /// Where it connected (`https://host:port`).
    public var endpoint: String
    /// The service refused the credential itself (its reason): the gateway marks it failing.
    public var refusal: String?

    public init(ok: Bool, detail: String, endpoint: String, refusal: String? = nil) {
        self.ok = ok
        self.detail = detail
        self.endpoint = endpoint
        self.refusal = refusal
    }
}

/// What the gateway asks of a transport that looks its uploaded file credentials up itself,
/// where it asks a `ChannelCredentialResolver` of the others.
public struct UploadedCredentialHooks: Sendable {
    /// An app's credentials changed (added, deleted, refused, or another node says so): forget
    /// what was cached, close what only a deleted one used.
    public var changed: @Sendable (_ appID: Int64) async -> Void
    /// Whether pushes of a held route could be sent now with a stored credential (looked up
    /// again, not cached): what ends a hold.
    public var canSend: @Sendable (HeldRoute) async -> Bool
    /// Asks the service once about a credential just stored, as a push to a made-up device of
    /// `topic` would; nil: nothing to ask (a certificate, checked by its first handshake).
    /// Throws when the stored credential cannot be opened.
    public var probe:
        @Sendable (_ record: CredentialRecord, _ topic: String, _ timeout: Duration) async throws -> CredentialProbe?
    /// One connection with a stored credential (and, given a `topic`, a probe of it).
    public var testConnection:
        @Sendable (_ record: CredentialRecord, _ topic: String?, _ timeout: Duration) async -> ConnectionTest
    /// In local mode, teaches the look-alike a credential just stored; does nothing otherwise.
    public var trustLocally: @Sendable (CredentialRecord) -> Void
    /// Held pushes of this transport are released per environment (its credentials serve one),
    /// not per channel.
    public var holdsPerEnvironment: Bool

    public init(
        changed: @escaping @Sendable (_ appID: Int64) async -> Void,
        canSend: @escaping @Sendable (HeldRoute) async -> Bool,
        probe:
            @escaping @Sendable (_ record: CredentialRecord, _ topic: String, _ timeout: Duration) async throws ->
            CredentialProbe?,
        testConnection:
            @escaping @Sendable (_ record: CredentialRecord, _ topic: String?, _ timeout: Duration) async ->
            ConnectionTest,
        trustLocally: @escaping @Sendable (CredentialRecord) -> Void, holdsPerEnvironment: Bool
    ) {
        self.changed = changed
        self.canSend = canSend
        self.probe = probe
        self.testConnection = testConnection
        self.trustLocally = trustLocally
        self.holdsPerEnvironment = holdsPerEnvironment
    }
}

/// A gauge a transport adds to `/metrics`, read when it is scraped: state the transport already
/// keeps (its connection pools), not counted on the hot path.
public struct TransportGauge: Sendable {
    public var name: String
    public var help: String
    public var labels: [String]
    public var read: @Sendable () async -> [(labels: [String], value: Double)]

    public init(
        _ name: String, _ help: String, labels: [String] = [],
        read: @escaping @Sendable () async -> [(labels: [String], value: Double)]
    ) {
        self.name = name
        self.help = help
        self.labels = labels
        self.read = read
    }
}
