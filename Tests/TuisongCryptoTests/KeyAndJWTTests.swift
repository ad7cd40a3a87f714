import Foundation
import Testing

@testable import TuisongCrypto

@Suite struct KeyTests {
    @Test func generatedP256SignsAndVerifies() throws {
        let key = try PrivateKey.generateP256()
        #expect(key.kind == .ecP256)
        #expect(key.bits == 256)
        let message = Array("header.claims".utf8)
        let signature = try key.signES256(message)
        #expect(signature.count == 64)
        #expect(key.publicKey.verifyES256(signature: signature, message: message))
        #expect(!key.publicKey.verifyES256(signature: signature, message: message + [0]))
        var bent = signature
        bent[10] ^= 1
        #expect(!key.publicKey.verifyES256(signature: bent, message: message))
        #expect(!key.publicKey.verifyES256(signature: Array(signature.prefix(63)), message: message))
        #expect(!(try PrivateKey.generateP256()).publicKey.verifyES256(signature: signature, message: message))
    }

    @Test func loadsOpenSSLGeneratedP8AndCrossVerifies() throws {
        let dir = try TemporaryDirectory()
        try openssl(
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "AuthKey.p8"], in: dir)
        let p8 = try dir.readText("AuthKey.p8")
        #expect(p8.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let key = try PrivateKey(pem: p8)
        #expect(key.kind == .ecP256)
        try openssl(["pkey", "-in", "AuthKey.p8", "-pubout", "-out", "pub.pem"], in: dir)
        let cliPublic = try PublicKey(pem: try dir.readText("pub.pem"))
        #expect(cliPublic == key.publicKey)
        #expect(try cliPublic.pem() == dir.readText("pub.pem"))

        // Our signature verifies with the CLI (after converting r‖s to DER independently).
        let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0".utf8)
        try dir.write("message", bytes: message)
        let ours = try key.signES256(message)
        try dir.write("ours.der", bytes: TestDER.derFromRaw(ours))
        let verified = try openssl(
            ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "ours.der", "message"], in: dir)
        #expect(verified.stdout.contains("Verified OK"))
        // A wrong signature is rejected by the CLI too (the check above can fail).
        var wrong = ours
        wrong[40] ^= 0x80
        try dir.write("wrong.der", bytes: TestDER.derFromRaw(wrong))
        let rejected = try openssl(
            ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "wrong.der", "message"], in: dir,
            expectSuccess: false)
        #expect(rejected.status != 0)

        // The CLI's DER signature, converted to raw r‖s, verifies with us.
        try openssl(["dgst", "-sha256", "-sign", "AuthKey.p8", "-out", "cli.der", "message"], in: dir)
        let cliRaw = try #require(TestDER.rawFromDER(try dir.read("cli.der")))
        #expect(key.publicKey.verifyES256(signature: cliRaw, message: message))
        #expect(try ECDSASignature.rawFromDER(try dir.read("cli.der")) == cliRaw)
    }

    @Test func pkcs8RoundTripAndOtherFormats() throws {
        let dir = try TemporaryDirectory()
        let key = try PrivateKey.generateP256()
        let pem = try key.pkcs8PEM()
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let again = try PrivateKey(pem: pem)
        #expect(again.publicKey == key.publicKey)

        // SEC1 "EC PRIVATE KEY", as some operators export it.
        try dir.write("key.p8", pem)
        try openssl(["ec", "-in", "key.p8", "-out", "sec1.pem"], in: dir)
        let sec1Text = try dir.readText("sec1.pem")
        #expect(sec1Text.contains("BEGIN EC PRIVATE KEY"))
        #expect(try PrivateKey(pem: sec1Text).publicKey == key.publicKey)

        // Windows line endings and surrounding text do not matter.
        let crlf = "Bag Attributes: none\r\n" + pem.replacingOccurrences(of: "\n", with: "\r\n")
        #expect(try PrivateKey(pem: crlf).publicKey == key.publicKey)

        // RSA (PKCS#8 and PKCS#1).
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.pem"], in: dir)
        let rsa = try PrivateKey(pem: try dir.readText("rsa.pem"))
        #expect(rsa.kind == .rsa)
        #expect(rsa.bits == 2048)
        try openssl(["rsa", "-in", "rsa.pem", "-traditional", "-out", "rsa1.pem"], in: dir)
        let pkcs1 = try dir.readText("rsa1.pem")
        #expect(pkcs1.contains("BEGIN RSA PRIVATE KEY"))
        #expect(try PrivateKey(pem: pkcs1).kind == .rsa)
        expectCryptoError(.wrongKind) { _ = try rsa.signES256([1, 2, 3]) }

        // P-384 loads but is not ES256 material.
        try openssl(
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", "p384.pem"], in: dir)
        let p384 = try PrivateKey(pem: try dir.readText("p384.pem"))
        #expect(p384.kind == .other)
        expectCryptoError(.wrongKind) { _ = try p384.signES256([1]) }
        #expect(try PrivateKey.generateRSA(bits: 2048).kind == .rsa)
    }

    @Test func encryptedKeysNeedTheRightPassword() throws {
        let dir = try TemporaryDirectory()
        try openssl(
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "plain.pem"], in: dir)
        try openssl(
            [
                "pkcs8", "-topk8", "-in", "plain.pem", "-v2", "aes-256-cbc", "-passout", "pass:s3cret", "-out",
                "enc.pem",
            ], in: dir)
        let encrypted = try dir.readText("enc.pem")
        #expect(encrypted.contains("BEGIN ENCRYPTED PRIVATE KEY"))
        let plain = try PrivateKey(pem: try dir.readText("plain.pem"))
        #expect(try PrivateKey(pem: encrypted, password: "s3cret").publicKey == plain.publicKey)
        expectCryptoError(.wrongPassword) { _ = try PrivateKey(pem: encrypted) }
        expectCryptoError(.wrongPassword) { _ = try PrivateKey(pem: encrypted, password: "guess") }

        // Legacy PEM encryption (Proc-Type/DEK-Info) of a SEC1 key.
        try openssl(["ec", "-in", "plain.pem", "-aes256", "-passout", "pass:s3cret", "-out", "legacy.pem"], in: dir)
        let legacy = try dir.readText("legacy.pem")
        #expect(legacy.contains("Proc-Type: 4,ENCRYPTED"))
        #expect(try PrivateKey(pem: legacy, password: "s3cret").publicKey == plain.publicKey)
        expectCryptoError(.wrongPassword) { _ = try PrivateKey(pem: legacy, password: "nope") }
        expectCryptoError(.wrongPassword) { _ = try PrivateKey(pem: legacy) }
    }

    @Test func badInput() throws {
        expectCryptoError(.wrongKind) { _ = try PrivateKey(pem: "not a pem at all") }
        expectCryptoError(.corruptInput) {
            _ = try PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n")
        }
        let pki = try TestPKI()
        expectCryptoError(.wrongKind) { _ = try PrivateKey(pem: pki.leaf.pem()) }
        expectCryptoError(.wrongKind) { _ = try PublicKey(pem: pki.leaf.pem()) }
        expectCryptoError(.corruptInput) { _ = try PublicKey(der: [0x30, 0x03, 0x01]) }
        // The error carries OpenSSL's own explanation.
        do {
            _ = try PrivateKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n")
        } catch {
            #expect(!error.opensslErrorCodes.isEmpty)
            #expect(error.message.contains("openssl:"))
        }
    }
}

@Suite struct JWTTests {
    @Test func es256TokenStructure() throws {
        let key = try PrivateKey.generateP256()
        let issuedAt = Date(timeIntervalSince1970: 1_700_000_000.75)
        let token = try JWT.es256Token(keyID: "ABC123DEFG", issuer: "DEF123GHIJ", issuedAt: issuedAt, key: key)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        #expect(parts.count == 3)
        #expect(!token.contains("="))
        #expect(
            String(decoding: try #require(Base64URL.decode(parts[0])), as: UTF8.self)
                == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(
            String(decoding: try #require(Base64URL.decode(parts[1])), as: UTF8.self)
                == #"{"iss":"DEF123GHIJ","iat":1700000000}"#)
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(signature.count == 64)
        #expect(key.publicKey.verifyES256(signature: signature, message: Array("\(parts[0]).\(parts[1])".utf8)))

        let verified = try JWT.verifyES256(token, publicKey: key.publicKey)
        #expect(verified == JWT.Token(alg: "ES256", kid: "ABC123DEFG", iss: "DEF123GHIJ", iat: 1_700_000_000))
        #expect(verified.issuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(try JWT.decodeUnverified(token) == verified)
    }

    @Test func verificationFailures() throws {
        let key = try PrivateKey.generateP256()
        let token = try JWT.es256Token(keyID: "K", issuer: "T", issuedAt: Date(), key: key)
        expectCryptoError(.verificationFailed) {
            _ = try JWT.verifyES256(token, publicKey: PrivateKey.generateP256().publicKey)
        }

        let parts = token.split(separator: ".").map(String.init)
        let forgedClaims = Base64URL.encode(#"{"iss":"EVIL","iat":1}"#.utf8)
        expectCryptoError(.verificationFailed) {
            _ = try JWT.verifyES256("\(parts[0]).\(forgedClaims).\(parts[2])", publicKey: key.publicKey)
        }

        let hs256 = Base64URL.encode(#"{"alg":"HS256","kid":"K"}"#.utf8)
        expectCryptoError(.unsupported) {
            _ = try JWT.verifyES256("\(hs256).\(parts[1]).\(parts[2])", publicKey: key.publicKey)
        }
        expectCryptoError(.corruptInput) { _ = try JWT.verifyES256("a.b", publicKey: key.publicKey) }
        expectCryptoError(.corruptInput) {
            _ = try JWT.verifyES256("\(parts[0]).\(parts[1]).!!", publicKey: key.publicKey)
        }
        expectCryptoError(.corruptInput) {
            _ = try JWT.verifyES256("\(Base64URL.encode("[]".utf8)).\(parts[1]).\(parts[2])", publicKey: key.publicKey)
        }
        expectCryptoError(.wrongKind) {
            _ = try JWT.es256Token(
                keyID: "K", issuer: "T", issuedAt: Date(), key: PrivateKey.generateRSA(bits: 2048))
        }
    }

    @Test func escapesIdentifiersInJSON() throws {
        let key = try PrivateKey.generateP256()
        let token = try JWT.es256Token(
            keyID: "a\"b\\c", issuer: "t\n", issuedAt: Date(timeIntervalSince1970: 5), key: key)
        let verified = try JWT.verifyES256(token, publicKey: key.publicKey)
        #expect(verified.kid == "a\"b\\c")
        #expect(verified.iss == "t\n")
        #expect(verified.iat == 5)
    }
}
