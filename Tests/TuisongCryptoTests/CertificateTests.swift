import Foundation
import Testing

@testable import TuisongCrypto

@Suite struct CertificateTests {
    @Test func issuedChainVerifiesWithOpenSSL() throws {
        let dir = try TemporaryDirectory()
        let pki = try TestPKI(altNames: ["localhost", "127.0.0.1", "::1"])
        try dir.write("ca.pem", pki.ca.pem())
        try dir.write("leaf.pem", pki.leaf.pem())
        let verify = try openssl(["verify", "-CAfile", "ca.pem", "-purpose", "sslserver", "leaf.pem"], in: dir)
        #expect(verify.stdout.contains("leaf.pem: OK"))
        let text = try openssl(["x509", "-in", "leaf.pem", "-noout", "-text"], in: dir).stdout
        #expect(text.contains("DNS:localhost"))
        #expect(text.contains("IP Address:127.0.0.1"))
        #expect(text.contains("IP Address:0:0:0:0:0:0:0:1"))
        #expect(text.contains("CA:FALSE"))
        #expect(text.contains("TLS Web Server Authentication, TLS Web Client Authentication"))
        let caText = try openssl(["x509", "-in", "ca.pem", "-noout", "-text"], in: dir).stdout
        #expect(caText.contains("CA:TRUE"))
        // A certificate from a different CA does not verify: the check above is meaningful.
        let stranger = try TestPKI()
        try dir.write("stranger.pem", stranger.leaf.pem())
        let failed = try openssl(["verify", "-CAfile", "ca.pem", "stranger.pem"], in: dir, expectSuccess: false)
        #expect(failed.status != 0)
    }

    @Test func namesDatesAndEncodings() throws {
        let notBefore = Date(timeIntervalSince1970: 1_600_000_000)
        let notAfter = Date(timeIntervalSince1970: 1_900_000_000)
        let key = try PrivateKey.generateP256()
        let certificate = try Certificate.issue(
            subjectCommonName: "Apple Push Services: com.example.推送", subjectUID: "com.example.推送", subjectAltNames: [],
            publicKey: key.publicKey, issuer: nil, signingKey: key, isCA: false, notBefore: notBefore,
            notAfter: notAfter)
        #expect(certificate.commonName == "Apple Push Services: com.example.推送")
        #expect(certificate.userID == "com.example.推送")
        #expect(certificate.subject == "CN=Apple Push Services: com.example.推送,UID=com.example.推送")
        #expect(certificate.issuer == certificate.subject)
        #expect(certificate.notBefore == notBefore)
        #expect(certificate.notAfter == notAfter)
        #expect(certificate.isValid(at: Date(timeIntervalSince1970: 1_700_000_000)))
        #expect(!certificate.isValid(at: Date(timeIntervalSince1970: 1_950_000_000)))
        #expect(certificate.applePushTopics == ["com.example.推送"])  // UID fallback
        #expect(certificate.applePushEnvironments.isEmpty)

        #expect(try Certificate(der: certificate.der()) == certificate)
        #expect(try Certificate(pem: certificate.pem()) == certificate)
        #expect(certificate.publicKey == key.publicKey)
        #expect(certificate.matches(key))
        #expect(!certificate.matches(try PrivateKey.generateP256()))
        #expect(certificate.sha256Fingerprint == Hex.encode(Digest.sha256(certificate.der())))
    }

    @Test func expiredCertificateDates() throws {
        let key = try PrivateKey.generateP256()
        let now = Date()
        let expired = try Certificate.issue(
            subjectCommonName: "old", subjectAltNames: [], publicKey: key.publicKey, issuer: nil, signingKey: key,
            isCA: false,
            notBefore: now.addingTimeInterval(-90 * 86400), notAfter: now.addingTimeInterval(-86400))
        #expect(expired.notAfter < now)
        #expect(!expired.isValid(at: now))
        // Dates beyond 2049 use GeneralizedTime; they must read back the same.
        let far = Date(timeIntervalSince1970: 4_102_444_800)  // 2100-01-01
        let longLived = try Certificate.issue(
            subjectCommonName: "long", subjectAltNames: [], publicKey: key.publicKey, issuer: nil, signingKey: key,
            isCA: true,
            notBefore: now, notAfter: far)
        #expect(longLived.notAfter == far)
    }

    @Test func applePushExtensionsRoundTrip() throws {
        let topics = ["com.example.app", "com.example.app.voip", "com.example.app.complication"]
        let pki = try TestPKI(
            leafCommonName: "Apple Push Services: com.example.app", leafUID: "com.example.app", altNames: [],
            extraExtensions: [
                (Certificate.applePushTopicsOID, Certificate.applePushTopicsExtensionValue(topics: topics)),
                (Certificate.applePushDevelopmentOID, [0x05, 0x00]),
                (Certificate.applePushProductionOID, [0x05, 0x00]),
            ])
        let reloaded = try Certificate(pem: pki.leaf.pem())
        #expect(reloaded.applePushTopics == topics)
        #expect(reloaded.applePushEnvironments == ["sandbox", "production"])
        #expect(reloaded.extensionValue(oid: Certificate.applePushDevelopmentOID) == [0x05, 0x00])
        #expect(reloaded.extensionValue(oid: "1.2.3.4") == nil)

        let sandboxOnly = try TestPKI(
            altNames: [], extraExtensions: [(Certificate.applePushDevelopmentOID, [0x05, 0x00])])
        #expect(sandboxOnly.leaf.applePushEnvironments == ["sandbox"])
        #expect(sandboxOnly.leaf.applePushTopics.isEmpty)  // neither the extension nor a UID
    }

    @Test func readsApplePushExtensionsMadeByOpenSSL() throws {
        // Apple's layout, written by the CLI from an ASN.1 description rather than by our encoder.
        let dir = try TemporaryDirectory()
        try dir.write(
            "ext.cnf",
            """
            [req]
            distinguished_name = dn
            [dn]
            [push]
            1.2.840.113635.100.6.3.2 = DER:0500
            1.2.840.113635.100.6.3.6 = ASN1:SEQUENCE:topics
            [topics]
            t1 = UTF8:com.example.app
            k1 = SEQUENCE:kind_app
            t2 = UTF8:com.example.app.voip
            k2 = SEQUENCE:kind_voip
            [kind_app]
            k = UTF8:app
            [kind_voip]
            k = UTF8:voip

            """)
        try openssl(
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "key.pem",
                "-out", "cert.pem", "-days", "30", "-config", "ext.cnf", "-extensions", "push",
                "-subj", "/UID=com.example.app/CN=Apple Push Services: com.example.app/OU=TEAM123456/O=Example/C=CN",
            ], in: dir)
        let certificate = try Certificate(pem: try dir.readText("cert.pem"))
        #expect(certificate.applePushTopics == ["com.example.app", "com.example.app.voip"])
        #expect(certificate.applePushEnvironments == ["production"])
        #expect(certificate.userID == "com.example.app")
        #expect(
            certificate.subject
                == "C=CN,O=Example,OU=TEAM123456,CN=Apple Push Services: com.example.app,UID=com.example.app")
        #expect(certificate.matches(try PrivateKey(pem: try dir.readText("key.pem"))))
        let days = certificate.notAfter.timeIntervalSince(certificate.notBefore) / 86400
        #expect(abs(days - 30) < 0.01)
    }

    @Test func keyMismatchIsDetected() throws {
        let pki = try TestPKI()
        let other = try PrivateKey.generateP256()
        let now = Date()
        expectCryptoError(.keyMismatch) {
            _ = try Certificate.issue(
                subjectCommonName: "x", subjectAltNames: [], publicKey: other.publicKey, issuer: nil,
                signingKey: pki.caKey,
                isCA: false, notBefore: now, notAfter: now.addingTimeInterval(60))
        }
        expectCryptoError(.keyMismatch) {
            _ = try Certificate.issue(
                subjectCommonName: "x", subjectAltNames: [], publicKey: other.publicKey, issuer: (pki.ca, other),
                signingKey: other,
                isCA: false, notBefore: now, notAfter: now.addingTimeInterval(60))
        }
        expectCryptoError(.corruptInput) {
            _ = try Certificate.issue(
                subjectCommonName: "x", subjectAltNames: ["a,b"], publicKey: other.publicKey, issuer: nil,
                signingKey: other,
                isCA: false, notBefore: now, notAfter: now.addingTimeInterval(60))
        }
        expectCryptoError(.corruptInput) {
            _ = try Certificate.issue(
                subjectCommonName: "x", subjectAltNames: [], publicKey: other.publicKey, issuer: nil, signingKey: other,
                isCA: false, notBefore: now, notAfter: now)
        }
        #expect(!pki.leaf.matches(pki.caKey))
        #expect(pki.leaf.matches(pki.leafKey))
    }

    @Test func chainsAndBadInput() throws {
        let pki = try TestPKI()
        let chain = try Certificate.parseChain(pem: "junk\n" + pki.leaf.pem() + "\n# comment\n" + pki.ca.pem())
        #expect(chain == [pki.leaf, pki.ca])
        #expect(chain[0].issuer == pki.ca.subject)
        expectCryptoError(.wrongKind) { _ = try Certificate.parseChain(pem: "nothing here") }
        expectCryptoError(.wrongKind) { _ = try Certificate(pem: pki.leafKey.pkcs8PEM()) }
        expectCryptoError(.corruptInput) {
            _ = try Certificate(pem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
        }
        expectCryptoError(.corruptInput) { _ = try Certificate(der: Array(pki.leaf.der().dropLast(5))) }
        expectCryptoError(.corruptInput) { _ = try Certificate(der: []) }
    }
}

@Suite struct PKCS12Tests {
    private func exportWithCLI(_ pki: TestPKI, password: String, legacy: Bool = false, in dir: TemporaryDirectory)
        throws -> [UInt8]
    {
        try dir.write("cert.pem", pki.leaf.pem())
        try dir.write("key.pem", pki.leafKey.pkcs8PEM())
        try dir.write("ca.pem", pki.ca.pem())
        var arguments = [
            "pkcs12", "-export", "-inkey", "key.pem", "-in", "cert.pem", "-certfile", "ca.pem", "-passout",
            "pass:\(password)",
            "-out", "push.p12",
        ]
        if legacy { arguments.append("-legacy") }
        try openssl(arguments, in: dir)
        return try dir.read("push.p12")
    }

    @Test func parsesCLIExport() throws {
        let dir = try TemporaryDirectory()
        let pki = try TestPKI(
            leafCommonName: "Apple Push Services: com.example.app", leafUID: "com.example.app", altNames: [])
        let p12 = try exportWithCLI(pki, password: "s3cret", in: dir)
        let parsed = try PKCS12.parse(p12, password: "s3cret")
        #expect(parsed.certificate == pki.leaf)
        #expect(parsed.certificate.matches(parsed.key))
        #expect(parsed.key.publicKey == pki.leafKey.publicKey)
        #expect(parsed.chain == [pki.ca])
        #expect(parsed.certificate.applePushTopics == ["com.example.app"])
    }

    @Test func wrongPasswordAndGarbageAreToldApart() throws {
        let dir = try TemporaryDirectory()
        let p12 = try exportWithCLI(try TestPKI(), password: "s3cret", in: dir)
        expectCryptoError(.wrongPassword) { _ = try PKCS12.parse(p12, password: "guess") }
        expectCryptoError(.wrongPassword) { _ = try PKCS12.parse(p12, password: "") }
        expectCryptoError(.corruptInput) {
            _ = try PKCS12.parse(Array("definitely not a p12".utf8), password: "s3cret")
        }
        expectCryptoError(.corruptInput) { _ = try PKCS12.parse(SecureRandom.bytes(2048), password: "s3cret") }
        expectCryptoError(.corruptInput) { _ = try PKCS12.parse(Array(p12.prefix(p12.count / 2)), password: "s3cret") }
        expectCryptoError(.corruptInput) { _ = try PKCS12.parse([], password: "") }
    }

    @Test func legacyAndEmptyPasswordExports() throws {
        let dir = try TemporaryDirectory()
        let pki = try TestPKI(rsaLeaf: true)
        let legacy = try exportWithCLI(pki, password: "old", legacy: true, in: dir)
        let parsed = try PKCS12.parse(legacy, password: "old")
        #expect(parsed.certificate == pki.leaf)
        #expect(parsed.key.kind == .rsa)
        expectCryptoError(.wrongPassword) { _ = try PKCS12.parse(legacy, password: "new") }

        let empty = try exportWithCLI(pki, password: "", in: dir)
        #expect(try PKCS12.parse(empty, password: "").certificate == pki.leaf)
    }

    @Test func certificateWithoutKeyIsWrongKind() throws {
        let dir = try TemporaryDirectory()
        let pki = try TestPKI()
        try dir.write("cert.pem", pki.leaf.pem())
        try openssl(
            ["pkcs12", "-export", "-nokeys", "-in", "cert.pem", "-passout", "pass:pw", "-out", "nokey.p12"], in: dir)
        expectCryptoError(.wrongKind) { _ = try PKCS12.parse(try dir.read("nokey.p12"), password: "pw") }
    }

    @Test func makeIsReadableByOpenSSLAndUs() throws {
        let dir = try TemporaryDirectory()
        let pki = try TestPKI()
        let p12 = try PKCS12.make(certificate: pki.leaf, key: pki.leafKey, chain: [pki.ca], password: "pw")
        try dir.write("made.p12", bytes: p12)
        let dump = try openssl(["pkcs12", "-in", "made.p12", "-passin", "pass:pw", "-nodes"], in: dir)
        #expect(dump.stdout.contains("BEGIN PRIVATE KEY"))
        #expect(try Certificate.parseChain(pem: dump.stdout).count == 2)
        let parsed = try PKCS12.parse(p12, password: "pw")
        #expect(parsed.certificate == pki.leaf)
        #expect(parsed.chain == [pki.ca])
        expectCryptoError(.keyMismatch) { _ = try PKCS12.make(certificate: pki.leaf, key: pki.caKey, password: "pw") }
    }
}

@Suite struct PEMBundleTests {
    @Test func findsTheLeafByItsKey() throws {
        let pki = try TestPKI()
        let text = try pki.ca.pem() + pki.leafKey.pkcs8PEM() + pki.leaf.pem()
        let bundle = try PEMBundle.parse(text)
        #expect(bundle.certificate == pki.leaf)
        #expect(bundle.key?.publicKey == pki.leafKey.publicKey)
        #expect(bundle.chain == [pki.ca])

        let certificatesOnly = try PEMBundle.parse(pki.leaf.pem() + pki.ca.pem())
        #expect(certificatesOnly.certificate == pki.leaf)
        #expect(certificatesOnly.key == nil)
        #expect(certificatesOnly.chain == [pki.ca])
    }

    @Test func encryptedKeyAndFailures() throws {
        let dir = try TemporaryDirectory()
        let pki = try TestPKI()
        try dir.write("key.pem", pki.leafKey.pkcs8PEM())
        try openssl(
            ["pkcs8", "-topk8", "-in", "key.pem", "-v2", "aes-128-cbc", "-passout", "pass:pw", "-out", "enc.pem"],
            in: dir)
        let text = pki.leaf.pem() + (try dir.readText("enc.pem"))
        #expect(try PEMBundle.parse(text, password: "pw").key?.publicKey == pki.leafKey.publicKey)
        expectCryptoError(.wrongPassword) { _ = try PEMBundle.parse(text) }
        expectCryptoError(.keyMismatch) { _ = try PEMBundle.parse(pki.leaf.pem() + pki.caKey.pkcs8PEM()) }
        expectCryptoError(.keyMismatch) {
            _ = try PEMBundle.parse(pki.leaf.pem() + PrivateKey.generateP256().pkcs8PEM())
        }
        expectCryptoError(.wrongKind) { _ = try PEMBundle.parse(pki.leafKey.pkcs8PEM()) }
    }
}
