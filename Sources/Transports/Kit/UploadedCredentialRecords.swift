import Foundation
import TuisongCore

/// What an uploaded file credential holds (`CredentialRecord.kind`).
public enum CredentialKind: String, Sendable, Codable, Hashable {
    /// A `.p8` signing key with its key id and team id: the transport signs provider tokens.
    case p8
    /// Certificate auth from a `.p12` bundle.
    case p12
    /// Certificate auth from PEM certificate + key.
    case pem

    /// How operators name the file: `.p8`, `.p12`, `PEM`.
    public var displayName: String { self == .pem ? "PEM" : ".\(rawValue)" }
}

/// A credential uploaded as a file, of one app and environment (a signing key, or a client
/// certificate with its key), for a transport whose declaration takes uploaded files
/// (`TransportDeclaration.takesUploadedFiles`): the typed view of its stored record
/// (`ChannelCredentialRecord`, which keeps the fields below that it has no column for in
/// `options`). The secret (p8 key, p12 bytes + password, PEM key) is only ever held encrypted
/// here; the transport opens it to connect.
public struct CredentialRecord: Sendable, Hashable {
    public var id: Int64
    public var appID: Int64
    public var channel: PushChannel
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
        id: Int64, appID: Int64, channel: PushChannel, kind: CredentialKind, environment: PushEnvironment,
        teamID: String?, keyID: String?, subject: String?, topics: [String], expiresAt: Date?,
        encryptedSecret: [UInt8], status: String, statusReason: String?, createdAt: Date, selector: String? = nil,
        servesBothEnvironments: Bool = false, secretDigest: String? = nil
    ) {
        self.servesBothEnvironments = servesBothEnvironments
        self.secretDigest = secretDigest
        self.id = id
        self.appID = appID
        self.channel = channel
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

    /// The uploaded file credential a stored record holds; nil for a record of a form (no
    /// environment) or one whose public fields name no file kind.
    public init?(_ record: ChannelCredentialRecord) {
        guard let environment = record.environment,
            let kind = record.options[UploadedFields.kind].flatMap(CredentialKind.init(rawValue:))
        else { return nil }
        let topics = record.options[UploadedFields.topics].flatMap {
            try? JSONDecoder().decode([String].self, from: Data($0.utf8))
        }
        self.init(
            id: record.id, appID: record.appID, channel: record.channel, kind: kind, environment: environment,
            teamID: record.options[UploadedFields.teamID], keyID: record.options[UploadedFields.keyID],
            subject: record.options[UploadedFields.subject], topics: topics ?? [], expiresAt: record.expiresAt,
            encryptedSecret: record.encryptedSecret, status: record.status, statusReason: record.statusReason,
            createdAt: record.createdAt, selector: record.selector,
            servesBothEnvironments: record.servesBothEnvironments, secretDigest: record.secretDigest)
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

/// An uploaded file credential to store.
public struct NewCredential: Sendable, Hashable {
    public var appID: Int64
    public var channel: PushChannel
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
        appID: Int64, channel: PushChannel, kind: CredentialKind, environment: PushEnvironment, teamID: String?,
        keyID: String?, subject: String?, topics: [String], expiresAt: Date?, encryptedSecret: [UInt8],
        selector: String? = nil, servesBothEnvironments: Bool = false, secretDigest: String? = nil
    ) {
        self.servesBothEnvironments = servesBothEnvironments
        self.secretDigest = secretDigest
        self.appID = appID
        self.channel = channel
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

    /// The record to store: the sender (team id) and who signs in (key id, else the certificate's
    /// subject) in the columns every channel has, every public field in `options`.
    public var stored: NewChannelCredential {
        var options = [UploadedFields.kind: kind.rawValue]
        options[UploadedFields.teamID] = teamID
        options[UploadedFields.keyID] = keyID
        options[UploadedFields.subject] = subject
        if !topics.isEmpty, let text = try? JSONEncoder().encode(topics) {
            options[UploadedFields.topics] = String(decoding: text, as: UTF8.self)
        }
        return NewChannelCredential(
            appID: appID, channel: channel, selector: selector, vendorAppID: teamID ?? "",
            clientID: keyID ?? subject ?? "", encryptedSecret: encryptedSecret, options: options,
            secretDigest: secretDigest, environment: environment, servesBothEnvironments: servesBothEnvironments,
            expiresAt: expiresAt)
    }
}

/// The keys of an uploaded file's public fields in its record's `options`, as the stores'
/// migration of the former `credentials` table wrote them (SQLite v24, PostgreSQL pg18).
enum UploadedFields {
    static let kind = "kind"
    static let teamID = "team_id"
    static let keyID = "key_id"
    static let subject = "subject"
    /// A JSON array of strings, as text.
    static let topics = "topics"
}

/// The uploaded file credentials of a store, each the typed view of its record: the records
/// with an environment and a file kind; the others are a form's.
extension ChannelCredentialStore {
    /// Stores the credential; a repeated upload (the same `secretDigest`) answers the first.
    public func addCredential(_ credential: NewCredential) async throws -> CredentialRecord {
        try Self.uploaded(try await addChannelCredential(credential.stored))
    }

    /// The app's uploaded credential with this digest (a repeated upload's first), if any.
    public func credential(appID: Int64, secretDigest: String) async throws -> CredentialRecord? {
        try await channelCredential(appID: appID, secretDigest: secretDigest).flatMap(CredentialRecord.init)
    }

    /// The app's uploaded credentials, oldest first.
    public func credentials(appID: Int64) async throws -> [CredentialRecord] {
        try await channelCredentials(appID: appID).compactMap(CredentialRecord.init)
    }

    /// The default (selector-less) credential of an app for `channel` and `environment`, the one
    /// pushes to devices without a selector use: among those serving the environment (its own,
    /// or both: a `.p8` key, a universal certificate) the newest that is not failing, else the
    /// newest. A key the service refused does not replace one that works.
    public func activeCredential(appID: Int64, channel: PushChannel, environment: PushEnvironment) async throws
        -> CredentialRecord?
    {
        try await activeChannelCredential(appID: appID, channel: channel, environment: environment)
            .flatMap(CredentialRecord.init)
    }

    /// The uploaded credential `id`; nil when there is none, or it is a form's.
    public func credential(id: Int64) async throws -> CredentialRecord? {
        try await channelCredential(id: id).flatMap(CredentialRecord.init)
    }

    public func deleteCredential(id: Int64) async throws -> Bool {
        try await deleteChannelCredential(id: id)
    }

    public func setCredentialStatus(id: Int64, status: String, reason: String?) async throws {
        try await setChannelCredentialStatus(id: id, status: status, reason: reason)
    }

    private static func uploaded(_ record: ChannelCredentialRecord) throws -> CredentialRecord {
        guard let uploaded = CredentialRecord(record) else {
            throw StoreError(.conflict, "credential \(record.id) is not an uploaded file")
        }
        return uploaded
    }
}
