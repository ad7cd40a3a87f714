import Foundation
import Logging
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongTransportKit

/// A credential problem, told in the words an operator needs.
public struct CredentialError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The refusal's code in the admin API (`corrupt_file`): the gateway's own below, and whatever
    /// a transport's credential form or uploaded-file check declares (`invalid_client_id`,
    /// `wrong_password`).
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let corruptFile = Code(rawValue: "corrupt_file")
        public static let wrongKind = Code(rawValue: "wrong_kind")
        public static let notFound = Code(rawValue: "not_found")
        public static let invalidSelector = Code(rawValue: "invalid_selector")
        public static let invalidVendorAppID = Code(rawValue: "invalid_vendor_app_id")
        public static let invalidClientID = Code(rawValue: "invalid_client_id")
        public static let invalidClientSecret = Code(rawValue: "invalid_client_secret")
        public static let invalidBadgeClass = Code(rawValue: "invalid_badge_class")
        /// A service account file whose fields are not of the shapes its service gives them.
        public static let invalidServiceAccount = Code(rawValue: "invalid_service_account")
    }
    public var code: Code
    public var message: String
    /// The form field it is about, when a transport's credential form said.
    public var field: String?
    /// The message in both of the console's languages, when its maker gave the Chinese.
    public var text: LocalizedText?

    public init(_ code: Code, _ message: String, field: String? = nil, text: LocalizedText? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.text = text
    }

    public var description: String { message }
}

/// The decrypted secret of a credential; only ever exists in memory. Its coding is the sealed
/// format of every stored row: it must not change.
enum CredentialSecret: Codable {
    case p8(pem: String)
    case p12(der: Data, password: String)
    case pem(text: String, password: String?)

    init(_ file: CredentialFile) {
        switch file {
        case .p8(let pem): self = .p8(pem: pem)
        case .p12(let der, let password): self = .p12(der: Data(der), password: password)
        case .pem(let text, let password): self = .pem(text: text, password: password)
        }
    }
}

/// Validates uploads, seals secrets under the master key, and opens them for the transport that
/// reads them (its connection pools), which parses them.
public struct CredentialService: Sendable {
    let store: any ChannelCredentialStore
    let masterKey: MasterKey
    let clock: any Clock
    /// The transport whose credentials are uploaded files (`TransportRegistry.uploadedFiles`),
    /// whose form checks them; nil: this gateway has none, and an upload is refused.
    let declaration: TransportDeclaration?

    public init(
        store: any ChannelCredentialStore, masterKey: MasterKey, clock: any Clock = SystemClock(),
        uploadedFiles declaration: TransportDeclaration?
    ) {
        self.store = store
        self.masterKey = masterKey
        self.clock = clock
        self.declaration = declaration
    }

    /// Checks an upload by its transport's declared form (`UploadedCredentialForm`: the file
    /// parses, the password is right, the key matches the certificate, it has not expired, it is
    /// the kind it claims to be, and which environments it serves) and seals it.
    ///
    /// `environment` nil means both where the credential can serve both, as the form decides.
    public func inspect(_ upload: CredentialUpload, appID: Int64, environment: PushEnvironment?)
        throws(CredentialError) -> NewCredential
    {
        guard let declaration, let form = declaration.uploadedCredentialForm else {
            throw CredentialError(.wrongKind, "this gateway has no transport whose credentials are uploaded files")
        }
        let inspected: InspectedUpload
        do {
            inspected = try form.inspect(upload, environment, clock.now)
        } catch {
            throw CredentialError(CredentialError.Code(rawValue: error.code), error.message, field: error.field)
        }
        return NewCredential(
            appID: appID, channel: declaration.channel.channel, kind: inspected.kind,
            environment: inspected.environment, teamID: inspected.teamID, keyID: inspected.keyID,
            subject: inspected.subject, topics: inspected.topics, expiresAt: inspected.expiresAt,
            encryptedSecret: try seal(CredentialSecret(upload.file), appID: appID),
            servesBothEnvironments: inspected.servesBothEnvironments)
    }

    /// Stores a validated upload, with the vendor `selector` devices name it by (a
    /// vendor's credential selector; nil = the app's default credential for the environment). The
    /// caller releases held deliveries afterwards. `environment` nil: both, as `inspect` says.
    public func add(
        _ upload: CredentialUpload, appID: Int64, environment: PushEnvironment?, selector: String? = nil
    ) async throws -> CredentialRecord {
        try await addOnce(upload, appID: appID, environment: environment, selector: selector).record
    }

    /// As `add`, saying whether it was added: a repeat of an upload already stored (the same
    /// app, kind, environments, selector, identifiers and secret, by their keyed digest) adds
    /// nothing and answers the stored one, `added: false`.
    public func addOnce(
        _ upload: CredentialUpload, appID: Int64, environment: PushEnvironment?, selector: String? = nil
    ) async throws -> (record: CredentialRecord, added: Bool) {
        var credential = try inspect(upload, appID: appID, environment: environment)
        credential.selector = try CredentialSelector.validated(selector)
        let digest = digest(of: upload, credential)
        credential.secretDigest = digest
        if let existing = try await store.credential(appID: appID, secretDigest: digest) {
            return (existing, false)
        }
        let record = try await store.addCredential(credential)
        return (record, record.secretDigest == digest && record.encryptedSecret == credential.encryptedSecret)
    }

    /// HMAC-SHA256, under a key derived from the master key, of everything that makes an upload
    /// the same credential. Keyed: the digest of a secret says nothing of it without the key.
    func digest(of upload: CredentialUpload, _ credential: NewCredential) -> String {
        var parts: [[UInt8]] = [
            // The channel's name (the one with uploaded files) leads, as it always did:
            // digests of stored rows must not change.
            Array(credential.channel.rawValue.utf8), Array(String(credential.appID).utf8),
            Array(credential.kind.rawValue.utf8),
            Array((credential.servesBothEnvironments ? "both" : credential.environment.rawValue).utf8),
            Array((credential.selector ?? "").utf8), Array((credential.keyID ?? "").utf8),
            Array((credential.teamID ?? "").utf8),
        ]
        switch upload {
        case .p8(let pem, _, _): parts.append(Array(pem.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
        case .p12(let der, let password): parts += [der, Array(password.utf8)]
        case .pem(let text, let password):
            parts += [Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8), Array((password ?? "").utf8)]
        }
        return CredentialDigest.hex(parts, key: masterKey.box.derivedKey("credential digest"))
    }

    /// The stored file, opened: what the transport that reads it parses.
    public func file(of record: CredentialRecord) throws -> CredentialFile {
        switch try open(record.encryptedSecret, appID: record.appID) {
        case .p8(let pem): .p8(pem: pem)
        case .p12(let der, let password): .p12(der: Array(der), password: password)
        case .pem(let text, let password): .pem(text: text, password: password)
        }
    }

    private func seal(_ secret: CredentialSecret, appID: Int64) throws(CredentialError) -> [UInt8] {
        do {
            let plaintext = try JSONEncoder().encode(secret)
            return try masterKey.box.seal(Array(plaintext), associatedData: Self.associatedData(appID))
        } catch {
            throw CredentialError(.corruptFile, "cannot seal the credential: \(error)")
        }
    }

    private func open(_ sealed: [UInt8], appID: Int64) throws -> CredentialSecret {
        let plaintext = try masterKey.box.open(sealed, associatedData: Self.associatedData(appID))
        return try JSONDecoder().decode(CredentialSecret.self, from: Data(plaintext))
    }

    /// Binds a sealed secret to its app: a row copied to another app does not decrypt.
    static func associatedData(_ appID: Int64) -> [UInt8] { Array("tuisong-credential-v1:\(appID)".utf8) }
}

/// The keyed digest of a credential's parts, each length-prefixed so no two different lists
/// of parts read as the same bytes.
enum CredentialDigest {
    static func hex(_ parts: [[UInt8]], key: [UInt8]) -> String {
        var message: [UInt8] = []
        for part in parts {
            let count = UInt32(part.count)
            message += [
                UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF),
            ]
            message += part
        }
        return Hex.encode(HMAC.sha256(key: key, message: message))
    }
}

/// How APIs and the CLI show a credential: never its secret.
public enum CredentialView {
    public static func object(_ r: CredentialRecord, now: Date = Date()) -> [String: Any] {
        var object: [String: Any] = [
            "id": r.id, "app_id": r.appID, "kind": r.kind.rawValue, "environment": r.environmentName,
            "environments": r.environments.map(\.rawValue),
            "status": r.status, "created_at": ISO8601.string(r.createdAt), "topics": r.topics,
        ]
        if let v = r.teamID { object["team_id"] = v }
        if let v = r.keyID { object["key_id"] = v }
        if let v = r.subject { object["subject"] = v }
        if let v = r.statusReason { object["status_reason"] = v }
        if let v = r.selector { object["selector"] = v }
        if let expires = r.expiresAt {
            object["expires_at"] = ISO8601.string(expires)
            object["expires_in_days"] = Int(expires.timeIntervalSince(now) / 86400)
        }
        return object
    }
}

/// A credential's vendor selector (what a provider declares as `credentialSelector`: a
/// certificate's id or name in the vendor's words). Devices registered with the same selector
/// are sent through this credential.
public enum CredentialSelector {
    public static let maxLength = 128

    /// `nil` and blank stay nil (the default credential); otherwise trimmed, at most
    /// `maxLength` characters of letters and digits (any script: a certificate's name may be
    /// Chinese) and `-_.:@/+=#~`: never a space, a control or an invisible character (a
    /// right-to-left mark, a zero-width space), markup or a quote.
    public static func validated(_ raw: String?) throws(CredentialError) -> String? {
        guard let trimmed = raw?.trimmingCharacters(in: .whitespaces), !trimmed.isEmpty else { return nil }
        guard trimmed.count <= maxLength else {
            throw CredentialError(.invalidSelector, "the selector is longer than \(maxLength) characters")
        }
        guard trimmed.unicodeScalars.allSatisfy(isAllowed) else {
            throw CredentialError(
                .invalidSelector,
                "the selector is letters, digits and - _ . : @ / + = # ~ (a busiId or a certificate name), no spaces or control characters"
            )
        }
        return trimmed
    }

    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            return scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                || "-_.:@/+=#~".unicodeScalars.contains(scalar)
        }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .decimalNumber:
            return true
        default: return false
        }
    }
}

/// The transport that reads uploaded credentials opens them through the service that sealed them.
extension CredentialService: CredentialFileOpener {}
