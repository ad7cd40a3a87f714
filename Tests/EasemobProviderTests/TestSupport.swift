import Foundation
import TuisongCrypto
import TuisongPlugin

/// Seals with AES-256-GCM under a random key, as the gateway's master-key sealer does.
struct TestSealer: SecretSealer {
    let box: SecretBox

    init() throws {
        box = try SecretBox(key: SecureRandom.bytes(32))
    }

    func seal(_ plaintext: String, context: String) throws -> String {
        Data(try box.seal(Array(plaintext.utf8), associatedData: Array(context.utf8))).base64EncodedString()
    }

    func open(_ sealed: String, context: String) throws -> String {
        guard let bytes = Data(base64Encoded: sealed) else { throw CocoaError(.coderReadCorrupt) }
        return String(decoding: try box.open(Array(bytes), associatedData: Array(context.utf8)), as: UTF8.self)
    }
}
