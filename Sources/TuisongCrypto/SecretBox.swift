internal import COpenSSL

/// Authenticated encryption of small secrets at rest (p8 keys, p12 passwords, vendor keys)
/// with AES-256-GCM.
///
/// Sealed layout: `version (1 byte, 0x01) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`. The nonce is
/// random per seal; the version byte leaves room for a key rotation or algorithm change.
///
///     let box = try SecretBox(key: SecureRandom.bytes(32))
///     let sealed = try box.seal(Array("secret".utf8), associatedData: Array("app:7".utf8))
///     let plain = try box.open(sealed, associatedData: Array("app:7".utf8))
public final class SecretBox: Sendable {
    public static let keyLength = 32
    static let version: UInt8 = 1
    static let nonceLength = 12
    static let tagLength = 16
    /// Bytes a sealed box adds to its plaintext.
    public static let overhead = 1 + nonceLength + tagLength

    private let key: [UInt8]

    /// `key` must be exactly 32 bytes (`wrongKind` otherwise).
    public init(key: [UInt8]) throws(CryptoError) {
        guard key.count == SecretBox.keyLength else {
            throw CryptoError(.wrongKind, "SecretBox key must be 32 bytes, got \(key.count)")
        }
        self.key = key
    }

    /// A key for another purpose, derived from this box's key (HMAC-SHA256 of `label`): one
    /// master key also keys the receipts' MACs without its bytes leaving the box.
    public func derivedKey(_ label: String) -> [UInt8] {
        HMAC.sha256(key: key, message: Array(("tuisong derived key: " + label).utf8))
    }

    public func seal(_ plaintext: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        let nonce = SecureRandom.bytes(SecretBox.nonceLength)
        let cipher = try CipherContext()
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: SecretBox.tagLength)
        var produced: Int32 = 0
        var total = 0
        guard EVP_EncryptInit_ex(cipher.pointer, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw .drained(.openssl, "AES-GCM encrypt init failed")
        }
        if !associatedData.isEmpty {
            guard EVP_EncryptUpdate(cipher.pointer, nil, &produced, associatedData, Int32(associatedData.count)) == 1
            else {
                throw .drained(.openssl, "AES-GCM associated data failed")
            }
        }
        if !plaintext.isEmpty {
            let ok = ciphertext.withUnsafeMutableBufferPointer {
                EVP_EncryptUpdate(cipher.pointer, $0.baseAddress, &produced, plaintext, Int32(plaintext.count))
            }
            guard ok == 1 else { throw .drained(.openssl, "AES-GCM encrypt failed") }
            total = Int(produced)
        }
        let finalOK = ciphertext.withUnsafeMutableBufferPointer {
            EVP_EncryptFinal_ex(cipher.pointer, $0.baseAddress! + total, &produced)
        }
        guard finalOK == 1 else { throw .drained(.openssl, "AES-GCM encrypt final failed") }
        total += Int(produced)
        guard EVP_CIPHER_CTX_ctrl(cipher.pointer, EVP_CTRL_GCM_GET_TAG, Int32(SecretBox.tagLength), &tag) == 1 else {
            throw .drained(.openssl, "AES-GCM get tag failed")
        }
        return [SecretBox.version] + nonce + ciphertext.prefix(total) + tag
    }

    /// Throws `corruptInput` when too short, `unsupported` for an unknown version byte, and
    /// `verificationFailed` when the key, the associated data or any byte is wrong.
    public func open(_ sealed: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= SecretBox.overhead else {
            throw CryptoError(
                .corruptInput,
                "sealed box is \(sealed.count) bytes, shorter than its \(SecretBox.overhead)-byte overhead")
        }
        guard sealed[0] == SecretBox.version else {
            throw CryptoError(.unsupported, "sealed box version \(sealed[0]) is not supported")
        }
        let nonce = Array(sealed[1..<(1 + SecretBox.nonceLength)])
        let ciphertext = Array(sealed[(1 + SecretBox.nonceLength)..<(sealed.count - SecretBox.tagLength)])
        var tag = Array(sealed.suffix(SecretBox.tagLength))
        let cipher = try CipherContext()
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var produced: Int32 = 0
        var total = 0
        guard EVP_DecryptInit_ex(cipher.pointer, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw .drained(.openssl, "AES-GCM decrypt init failed")
        }
        if !associatedData.isEmpty {
            guard EVP_DecryptUpdate(cipher.pointer, nil, &produced, associatedData, Int32(associatedData.count)) == 1
            else {
                throw .drained(.openssl, "AES-GCM associated data failed")
            }
        }
        if !ciphertext.isEmpty {
            let ok = plaintext.withUnsafeMutableBufferPointer {
                EVP_DecryptUpdate(cipher.pointer, $0.baseAddress, &produced, ciphertext, Int32(ciphertext.count))
            }
            guard ok == 1 else { throw .drained(.openssl, "AES-GCM decrypt failed") }
            total = Int(produced)
        }
        guard EVP_CIPHER_CTX_ctrl(cipher.pointer, EVP_CTRL_GCM_SET_TAG, Int32(SecretBox.tagLength), &tag) == 1 else {
            throw .drained(.openssl, "AES-GCM set tag failed")
        }
        let finalOK = plaintext.withUnsafeMutableBufferPointer {
            EVP_DecryptFinal_ex(cipher.pointer, $0.baseAddress! + total, &produced)
        }
        guard finalOK == 1 else {
            throw .drained(
                .verificationFailed, "sealed box did not authenticate (wrong key, wrong associated data, or tampered)")
        }
        total += Int(produced)
        return Array(plaintext.prefix(total))
    }
}

/// Owns one `EVP_CIPHER_CTX` for the duration of one seal/open.
final class CipherContext {
    let pointer: OpaquePointer
    init() throws(CryptoError) {
        guard let ctx = EVP_CIPHER_CTX_new() else { throw .drained(.openssl, "EVP_CIPHER_CTX_new failed") }
        pointer = ctx
    }
    deinit { EVP_CIPHER_CTX_free(pointer) }
}
