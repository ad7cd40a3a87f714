import Foundation
import TuisongCore
public import TuisongCrypto

/// Everything needed to push through the mock with no Apple account: a throwaway CA, a TLS
/// server certificate for localhost, a `.p8`-style token key with key and team ids, and a fake
/// Apple push client certificate for certificate auth.
///
///     let setup = try APNsMockLocalSetup.generate(bundleID: "com.example.app")
///     let server = try APNsMockServer(configuration: setup.configuration(),
///                                     certificate: setup.serverCertificate, key: setup.serverKey)
///     // the client trusts setup.caCertificatePEM and signs JWTs with setup.tokenKeyPEM,
///     // kid setup.keyID, iss setup.teamID
public struct APNsMockLocalSetup: Sendable {
    /// The bundle id the client certificate is issued for (its APNs topics).
    public var bundleID: String
    /// The throwaway CA: trust it to reach the mock, and it issued the client certificate.
    public var caCertificatePEM: String
    /// TLS server identity for `localhost`, `127.0.0.1` and `::1`, issued by the CA.
    public var serverCertificate: Certificate
    public var serverKey: PrivateKey
    /// The token signing key as an Apple `.p8` file holds it (PKCS#8 PEM, P-256).
    public var tokenKeyPEM: String
    /// Its public half, as `APNsMockConfiguration.TokenKey` wants it.
    public var tokenPublicKeyPEM: String
    /// 10-character key id (`kid`) and team id (`iss`).
    public var keyID: String
    public var teamID: String
    /// A fake "Apple Push Services" client certificate issued by the CA, with the APNs topics
    /// extension (bundle id, `.voip`, `.complication`) and both environment markers.
    public var clientCertificatePEM: String
    /// The client certificate's private key (PKCS#8 PEM).
    public var clientKeyPEM: String
    /// The other look-alikes' throwaway credentials, by their own keys (each
    /// `LookAlikeDeclaration.setupKeys`), kept as saved; each look-alike's folder adds typed
    /// accessors.
    public var lookAlikeMaterials: [String: JSONValue] = [:]

    /// Makes fresh keys and certificates (valid from an hour ago for 825 days), and each
    /// look-alike's credentials.
    public static func generate(bundleID: String, lookAlikes: LookAlikeRegistry) throws -> APNsMockLocalSetup {
        let notBefore = Date().addingTimeInterval(-3600)
        let notAfter = notBefore.addingTimeInterval(825 * 24 * 3600)

        let caKey = try PrivateKey.generateP256()
        let ca = try Certificate.issue(
            subjectCommonName: "Tuisong APNs Mock CA", subjectAltNames: [], publicKey: caKey.publicKey,
            issuer: nil, signingKey: caKey, isCA: true, notBefore: notBefore, notAfter: notAfter)

        let serverKey = try PrivateKey.generateP256()
        let server = try Certificate.issue(
            subjectCommonName: "localhost", subjectAltNames: ["localhost", "127.0.0.1", "::1"],
            publicKey: serverKey.publicKey, issuer: (ca, caKey), signingKey: serverKey, isCA: false,
            notBefore: notBefore, notAfter: notAfter)

        let tokenKey = try PrivateKey.generateP256()

        let clientKey = try PrivateKey.generateP256()
        let environmentMarker: [UInt8] = [0x05, 0x00]  // DER NULL, as in Apple's certificates
        let client = try Certificate.issue(
            subjectCommonName: "Apple Push Services: \(bundleID)", subjectUID: bundleID, subjectAltNames: [],
            publicKey: clientKey.publicKey, issuer: (ca, caKey), signingKey: clientKey, isCA: false,
            notBefore: notBefore, notAfter: notAfter,
            extraExtensions: [
                (Certificate.apnsDevelopmentOID, environmentMarker),
                (Certificate.apnsProductionOID, environmentMarker),
                (
                    Certificate.apnsTopicsOID,
                    Certificate.apnsTopicsExtensionValue(topics: [
                        bundleID, bundleID + ".voip", bundleID + ".complication",
                    ])
                ),
            ])

        var setup = APNsMockLocalSetup(
            bundleID: bundleID, caCertificatePEM: ca.pem(), serverCertificate: server, serverKey: serverKey,
            tokenKeyPEM: try tokenKey.pkcs8PEM(), tokenPublicKeyPEM: try tokenKey.publicKey.pem(),
            keyID: randomIdentifier(), teamID: randomIdentifier(), clientCertificatePEM: client.pem(),
            clientKeyPEM: try clientKey.pkcs8PEM())
        _ = try setup.complete(lookAlikes)
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
    /// build a setup per test (a hundred setups doubled the APNs suite's CPU time). Each setup
    /// still has its own key ids, and a setup is throwaway by design.
    private static let processKey = Result { try PrivateKey.generateRSA(bits: 2048) }

    /// The process's RSA 2048 key, for the look-alikes whose accounts sign with RSA.
    package static func sharedRSAKey() throws -> PrivateKey { try processKey.get() }

    /// A configuration accepting this setup's token key and client certificates, and each
    /// look-alike's credentials.
    public func configuration(
        host: String = "127.0.0.1", port: Int = 0, faults: APNsMockConfiguration.Faults = .init(),
        lookAlikes: LookAlikeRegistry
    ) -> APNsMockConfiguration {
        var configuration = APNsMockConfiguration(
            host: host, port: port,
            tokenKeys: [.init(keyID: keyID, teamID: teamID, publicKeyPEM: tokenPublicKeyPEM)],
            clientCertificateCAPEMs: [caCertificatePEM], faults: faults)
        for declaration in lookAlikes.declarations { declaration.configure(&configuration, self) }
        return configuration
    }

    /// The look-alike's own credential of `channel` (its token endpoint at `baseURL` where the
    /// credential names one), every app's fallback in local mode; nil when there is no look-alike.
    public func fallbackCredential(channel: String, baseURL: String, lookAlikes: LookAlikeRegistry)
        -> LookAlikeCredential?
    {
        // APNs's: the token key, its team id and key id (the look-alike trusts it).
        if channel == APNsMockServer.channel {
            return LookAlikeCredential(vendorAppID: teamID, clientID: keyID, secret: Array(tokenKeyPEM.utf8))
        }
        return lookAlikes[AndroidPushService(channel)]?.fallbackCredential(self, baseURL)
    }

    /// Writes the CA certificate (PEM) for clients to trust, e.g. `curl --cacert`.
    public func writeCAFile(to path: String) throws {
        try Data(caCertificatePEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Reuses the setup saved at `path` when it is for `bundleID` and its server certificate stays
    /// valid for at least another day, so credentials a gateway stored from it keep working across
    /// restarts; otherwise generates a fresh one and saves it there (mode 0600: it holds keys).
    public static func loadOrGenerate(at path: String, bundleID: String, lookAlikes: LookAlikeRegistry) throws
        -> APNsMockLocalSetup
    {
        if let data = FileManager.default.contents(atPath: path),
            var saved = try? JSONDecoder().decode(APNsMockLocalSetup.self, from: data),
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
            throw APNsMockError.posix("create \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            let error = APNsMockError.posix("rename \(temporary) to \(path)")
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }

    /// Apple's key and team ids: 10 characters of A–Z and 0–9.
    static func randomIdentifier() -> String {
        randomString(count: 10, alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    }

    package static func randomString(count: Int, alphabet: String) -> String {
        let characters = Array(alphabet)
        var generator = SystemRandomNumberGenerator()
        return String((0..<count).map { _ in characters.randomElement(using: &generator)! })
    }
}

/// Encoded as PEM strings, so a setup can be saved and reused (see `loadOrGenerate`).
extension APNsMockLocalSetup: Codable {
    private enum CodingKeys: String, CodingKey {
        case bundleID, caCertificatePEM, serverCertificatePEM, serverKeyPEM, tokenKeyPEM, tokenPublicKeyPEM
        case keyID, teamID, clientCertificatePEM, clientKeyPEM
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func string(_ key: CodingKeys) throws -> String { try container.decode(String.self, forKey: key) }
        bundleID = try string(.bundleID)
        caCertificatePEM = try string(.caCertificatePEM)
        serverCertificate = try Certificate(pem: try string(.serverCertificatePEM))
        serverKey = try PrivateKey(pem: try string(.serverKeyPEM))
        tokenKeyPEM = try string(.tokenKeyPEM)
        tokenPublicKeyPEM = try string(.tokenPublicKeyPEM)
        keyID = try string(.keyID)
        teamID = try string(.teamID)
        clientCertificatePEM = try string(.clientCertificatePEM)
        clientKeyPEM = try string(.clientKeyPEM)
        // Every other key is a look-alike's (`complete` makes those a registry's look-alikes lack).
        let known = Set(
            [
                CodingKeys.bundleID, .caCertificatePEM, .serverCertificatePEM, .serverKeyPEM, .tokenKeyPEM,
                .tokenPublicKeyPEM, .keyID, .teamID, .clientCertificatePEM, .clientKeyPEM,
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
        try container.encode(tokenKeyPEM, forKey: .tokenKeyPEM)
        try container.encode(tokenPublicKeyPEM, forKey: .tokenPublicKeyPEM)
        try container.encode(keyID, forKey: .keyID)
        try container.encode(teamID, forKey: .teamID)
        try container.encode(clientCertificatePEM, forKey: .clientCertificatePEM)
        try container.encode(clientKeyPEM, forKey: .clientKeyPEM)
        var others = encoder.container(keyedBy: AnyCodingKey.self)
        for (key, value) in lookAlikeMaterials { try others.encode(value, forKey: AnyCodingKey(key)) }
    }
}
