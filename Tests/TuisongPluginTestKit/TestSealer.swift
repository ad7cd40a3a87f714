import Foundation
import TuisongCrypto
import TuisongPlugin

/// Seals with AES-256-GCM under a key of its own, as the gateway's master-key sealer does
/// (base64 of nonce, ciphertext and tag; `context` as associated data). `init(keyFile:)` reads
/// a gateway master key file, to open what a real gateway sealed (a fixture database).
public struct TestSealer: SecretSealer {
    let box: SecretBox

    public init() throws {
        box = try SecretBox(key: SecureRandom.bytes(32))
    }

    /// A master key file as the gateway writes it: base64 of 32 bytes.
    public init(keyFile: URL) throws {
        let text = try String(contentsOf: keyFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let key = Data(base64Encoded: text), key.count == 32 else {
            throw TestKitError("\(keyFile.path) does not hold a base64 32-byte key")
        }
        box = try SecretBox(key: Array(key))
    }

    public func seal(_ plaintext: String, context: String) throws -> String {
        Data(try box.seal(Array(plaintext.utf8), associatedData: Array(context.utf8))).base64EncodedString()
    }

    public func open(_ sealed: String, context: String) throws -> String {
        guard let bytes = Data(base64Encoded: sealed) else { throw TestKitError("a sealed value is not base64") }
        return String(decoding: try box.open(Array(bytes), associatedData: Array(context.utf8)), as: UTF8.self)
    }
}

/// Something the test kit could not do, said plainly.
public struct TestKitError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}
