import Foundation
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

    /// Makes fresh keys and certificates (valid from an hour ago for 825 days).
    public static func generate(bundleID: String) throws -> APNsMockLocalSetup {
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

        return APNsMockLocalSetup(
            bundleID: bundleID, caCertificatePEM: ca.pem(), serverCertificate: server, serverKey: serverKey,
            tokenKeyPEM: try tokenKey.pkcs8PEM(), tokenPublicKeyPEM: try tokenKey.publicKey.pem(),
            keyID: randomIdentifier(), teamID: randomIdentifier(), clientCertificatePEM: client.pem(),
            clientKeyPEM: try clientKey.pkcs8PEM())
    }

    /// A configuration accepting this setup's token key and client certificates.
    public func configuration(
        host: String = "127.0.0.1", port: Int = 0, faults: APNsMockConfiguration.Faults = .init()
    ) -> APNsMockConfiguration {
        APNsMockConfiguration(
            host: host, port: port,
            tokenKeys: [.init(keyID: keyID, teamID: teamID, publicKeyPEM: tokenPublicKeyPEM)],
            clientCertificateCAPEMs: [caCertificatePEM], faults: faults)
    }

    /// Writes the CA certificate (PEM) for clients to trust, e.g. `curl --cacert`.
    public func writeCAFile(to path: String) throws {
        try Data(caCertificatePEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Apple's key and team ids: 10 characters of A–Z and 0–9.
    static func randomIdentifier() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<10).map { _ in alphabet.randomElement(using: &generator)! })
    }
}
