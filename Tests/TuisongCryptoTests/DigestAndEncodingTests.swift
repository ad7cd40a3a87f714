import Foundation
import Testing

@testable import TuisongCrypto

@Suite struct DigestTests {
    @Test func knownVectors() {
        #expect(Hex.encode(Digest.md5([])) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Hex.encode(Digest.md5(Array("abc".utf8))) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(Hex.encode(Digest.sha1(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(Hex.encode(Digest.sha256([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            Hex.encode(Digest.sha256("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func hmacRFC4231() {
        // Test case 1
        #expect(
            Hex.encode(HMAC.sha256(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        // Test case 2
        #expect(
            Hex.encode(HMAC.sha256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: a key longer than the block size is hashed first.
        #expect(
            Hex.encode(
                HMAC.sha256(
                    key: [UInt8](repeating: 0xaa, count: 131),
                    message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        #expect(HMAC.sha256(key: [], message: []).count == 32)
    }

    @Test func secureRandom() {
        #expect(SecureRandom.bytes(0).isEmpty)
        let a = SecureRandom.bytes(32)
        let b = SecureRandom.bytes(32)
        #expect(a.count == 32)
        #expect(a != b)
    }
}

@Suite struct EncodingTests {
    @Test func hex() {
        #expect(Hex.encode([0x00, 0x7f, 0xde, 0xad]) == "007fdead")
        #expect(Hex.decode("007FdeAD") == [0x00, 0x7f, 0xde, 0xad])
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    @Test func base64URLVectors() {
        // RFC 4648 §10 vectors, unpadded.
        let vectors = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(plain.utf8) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
        // The URL-safe alphabet, where standard base64 has + and /.
        #expect(Base64URL.encode([0xfb, 0xff, 0xbf]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xfb, 0xff, 0xbf])
        #expect(Base64URL.decode("Zm8=") == Array("fo".utf8))
        #expect(Base64URL.decode("Zm9vYg==") == Array("foob".utf8))
    }

    @Test func base64URLRejects() {
        #expect(Base64URL.decode("+/+/") == nil)  // standard alphabet
        #expect(Base64URL.decode("Z") == nil)  // impossible length
        #expect(Base64URL.decode("Zh") == nil)  // non-zero trailing bits
        #expect(Base64URL.decode("Zm 9v") == nil)
        #expect(Base64URL.decode("Zm9v=") == nil)
    }

    @Test func base64URLRoundTripsEveryLength() {
        for length in 0..<70 {
            let bytes = SecureRandom.bytes(length)
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
            #expect(
                Base64URL.encode(bytes)
                    == Data(bytes).base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .replacingOccurrences(of: "=", with: ""))
        }
    }
}

@Suite struct SecretBoxTests {
    @Test func roundTrip() throws {
        let box = try SecretBox(key: SecureRandom.bytes(32))
        for plaintext in [[], Array("p8 key material".utf8), SecureRandom.bytes(5000)] {
            let sealed = try box.seal(plaintext, associatedData: Array("app:7".utf8))
            #expect(sealed.count == plaintext.count + SecretBox.overhead)
            #expect(sealed[0] == 1)
            #expect(try box.open(sealed, associatedData: Array("app:7".utf8)) == plaintext)
        }
        // Nonces are random: sealing twice never gives the same bytes.
        #expect(try box.seal([1, 2, 3]) != box.seal([1, 2, 3]))
    }

    @Test func detectsTamperingAnywhere() throws {
        let box = try SecretBox(key: SecureRandom.bytes(32))
        let sealed = try box.seal(Array("secret".utf8))
        for index in 1..<sealed.count {  // nonce, ciphertext and tag
            var tampered = sealed
            tampered[index] ^= 0x01
            expectCryptoError(.verificationFailed) { _ = try box.open(tampered) }
        }
        expectCryptoError(.unsupported) {
            var other = sealed
            other[0] = 2
            _ = try box.open(other)
        }
        expectCryptoError(.corruptInput) { _ = try box.open(Array(sealed.prefix(SecretBox.overhead - 1))) }
    }

    @Test func wrongKeyOrAssociatedData() throws {
        let box = try SecretBox(key: SecureRandom.bytes(32))
        let sealed = try box.seal(Array("secret".utf8), associatedData: [1])
        expectCryptoError(.verificationFailed) {
            _ = try SecretBox(key: SecureRandom.bytes(32)).open(sealed, associatedData: [1])
        }
        expectCryptoError(.verificationFailed) { _ = try box.open(sealed, associatedData: [2]) }
        expectCryptoError(.verificationFailed) { _ = try box.open(sealed) }
        expectCryptoError(.wrongKind) { _ = try SecretBox(key: SecureRandom.bytes(16)) }
    }

    @Test func matchesOpenSSLAESGCM() throws {
        // Decrypt with an independent GCM implementation: openssl enc has no GCM, so use a
        // fixed key/nonce known-answer test instead (NIST GCM test case 14: AES-256, zero
        // key, zero IV, one zero block).
        let box = try SecretBox(key: [UInt8](repeating: 0, count: 32))
        let sealed =
            [UInt8(1)] + [UInt8](repeating: 0, count: 12)
            + Hex.decode("cea7403d4d606b6e074ec5d3baf39d18")! + Hex.decode("d0d1c8a799996bf0265b98b5d48ab919")!
        #expect(try box.open(sealed) == [UInt8](repeating: 0, count: 16))
    }
}

@Suite struct PasswordHashTests {
    @Test func roundTripAndRejection() throws {
        let stored = try PasswordHash.make("correct horse", iterations: 1000)
        #expect(stored.hasPrefix("pbkdf2-sha256$1000$"))
        #expect(PasswordHash.verify("correct horse", against: stored))
        #expect(!PasswordHash.verify("correct horsE", against: stored))
        #expect(!PasswordHash.verify("correct horse", against: "garbage"))
        #expect(!PasswordHash.verify("x", against: "pbkdf2-sha256$0$AA$AA"))
        // Two hashes of one password differ (random salt).
        #expect(try PasswordHash.make("p", iterations: 1000) != PasswordHash.make("p", iterations: 1000))
    }

    /// RFC 7914 §11 / widely published PBKDF2-HMAC-SHA256 vector ("passwd", "salt", 1 iteration).
    @Test func knownVector() throws {
        let derived = try PasswordHash.derive("passwd", salt: Array("salt".utf8), iterations: 1)
        #expect(Hex.encode(derived).hasPrefix("55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"))
    }
}
