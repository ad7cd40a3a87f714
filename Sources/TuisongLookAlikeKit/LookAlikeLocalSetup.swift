import Foundation
import TuisongCore
public import TuisongCrypto

/// Everything needed to push through the look-alikes with no account at any service: a
/// throwaway CA, a TLS server certificate for localhost it issued, and each look-alike's
/// throwaway credentials (`lookAlikeMaterials`, read through the accessors its folder adds).
///
///     let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.app")
///     let server = try LookAlikeServer(configuration: setup.configuration(),
///                                      certificate: setup.serverCertificate, key: setup.serverKey)
///     // the client trusts setup.caCertificatePEM and signs in with a look-alike's credentials
public struct LookAlikeLocalSetup: Sendable {
    /// The app the set-up is made for (a look-alike's credentials may name it: a client
    /// certificate's topics, a package name).
    public var bundleID: String
    /// The throwaway CA: trust it to reach the look-alikes; it issues the client certificates.
    public var caCertificatePEM: String
    /// TLS server identity for `localhost`, `127.0.0.1` and `::1`, issued by the CA.
    public var serverCertificate: Certificate
    public var serverKey: PrivateKey
    /// The CA and its key while a fresh set-up is made, for the look-alikes that issue a client
    /// certificate (`makeSetup`); never saved, so nil in a set-up read back from its file.
    package var certificateAuthority: (certificate: Certificate, key: PrivateKey)?
    /// The look-alikes' throwaway credentials, by their own keys (each
    /// `LookAlikeDeclaration.setupKeys`), kept as saved; each look-alike's folder adds typed
    /// accessors.
    public var lookAlikeMaterials: [String: JSONValue] = [:]

    /// Makes fresh keys and certificates (valid from an hour ago for 825 days), and each
    /// look-alike's credentials.
    public static func generate(bundleID: String, lookAlikes: LookAlikeRegistry) throws -> LookAlikeLocalSetup {
        let notBefore = Date().addingTimeInterval(-3600)
        let notAfter = notBefore.addingTimeInterval(825 * 24 * 3600)

        let caKey = try PrivateKey.generateP256()
        let ca = try Certificate.issue(
            subjectCommonName: "Tuisong Look-alike CA", subjectAltNames: [], publicKey: caKey.publicKey,
            issuer: nil, signingKey: caKey, isCA: true, notBefore: notBefore, notAfter: notAfter)

        let serverKey = try PrivateKey.generateP256()
        let server = try Certificate.issue(
            subjectCommonName: "localhost", subjectAltNames: ["localhost", "127.0.0.1", "::1"],
            publicKey: serverKey.publicKey, issuer: (ca, caKey), signingKey: serverKey, isCA: false,
            notBefore: notBefore, notAfter: notAfter)

        var setup = LookAlikeLocalSetup(
            bundleID: bundleID, caCertificatePEM: ca.pem(), serverCertificate: server, serverKey: serverKey,
            certificateAuthority: (ca, caKey))
        _ = try setup.complete(lookAlikes)
        setup.certificateAuthority = nil
        return setup
    }

    /// Makes the credentials of each look-alike that has none here (a set-up saved before it
    /// had them); true when it made any.
    mutating func complete(_ lookAlikes: LookAlikeRegistry) throws -> Bool {
        var made = false
        for declaration in lookAlikes.declarations
        where !declaration.setupKeys.allSatisfy({ lookAlikeMaterials[$0] != nil }) {
            try declaration.makeSetup(&self)
            made = true
        }
        return made
    }

    /// The look-alike material `key` read as `T`. A set-up made or loaded through a registry
    /// has its look-alikes' keys; reading one it lacks is a programming error.
    package func lookAlikeMaterial<T: Decodable>(_ key: String, as type: T.Type) -> T {
        guard let stored = lookAlikeMaterials[key], let value = try? stored.decoded(as: T.self) else {
            preconditionFailure("this local set-up has no \(key): made without its look-alike")
        }
        return value
    }

    /// Sets the look-alike material `key`.
    package mutating func setLookAlikeMaterial(_ key: String, _ value: some Encodable) throws {
        lookAlikeMaterials[key] = try JSONValue(encoding: value)
    }

    /// One RSA key per process: generating RSA 2048 costs about 150 ms of CPU, and test suites
    /// build a setup per test (a hundred setups doubled the look-alike suites' CPU time). Each setup
    /// still has its own key ids, and a setup is throwaway by design.
    private static let processKey = Result { try PrivateKey.generateRSA(bits: 2048) }

    /// The process's RSA 2048 key, for the look-alikes whose accounts sign with RSA.
    package static func sharedRSAKey() throws -> PrivateKey { try processKey.get() }

    /// A configuration accepting client certificates from this set-up's CA, and each
    /// look-alike's credentials.
    public func configuration(
        host: String = "127.0.0.1", port: Int = 0, faults: LookAlikeConfiguration.Faults = .init(),
        lookAlikes: LookAlikeRegistry
    ) -> LookAlikeConfiguration {
        var configuration = LookAlikeConfiguration(
            host: host, port: port, clientCertificateCAPEMs: [caCertificatePEM], faults: faults)
        for declaration in lookAlikes.declarations { declaration.configure(&configuration, self) }
        return configuration
    }

    /// The look-alike's own credential of `channel` (its token endpoint at `baseURL` where the
    /// credential names one), every app's fallback in local mode; nil when there is no look-alike.
    public func fallbackCredential(channel: String, baseURL: String, lookAlikes: LookAlikeRegistry)
        -> LookAlikeCredential?
    {
        lookAlikes[AndroidPushService(channel)]?.fallbackCredential(self, baseURL)
    }

    /// Writes the CA certificate (PEM) for clients to trust, e.g. `curl --cacert`.
    public func writeCAFile(to path: String) throws {
        try Data(caCertificatePEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Reuses the setup saved at `path` when it is for `bundleID` and its server certificate stays
    /// valid for at least another day, so credentials a gateway stored from it keep working across
    /// restarts; otherwise generates a fresh one and saves it there (mode 0600: it holds keys).
    public static func loadOrGenerate(at path: String, bundleID: String, lookAlikes: LookAlikeRegistry) throws
        -> LookAlikeLocalSetup
    {
        if let data = FileManager.default.contents(atPath: path),
            var saved = try? JSONDecoder().decode(LookAlikeLocalSetup.self, from: data),
            saved.bundleID == bundleID, saved.serverCertificate.isValid(at: Date().addingTimeInterval(24 * 3600))
        {
            // A setup saved before (some of) the look-alikes gets their credentials now; keep
            // them from now on.
            if try saved.complete(lookAlikes) { try saved.save(to: path) }
            return saved
        }
        let setup = try generate(bundleID: bundleID, lookAlikes: lookAlikes)
        try setup.save(to: path)
        return setup
    }

    /// Writes this setup as JSON (PEM strings) with mode 0600, replacing any file at `path`.
    public func save(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600])
        else {
            throw LookAlikeServerError.posix("create \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            let error = LookAlikeServerError.posix("rename \(temporary) to \(path)")
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }

    package static func randomString(count: Int, alphabet: String) -> String {
        let characters = Array(alphabet)
        var generator = SystemRandomNumberGenerator()
        return String((0..<count).map { _ in characters.randomElement(using: &generator)! })
    }
}

/// Encoded as PEM strings, so a setup can be saved and reused (see `loadOrGenerate`).
extension LookAlikeLocalSetup: Codable {
    private enum CodingKeys: String, CodingKey {
        case bundleID, caCertificatePEM, serverCertificatePEM, serverKeyPEM
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func string(_ key: CodingKeys) throws -> String { try container.decode(String.self, forKey: key) }
        bundleID = try string(.bundleID)
        caCertificatePEM = try string(.caCertificatePEM)
        serverCertificate = try Certificate(pem: try string(.serverCertificatePEM))
        serverKey = try PrivateKey(pem: try string(.serverKeyPEM))
        // Every other key is a look-alike's (`complete` makes those a registry's look-alikes lack).
        let known = Set(
            [
                CodingKeys.bundleID, .caCertificatePEM, .serverCertificatePEM, .serverKeyPEM,
            ].map(\.rawValue))
        let others = try decoder.container(keyedBy: AnyCodingKey.self)
        for key in others.allKeys where !known.contains(key.stringValue) {
            lookAlikeMaterials[key.stringValue] = try others.decode(JSONValue.self, forKey: key)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(bundleID, forKey: .bundleID)
        try container.encode(caCertificatePEM, forKey: .caCertificatePEM)
        try container.encode(serverCertificate.pem(), forKey: .serverCertificatePEM)
        try container.encode(try serverKey.pkcs8PEM(), forKey: .serverKeyPEM)
        var others = encoder.container(keyedBy: AnyCodingKey.self)
        for (key, value) in lookAlikeMaterials { try others.encode(value, forKey: AnyCodingKey(key)) }
    }
}
