import Foundation
import Testing

@testable import TuisongCrypto

/// RS256 as a Google service account signs its token request: cross-checked against the
/// openssl command line, the independent implementation.
@Suite struct RS256Tests {
    @Test func signatureVerifiesWithOpenSSL() throws {
        let directory = try TemporaryDirectory()
        let key = try PrivateKey.generateRSA(bits: 2048)
        let message = Array("header.claims".utf8)
        let signature = try key.signRS256(message)
        #expect(signature.count == 256)
        try directory.write("key.pem", try key.publicKey.pem())
        try directory.write("message", bytes: message)
        try directory.write("signature", bytes: signature)
        let result = try openssl(
            ["dgst", "-sha256", "-verify", "key.pem", "-signature", "signature", "message"], in: directory)
        #expect(result.stdout.contains("Verified OK"))
    }

    @Test func opensslSignatureVerifiesHere() throws {
        let directory = try TemporaryDirectory()
        try openssl(
            ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"], in: directory)
        try directory.write("message", "a.b")
        try openssl(["dgst", "-sha256", "-sign", "key.pem", "-out", "signature", "message"], in: directory)
        let key = try PrivateKey(pem: directory.readText("key.pem"))
        let signature = try directory.read("signature")
        #expect(key.publicKey.verifyRS256(signature: signature, message: Array("a.b".utf8)))
        #expect(!key.publicKey.verifyRS256(signature: signature, message: Array("a.c".utf8)))
        // RS256 is deterministic: the same key and message give openssl's bytes.
        #expect(try key.signRS256(Array("a.b".utf8)) == signature)
    }

    @Test func jwtRoundTripsAndRefusesTampering() throws {
        let key = try PrivateKey.generateRSA(bits: 2048)
        let token = try JWT.signRS256(
            header: #"{"alg":"RS256","typ":"JWT","kid":"k1"}"#, claims: #"{"iss":"a@b","iat":1}"#, key: key)
        let (header, claims) = try JWT.verifyRS256(token, publicKey: key.publicKey)
        #expect(String(decoding: header, as: UTF8.self).contains("\"kid\":\"k1\""))
        #expect(String(decoding: claims, as: UTF8.self) == #"{"iss":"a@b","iat":1}"#)

        let other = try PrivateKey.generateRSA(bits: 2048)
        expectCryptoError(.verificationFailed) { _ = try JWT.verifyRS256(token, publicKey: other.publicKey) }
        let parts = token.split(separator: ".")
        let forged = parts[0] + "." + Base64URL.encode(#"{"iss":"evil","iat":1}"#.utf8) + "." + parts[2]
        expectCryptoError(.verificationFailed) { _ = try JWT.verifyRS256(String(forged), publicKey: key.publicKey) }
        let es256 = try JWT.es256Token(
            keyID: "K", issuer: "T", issuedAt: Date(), key: try PrivateKey.generateP256())
        expectCryptoError(.unsupported) { _ = try JWT.verifyRS256(es256, publicKey: key.publicKey) }
        expectCryptoError(.corruptInput) { _ = try JWT.verifyRS256("a.b", publicKey: key.publicKey) }
        // An EC key cannot sign RS256.
        expectCryptoError(.wrongKind) { _ = try PrivateKey.generateP256().signRS256([1]) }
    }
}
