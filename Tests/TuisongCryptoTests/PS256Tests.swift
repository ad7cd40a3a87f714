import Foundation
import Testing

@testable import TuisongCrypto

/// PS256 as a Huawei service account signs its Push Kit JWT: cross-checked both ways against
/// the openssl command line (RSA-PSS, SHA-256, MGF1-SHA-256, salt 32).
@Suite struct PS256Tests {
    static let pss = [
        "-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32", "-sigopt", "rsa_mgf1_md:sha256",
    ]

    @Test func signatureVerifiesWithOpenSSL() throws {
        let directory = try TemporaryDirectory()
        let key = try PrivateKey.generateRSA(bits: 2048)
        let message = Array("header.claims".utf8)
        let signature = try key.signPS256(message)
        #expect(signature.count == 256)
        // PSS is randomised: a second signature differs and verifies too.
        #expect(try key.signPS256(message) != signature)
        try directory.write("key.pem", try key.publicKey.pem())
        try directory.write("message", bytes: message)
        try directory.write("signature", bytes: signature)
        let result = try openssl(
            ["dgst", "-sha256", "-verify", "key.pem"] + Self.pss + ["-signature", "signature", "message"],
            in: directory)
        #expect(result.stdout.contains("Verified OK"))
        // The same bytes are not a PKCS#1 v1.5 signature.
        let plain = try openssl(
            ["dgst", "-sha256", "-verify", "key.pem", "-signature", "signature", "message"], in: directory,
            expectSuccess: false)
        #expect(!plain.stdout.contains("Verified OK"))
    }

    @Test func opensslSignatureVerifiesHere() throws {
        let directory = try TemporaryDirectory()
        try openssl(
            ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"], in: directory)
        try directory.write("message", "a.b")
        try openssl(
            ["dgst", "-sha256", "-sign", "key.pem"] + Self.pss + ["-out", "signature", "message"], in: directory)
        let key = try PrivateKey(pem: directory.readText("key.pem"))
        let signature = try directory.read("signature")
        #expect(key.publicKey.verifyPS256(signature: signature, message: Array("a.b".utf8)))
        #expect(!key.publicKey.verifyPS256(signature: signature, message: Array("a.c".utf8)))
        // Neither RS256 nor another salt length passes for PS256.
        #expect(!key.publicKey.verifyPS256(signature: try key.signRS256(Array("a.b".utf8)), message: Array("a.b".utf8)))
        try openssl(
            [
                "dgst", "-sha256", "-sign", "key.pem", "-sigopt", "rsa_padding_mode:pss", "-sigopt",
                "rsa_pss_saltlen:20",
                "-out", "salt20", "message",
            ], in: directory)
        #expect(!key.publicKey.verifyPS256(signature: try directory.read("salt20"), message: Array("a.b".utf8)))
    }

    @Test func jwtRoundTripsAndRefusesTampering() throws {
        let key = try PrivateKey.generateRSA(bits: 2048)
        let token = try JWT.signPS256(
            header: #"{"kid":"k1","typ":"JWT","alg":"PS256"}"#, claims: #"{"iss":"123","iat":1,"exp":2}"#, key: key)
        let (header, claims) = try JWT.verifyPS256(token, publicKey: key.publicKey)
        #expect(String(decoding: header, as: UTF8.self).contains("\"kid\":\"k1\""))
        #expect(String(decoding: claims, as: UTF8.self) == #"{"iss":"123","iat":1,"exp":2}"#)
        #expect(try JWT.decodeParts(token).claims == claims)

        let other = try PrivateKey.generateRSA(bits: 2048)
        expectCryptoError(.verificationFailed) { _ = try JWT.verifyPS256(token, publicKey: other.publicKey) }
        let parts = token.split(separator: ".")
        let forged = parts[0] + "." + Base64URL.encode(#"{"iss":"evil","iat":1,"exp":2}"#.utf8) + "." + parts[2]
        expectCryptoError(.verificationFailed) { _ = try JWT.verifyPS256(String(forged), publicKey: key.publicKey) }
        let rs256 = try JWT.signRS256(header: #"{"alg":"RS256"}"#, claims: "{}", key: key)
        expectCryptoError(.unsupported) { _ = try JWT.verifyPS256(rs256, publicKey: key.publicKey) }
        expectCryptoError(.corruptInput) { _ = try JWT.verifyPS256("a.b", publicKey: key.publicKey) }
        expectCryptoError(.wrongKind) { _ = try PrivateKey.generateP256().signPS256([1]) }
    }
}
