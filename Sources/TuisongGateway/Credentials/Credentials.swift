import Foundation
import Logging
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongTransportKit

/// What an operator uploads for an app and environment.
public enum CredentialUpload: Sendable {
    /// Token auth: the `.p8` PEM with its key id and team id.
    case p8(pem: String, keyID: String, teamID: String)
    /// A `.p12` certificate bundle and its password.
    case p12(der: [UInt8], password: String)
    /// PEM certificate (+ chain) and private key, in one text.
    case pem(text: String, password: String?)
}

/// A credential problem, told in the words an operator needs.
public struct CredentialError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The refusal's code in the admin API (`corrupt_file`): the APNs ones below, and whatever a
    /// transport's credential form declares (`invalid_client_id`).
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let wrongPassword = Code(rawValue: "wrong_password")
        public static let corruptFile = Code(rawValue: "corrupt_file")
        public static let wrongKind = Code(rawValue: "wrong_kind")
        public static let expired = Code(rawValue: "expired")
        public static let keyMismatch = Code(rawValue: "key_mismatch")
        public static let invalidKeyID = Code(rawValue: "invalid_key_id")
        public static let invalidTeamID = Code(rawValue: "invalid_team_id")
        public static let notFound = Code(rawValue: "not_found")
        public static let invalidSelector = Code(rawValue: "invalid_selector")
        public static let invalidVendorAppID = Code(rawValue: "invalid_vendor_app_id")
        public static let invalidClientID = Code(rawValue: "invalid_client_id")
        public static let invalidClientSecret = Code(rawValue: "invalid_client_secret")
        public static let invalidBadgeClass = Code(rawValue: "invalid_badge_class")
        /// A service account file whose fields are not of the shapes its service gives them.
        public static let invalidServiceAccount = Code(rawValue: "invalid_service_account")
        /// A certificate that names no APNs environment, uploaded without choosing one.
        public static let environmentRequired = Code(rawValue: "environment_required")
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

/// The decrypted secret of a credential; only ever exists in memory.
enum CredentialSecret: Codable {
    case p8(pem: String)
    case p12(der: Data, password: String)
    case pem(text: String, password: String?)
}

/// Validates uploads, seals secrets under the master key, and opens them for the transport that
/// reads them (APNs's pools), which parses them.
public struct CredentialService: Sendable {
    let store: any ChannelCredentialStore
    let masterKey: MasterKey
    let clock: any Clock
    /// The channel whose credentials are uploaded files (`TransportRegistry.uploadedFilesChannel`);
    /// nil: this gateway has none, and an upload is refused.
    let channel: PushChannel?

    public init(
        store: any ChannelCredentialStore, masterKey: MasterKey, clock: any Clock = SystemClock(),
        channel: PushChannel?
    ) {
        self.store = store
        self.masterKey = masterKey
        self.clock = clock
        self.channel = channel
    }

    /// Parses and checks an upload: the file parses, the password is right, the key matches the
    /// certificate, it has not expired, and it is the kind it claims to be.
    ///
    /// `environment` nil means both where the credential can serve both: a `.p8` key always can
    /// (Apple's token keys sign for sandbox and production alike); a certificate serves both
    /// when it is universal (it names both environments, whatever was chosen), else the one it
    /// names. A `.p8` given one environment serves that one only.
    public func inspect(_ upload: CredentialUpload, appID: Int64, environment: PushEnvironment?)
        throws(CredentialError) -> NewCredential
    {
        guard let channel else {
            throw CredentialError(.wrongKind, "this gateway has no transport whose credentials are uploaded files")
        }
        switch upload {
        case .p8(let pem, let keyID, let teamID):
            guard Self.isAppleIdentifier(keyID) else {
                throw CredentialError(
                    .invalidKeyID, "the key id must be the 10 letters and digits Apple shows, got \"\(keyID)\"")
            }
            guard Self.isAppleIdentifier(teamID) else {
                throw CredentialError(
                    .invalidTeamID, "the team id must be the 10 letters and digits Apple shows, got \"\(teamID)\"")
            }
            let key: PrivateKey
            do {
                key = try PrivateKey(pem: pem)
            } catch {
                if pem.contains("CERTIFICATE") {
                    throw CredentialError(.wrongKind, "this is a certificate, not a .p8 key: upload it as PEM or .p12")
                }
                throw CredentialError(.corruptFile, "the .p8 file does not hold a private key (\(error.message))")
            }
            guard key.kind == .ecP256 else {
                throw CredentialError(.wrongKind, "a .p8 APNs key is an EC P-256 key; this one is not")
            }
            return NewCredential(
                appID: appID, channel: channel, kind: .p8, environment: environment ?? .production, teamID: teamID,
                keyID: keyID,
                subject: nil, topics: [], expiresAt: nil, encryptedSecret: try seal(.p8(pem: pem), appID: appID),
                servesBothEnvironments: environment == nil)
        case .p12(let der, let password):
            let parsed: (certificate: Certificate, key: PrivateKey, chain: [Certificate])
            do {
                parsed = try PKCS12.parse(der, password: password)
            } catch  where error.code == .wrongPassword {
                throw CredentialError(.wrongPassword, "the password does not open this .p12 file")
            } catch  where error.code == .keyMismatch {
                throw CredentialError(
                    .keyMismatch, "the private key in this .p12 file does not belong to its certificate")
            } catch {
                throw CredentialError(.corruptFile, "this is not a readable .p12 file (\(error.message))")
            }
            return try certificateCredential(
                parsed.certificate, key: parsed.key, kind: .p12, channel: channel, appID: appID,
                environment: environment,
                secret: .p12(der: Data(der), password: password))
        case .pem(let text, let password):
            let parsed: (certificate: Certificate, key: PrivateKey?, chain: [Certificate])
            do {
                parsed = try PEMBundle.parse(text, password: password)
            } catch  where error.code == .wrongPassword {
                throw CredentialError(.wrongPassword, "the password does not decrypt the PEM private key")
            } catch  where error.code == .keyMismatch {
                throw CredentialError(.keyMismatch, "the private key does not belong to the certificate")
            } catch {
                if text.contains("PRIVATE KEY"), !text.contains("CERTIFICATE") {
                    throw CredentialError(
                        .wrongKind, "this PEM holds only a key; a .p8 key is uploaded with its key id and team id")
                }
                throw CredentialError(.corruptFile, "the PEM text does not hold a certificate (\(error.message))")
            }
            guard let key = parsed.key else {
                throw CredentialError(.wrongKind, "the PEM holds a certificate but no private key; paste both")
            }
            return try certificateCredential(
                parsed.certificate, key: key, kind: .pem, channel: channel, appID: appID, environment: environment,
                secret: .pem(text: text, password: password))
        }
    }

    private func certificateCredential(
        _ certificate: Certificate, key: PrivateKey, kind: CredentialKind, channel: PushChannel, appID: Int64,
        environment: PushEnvironment?,
        secret: CredentialSecret
    ) throws(CredentialError) -> NewCredential {
        guard certificate.matches(key) else {
            throw CredentialError(.keyMismatch, "the private key does not belong to the certificate")
        }
        guard certificate.notAfter > clock.now else {
            throw CredentialError(.expired, "the certificate expired on \(ISO8601.string(certificate.notAfter))")
        }
        let named = certificate.applePushEnvironments.compactMap(PushEnvironment.init(rawValue:))
        let universal = named.count == 2
        guard let chosen = environment ?? (named.count == 1 ? named[0] : universal ? .production : nil) else {
            throw CredentialError(
                .environmentRequired,
                "this certificate does not say which APNs environment it is for: choose sandbox or production",
                field: "environment")
        }
        return NewCredential(
            appID: appID, channel: channel, kind: kind, environment: chosen, teamID: nil, keyID: nil,
            subject: certificate.subject, topics: certificate.applePushTopics, expiresAt: certificate.notAfter,
            encryptedSecret: try seal(secret, appID: appID), servesBothEnvironments: universal)
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
            // The channel's name (`apns`, the only one with uploaded files) leads, as it always did:
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

    static func isAppleIdentifier(_ s: String) -> Bool {
        s.utf8.count == 10
            && s.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }
    }
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
