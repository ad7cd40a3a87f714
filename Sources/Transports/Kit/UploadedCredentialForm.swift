import Foundation
import TuisongCore

/// What an operator uploads for a transport whose credentials are files (the admin API's
/// `kind`, the CLI's `--p8`/`--p12`/`--pem`): the file's bytes as given, and what it is uploaded with.
public enum CredentialUpload: Sendable {
    /// A token signing key: the `.p8` PEM with its key id and team id.
    case p8(pem: String, keyID: String, teamID: String)
    /// A `.p12` certificate bundle and its password.
    case p12(der: [UInt8], password: String)
    /// PEM certificate (+ chain) and private key, in one text.
    case pem(text: String, password: String?)

    /// The file as it is sealed and later opened (`CredentialFile`).
    public var file: CredentialFile {
        switch self {
        case .p8(let pem, _, _): .p8(pem: pem)
        case .p12(let der, let password): .p12(der: der, password: password)
        case .pem(let text, let password): .pem(text: text, password: password)
        }
    }
}

/// What a transport's check of an upload found: what the gateway stores beside the sealed file.
public struct InspectedUpload: Sendable, Equatable {
    public var kind: CredentialKind
    /// The environment it serves (the one a test connection uses when it serves both).
    public var environment: PushEnvironment
    public var servesBothEnvironments: Bool
    public var teamID: String?
    public var keyID: String?
    /// A certificate's subject, topics and end: what the console lists.
    public var subject: String?
    public var topics: [String]
    public var expiresAt: Date?

    public init(
        kind: CredentialKind, environment: PushEnvironment, servesBothEnvironments: Bool, teamID: String? = nil,
        keyID: String? = nil, subject: String? = nil, topics: [String] = [], expiresAt: Date? = nil
    ) {
        self.kind = kind
        self.environment = environment
        self.servesBothEnvironments = servesBothEnvironments
        self.teamID = teamID
        self.keyID = keyID
        self.subject = subject
        self.topics = topics
        self.expiresAt = expiresAt
    }
}

/// An upload refused by its transport's check: a code in the admin API's dialect
/// (`wrong_password`), the form field it is about when it is one, and a sentence for an operator.
public struct UploadRefusal: Error, Sendable, Equatable {
    public var code: String
    public var message: String
    public var field: String?

    public init(_ code: String, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }
}

/// How a transport whose credentials are uploaded files checks an upload: the file parses, its
/// password opens it, its key matches its certificate, it has not expired, it is the kind it
/// claims to be, and which environments it serves. Declared from the transport's folder
/// (`TransportDeclaration.uploadedCredentialForm`); the gateway seals and stores what it accepts.
///
/// Its fields are what the CLI's `credential add` flags (`--p8 FILE`, `--key-id ID`,
/// `--password-env VAR`) are made of: `files`, one per `CredentialKind` and named by it, of which
/// an upload gives exactly one, and `fields`, what a file is given with (`needs`).
public struct UploadedCredentialForm: Sendable {
    /// One file field per kind it takes, named by the kind (`p8`, `p12`, `pem`).
    public var files: [CredentialForm.Field]
    /// What a file is uploaded with: a key's ids (text), a certificate's password (a secret).
    public var fields: [CredentialForm.Field]
    /// The fields each file needs, by the file's name (`p8`: `key_id`, `team_id`).
    public var needs: [String: [String]]
    /// The fields each file may be given with (`p12`: `password`).
    public var optional: [String: [String]]
    /// `--environment`'s help: what it may be and its default.
    public var environmentHelp: String
    /// How the environments a credential serves are chosen (`credential add --help`), its lines
    /// after the first indented for the CLI's discussion.
    public var environments: String
    /// What the console shows under a field, by the field's name (`environment` for the
    /// environment choice), where it says more than the CLI's help: where the file comes from,
    /// which environments a file serves. A field without one is hinted by its `help`.
    public var consoleHints: [String: LocalizedText]
    /// `environment` nil: let the file say (both, where it can serve both). `now`: the
    /// gateway's clock, for an expiry.
    public var inspect:
        @Sendable (_ upload: CredentialUpload, _ environment: PushEnvironment?, _ now: Date) throws(UploadRefusal) ->
            InspectedUpload

    public init(
        files: [CredentialForm.Field], fields: [CredentialForm.Field], needs: [String: [String]] = [:],
        optional: [String: [String]] = [:], environmentHelp: String = "both, sandbox or production.",
        environments: String = "", consoleHints: [String: LocalizedText] = [:],
        inspect:
            @escaping @Sendable (CredentialUpload, PushEnvironment?, Date) throws(UploadRefusal) -> InspectedUpload
    ) {
        self.files = files
        self.fields = fields
        self.needs = needs
        self.optional = optional
        self.environmentHelp = environmentHelp
        self.environments = environments
        self.consoleHints = consoleHints
        self.inspect = inspect
    }

    /// The upload of the file of `kind` with the other fields' values (`key_id`, `team_id`,
    /// `password`; absent: empty, and no password for a PEM). Text kinds are read as UTF-8.
    public static func upload(kind: CredentialKind, file: [UInt8], values: [String: String]) -> CredentialUpload {
        switch kind {
        case .p8:
            .p8(
                pem: String(decoding: file, as: UTF8.self), keyID: values["key_id"] ?? "",
                teamID: values["team_id"] ?? "")
        case .p12: .p12(der: file, password: values["password"] ?? "")
        case .pem: .pem(text: String(decoding: file, as: UTF8.self), password: values["password"])
        }
    }
}
