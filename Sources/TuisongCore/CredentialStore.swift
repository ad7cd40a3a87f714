import Foundation

/// What an uploaded file credential holds (`CredentialRecord.kind`).
public enum CredentialKind: String, Sendable, Codable, Hashable {
    /// A `.p8` signing key with its key id and team id: the transport signs provider tokens.
    case p8
    /// Certificate auth from a `.p12` bundle.
    case p12
    /// Certificate auth from PEM certificate + key.
    case pem
}

/// A credential uploaded as a file, of one app and environment (a signing key, or a client
/// certificate with its key), for a transport whose declaration takes uploaded files
/// (`UploadedCredentials`). The secret (p8 key, p12 bytes + password, PEM key) is only ever
/// held encrypted here; the transport opens it to connect.
public struct CredentialRecord: Sendable, Hashable {
    public var id: Int64
    public var appID: Int64
    public var kind: CredentialKind
    public var environment: PushEnvironment
    public var teamID: String?
    public var keyID: String?
    public var subject: String?
    public var topics: [String]
    public var expiresAt: Date?
    public var encryptedSecret: [UInt8]
    /// `ok`, or `failing` after the service refused it (the reason in the service's words).
    public var status: String
    public var statusReason: String?
    public var createdAt: Date
    /// The vendor selector (a vendor's certificate id or name) devices name this credential
    /// by; `nil` = the app's default credential for its environment.
    public var selector: String?
    /// Whether it serves both environments: a `.p8` token key (Apple's keys sign for sandbox
    /// and production alike) or a universal certificate. `environment` is then the one a
    /// "test connection" and a key's probe use.
    public var servesBothEnvironments: Bool
    /// A keyed digest of the upload (app, kind, environments, selector, identifiers and the
    /// secret), so a repeated upload finds this one instead of making a second; never the secret.
    public var secretDigest: String?

    public init(
        id: Int64, appID: Int64, kind: CredentialKind, environment: PushEnvironment, teamID: String?,
        keyID: String?, subject: String?, topics: [String], expiresAt: Date?, encryptedSecret: [UInt8],
        status: String, statusReason: String?, createdAt: Date, selector: String? = nil,
        servesBothEnvironments: Bool = false, secretDigest: String? = nil
    ) {
        self.servesBothEnvironments = servesBothEnvironments
        self.secretDigest = secretDigest
        self.id = id
        self.appID = appID
        self.kind = kind
        self.environment = environment
        self.teamID = teamID
        self.keyID = keyID
        self.subject = subject
        self.topics = topics
        self.expiresAt = expiresAt
        self.encryptedSecret = encryptedSecret
        self.status = status
        self.statusReason = statusReason
        self.createdAt = createdAt
        self.selector = selector
    }

    public var isFailing: Bool { status == "failing" }

    /// Whether pushes to devices of `environment` may go through it.
    public func serves(_ environment: PushEnvironment) -> Bool {
        servesBothEnvironments || self.environment == environment
    }

    /// The environments it serves, for the held deliveries its arrival releases.
    public var environments: [PushEnvironment] {
        servesBothEnvironments ? [.sandbox, .production] : [environment]
    }

    /// `sandbox`, `production`, or `both`: how the APIs and the console name what it serves.
    public var environmentName: String { servesBothEnvironments ? "both" : environment.rawValue }
}

public struct NewCredential: Sendable, Hashable {
    public var appID: Int64
    public var kind: CredentialKind
    public var environment: PushEnvironment
    public var teamID: String?
    public var keyID: String?
    public var subject: String?
    public var topics: [String]
    public var expiresAt: Date?
    public var encryptedSecret: [UInt8]
    public var selector: String?
    public var servesBothEnvironments: Bool
    public var secretDigest: String?

    public init(
        appID: Int64, kind: CredentialKind, environment: PushEnvironment, teamID: String?, keyID: String?,
        subject: String?, topics: [String], expiresAt: Date?, encryptedSecret: [UInt8], selector: String? = nil,
        servesBothEnvironments: Bool = false, secretDigest: String? = nil
    ) {
        self.servesBothEnvironments = servesBothEnvironments
        self.secretDigest = secretDigest
        self.appID = appID
        self.kind = kind
        self.environment = environment
        self.teamID = teamID
        self.keyID = keyID
        self.subject = subject
        self.topics = topics
        self.expiresAt = expiresAt
        self.encryptedSecret = encryptedSecret
        self.selector = selector
    }
}

public protocol CredentialStore: Sendable {
    /// Stores the credential; when the app already has one with the same `secretDigest` (a
    /// repeated upload), nothing is added and that one is answered.
    func addCredential(_ credential: NewCredential) async throws -> CredentialRecord
    /// The app's credential with this digest (a repeated upload's first), if any.
    func credential(appID: Int64, secretDigest: String) async throws -> CredentialRecord?
    func credentials(appID: Int64) async throws -> [CredentialRecord]
    /// The default (selector-less) credential of an app for an environment, the one pushes to
    /// devices without a selector use: among those serving the environment (its own, or both:
    /// a `.p8` key, a universal certificate) the newest that is not failing, else the newest. A
    /// key the service refused does not replace one that works.
    func activeCredential(appID: Int64, environment: PushEnvironment) async throws -> CredentialRecord?
    func credential(id: Int64) async throws -> CredentialRecord?
    func deleteCredential(id: Int64) async throws -> Bool
    func setCredentialStatus(id: Int64, status: String, reason: String?) async throws
}
