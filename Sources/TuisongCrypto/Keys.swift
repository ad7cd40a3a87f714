internal import COpenSSL
internal import CTuisongShims

/// A private key: a `.p8` signing key (EC P-256), a TLS key, or an RSA key from a
/// certificate export. Immutable once loaded.
public final class PrivateKey: @unchecked Sendable {
    // @unchecked Sendable: the EVP_PKEY is never mutated after init; OpenSSL 3 allows
    // concurrent signing with one EVP_PKEY (each operation builds its own EVP_MD_CTX).

    public enum Kind: Sendable, Hashable {
        /// ECDSA on NIST P-256 (prime256v1): what ES256 token signing needs.
        case ecP256
        case rsa
        /// Another algorithm or curve (e.g. P-384, Ed25519); loadable but not usable for ES256.
        case other
    }

    package let evpPKey: OpaquePointer

    /// Takes ownership of one reference to `pkey`.
    init(owning pkey: OpaquePointer) {
        evpPKey = pkey
    }

    deinit { EVP_PKEY_free(evpPKey) }

    /// Loads the first private key in `pem`: PKCS#8 (`PRIVATE KEY`, Apple's `.p8`),
    /// encrypted PKCS#8 (`ENCRYPTED PRIVATE KEY`), SEC1 (`EC PRIVATE KEY`) or PKCS#1
    /// (`RSA PRIVATE KEY`, also legacy-encrypted). Other blocks in the text are skipped.
    ///
    /// Throws `wrongPassword` when the key is encrypted and `password` is nil or wrong,
    /// `wrongKind` when the text has no private key block, `corruptInput` otherwise.
    public convenience init(pem: String, password: String? = nil) throws(CryptoError) {
        guard let block = PEMBlock.scan(pem).first(where: \.isPrivateKey) else {
            throw CryptoError(.wrongKind, "no PRIVATE KEY block in the PEM text")
        }
        try self.init(owning: PrivateKey.read(block: block, password: password))
    }

    static func read(block: PEMBlock, password: String?) throws(CryptoError) -> OpaquePointer {
        let bio = try MemoryBIO(bytes: Array(block.text.utf8))
        let passphrase = PassphraseSource(password)
        let pkey = withExtendedLifetime(passphrase) {
            PEM_read_bio_PrivateKey(
                bio.pointer, nil, PassphraseSource.callback, Unmanaged.passUnretained(passphrase).toOpaque())
        }
        guard let pkey else {
            if passphrase.wasAsked || block.isEncrypted {
                let reason =
                    password == nil
                    ? "the private key is encrypted and no password was given" : "wrong password for the private key"
                throw .drained(.wrongPassword, reason)
            }
            throw .drained(.corruptInput, "cannot parse the \(block.label) block")
        }
        OpenSSLErrorQueue.clear()
        return pkey
    }

    /// A fresh P-256 key (e.g. for tests, or a look-alike's token keys).
    public static func generateP256() throws(CryptoError) -> PrivateKey {
        try generate(algorithm: "EC") { ctx in EVP_PKEY_CTX_set_group_name(ctx, "P-256") }
    }

    /// A fresh RSA key of `bits` (2048 or more is sensible).
    public static func generateRSA(bits: Int) throws(CryptoError) -> PrivateKey {
        guard bits >= 1024, bits <= 16384 else {
            throw CryptoError(.unsupported, "RSA key size \(bits) is out of range")
        }
        return try generate(algorithm: "RSA") { ctx in EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) }
    }

    private static func generate(algorithm: String, configure: (OpaquePointer) -> Int32) throws(CryptoError)
        -> PrivateKey
    {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else {
            throw .drained(.openssl, "EVP_PKEY_CTX_new_from_name(\(algorithm)) failed")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_keygen_init(ctx) == 1, configure(ctx) == 1 else {
            throw .drained(.openssl, "\(algorithm) key generation setup failed")
        }
        var pkey: OpaquePointer?
        guard EVP_PKEY_generate(ctx, &pkey) == 1, let pkey else {
            throw .drained(.openssl, "\(algorithm) key generation failed")
        }
        return PrivateKey(owning: pkey)
    }

    public var kind: Kind { keyKind(evpPKey) }

    /// The key size in bits (256 for P-256, the modulus size for RSA).
    public var bits: Int { Int(EVP_PKEY_get_bits(evpPKey)) }

    /// Unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the `.p8` format.
    public func pkcs8PEM() throws(CryptoError) -> String {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PKCS8PrivateKey(bio.pointer, evpPKey, nil, nil, 0, nil, nil) == 1 else {
            throw .drained(.openssl, "PEM_write_bio_PKCS8PrivateKey failed")
        }
        return bio.readString()
    }

    /// The public half.
    public var publicKey: PublicKey {
        // Round-trip through SubjectPublicKeyInfo DER so the PublicKey holds no private part.
        // Can only fail on allocation failure for a key that loaded.
        do {
            let der = try derEncode { i2d_PUBKEY(evpPKey, $0) }
            return try PublicKey(der: der)
        } catch {
            preconditionFailure("cannot derive the public key: \(error)")
        }
    }

    /// ES256 (ECDSA P-256 over SHA-256) as JWS wants it: raw `r ‖ s`, 32 bytes each,
    /// 64 in all — not DER. `wrongKind` unless the key is P-256.
    public func signES256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard kind == .ecP256 else { throw CryptoError(.wrongKind, "ES256 needs an EC P-256 key, this one is \(kind)") }
        let mdctx = try DigestContext()
        guard EVP_DigestSignInit(mdctx.pointer, nil, EVP_sha256(), nil, evpPKey) == 1 else {
            throw .drained(.openssl, "EVP_DigestSignInit failed")
        }
        return try ECDSASignature.rawFromDER(try mdctx.sign(message))
    }
}

/// A public key (SubjectPublicKeyInfo). Immutable once loaded.
public final class PublicKey: @unchecked Sendable, Equatable {
    // @unchecked Sendable: the EVP_PKEY is never mutated after init; verification with one
    // EVP_PKEY from several threads is allowed (each builds its own EVP_MD_CTX).

    package let evpPKey: OpaquePointer

    init(owning pkey: OpaquePointer) {
        evpPKey = pkey
    }

    deinit { EVP_PKEY_free(evpPKey) }

    /// Loads `-----BEGIN PUBLIC KEY-----` (SubjectPublicKeyInfo).
    public convenience init(pem: String) throws(CryptoError) {
        guard let block = PEMBlock.scan(pem).first(where: { $0.label == "PUBLIC KEY" }) else {
            throw CryptoError(.wrongKind, "no PUBLIC KEY block in the PEM text")
        }
        let bio = try MemoryBIO(bytes: Array(block.text.utf8))
        guard let pkey = PEM_read_bio_PUBKEY(bio.pointer, nil, nil, nil) else {
            throw .drained(.corruptInput, "cannot parse the PUBLIC KEY block")
        }
        self.init(owning: pkey)
    }

    /// Loads DER SubjectPublicKeyInfo.
    public convenience init(der: [UInt8]) throws(CryptoError) {
        let pkey = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pkey else { throw .drained(.corruptInput, "cannot parse DER SubjectPublicKeyInfo") }
        self.init(owning: pkey)
    }

    public var kind: PrivateKey.Kind { keyKind(evpPKey) }

    /// `-----BEGIN PUBLIC KEY-----` PEM.
    public func pem() throws(CryptoError) -> String {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PUBKEY(bio.pointer, evpPKey) == 1 else {
            throw .drained(.openssl, "PEM_write_bio_PUBKEY failed")
        }
        return bio.readString()
    }

    /// DER SubjectPublicKeyInfo (stable, so its SHA-256 identifies the key).
    public func der() throws(CryptoError) -> [UInt8] {
        try derEncode { i2d_PUBKEY(evpPKey, $0) }
    }

    /// Checks a raw `r ‖ s` ES256 signature. `false` for any malformed input or a non-P-256 key.
    public func verifyES256(signature: [UInt8], message: [UInt8]) -> Bool {
        defer { OpenSSLErrorQueue.clear() }
        guard kind == .ecP256, signature.count == 64,
            let der = try? ECDSASignature.derFromRaw(signature),
            let mdctx = try? DigestContext(),
            EVP_DigestVerifyInit(mdctx.pointer, nil, EVP_sha256(), nil, evpPKey) == 1
        else { return false }
        return EVP_DigestVerify(mdctx.pointer, der, der.count, message, message.count) == 1
    }

    public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool {
        defer { OpenSSLErrorQueue.clear() }
        return EVP_PKEY_eq(lhs.evpPKey, rhs.evpPKey) == 1
    }
}

private func keyKind(_ pkey: OpaquePointer) -> PrivateKey.Kind {
    switch EVP_PKEY_get_base_id(pkey) {
    case EVP_PKEY_RSA:
        return .rsa
    case EVP_PKEY_EC:
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pkey, &name, name.count, &length) == 1 else {
            OpenSSLErrorQueue.clear()
            return .other
        }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256" ? .ecP256 : .other
    default:
        return .other
    }
}

/// Conversions between JWS raw `r ‖ s` and the DER `ECDSA-Sig-Value` OpenSSL produces.
enum ECDSASignature {
    static func rawFromDER(_ der: [UInt8]) throws(CryptoError) -> [UInt8] {
        let sig = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let sig else { throw .drained(.corruptInput, "cannot parse DER ECDSA signature") }
        defer { ECDSA_SIG_free(sig) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        let ok = raw.withUnsafeMutableBufferPointer { buffer in
            BN_bn2binpad(r, buffer.baseAddress, 32) == 32 && BN_bn2binpad(s, buffer.baseAddress! + 32, 32) == 32
        }
        guard ok else { throw .drained(.corruptInput, "ECDSA signature component longer than 32 bytes") }
        return raw
    }

    static func derFromRaw(_ raw: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard raw.count == 64 else { throw CryptoError(.corruptInput, "raw ES256 signature must be 64 bytes") }
        guard let sig = ECDSA_SIG_new() else { throw .drained(.openssl, "ECDSA_SIG_new failed") }
        defer { ECDSA_SIG_free(sig) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            throw .drained(.openssl, "ECDSA_SIG_set0 failed")
        }
        return try derEncode { i2d_ECDSA_SIG(sig, $0) }
    }
}

/// Owns one `EVP_MD_CTX` for one sign/verify.
final class DigestContext {
    let pointer: OpaquePointer
    init() throws(CryptoError) {
        guard let ctx = EVP_MD_CTX_new() else { throw .drained(.openssl, "EVP_MD_CTX_new failed") }
        pointer = ctx
    }
    deinit { EVP_MD_CTX_free(pointer) }

    /// `EVP_DigestSign` of `message` on this initialised context: asked for the length first,
    /// then signed (ES256, RS256 and PS256 differ only in how the context was set up).
    func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        var length = 0
        guard EVP_DigestSign(pointer, nil, &length, message, message.count) == 1 else {
            throw .drained(.openssl, "EVP_DigestSign (size) failed")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(pointer, &signature, &length, message, message.count) == 1 else {
            throw .drained(.openssl, "EVP_DigestSign failed")
        }
        return Array(signature.prefix(length))
    }
}

/// Answers OpenSSL's passphrase prompt from a Swift string instead of the terminal (the
/// default callback would block reading /dev/tty), and records whether it was asked, which is
/// how a wrong password is told apart from a corrupt file.
final class PassphraseSource {
    let password: [UInt8]?
    var wasAsked = false

    init(_ password: String?) {
        self.password = password.map { Array($0.utf8) }
    }

    /// `pem_password_cb`: copies the password into `buffer`, or returns -1 (abort) when none
    /// was given or it does not fit.
    static let callback:
        @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = {
            buffer, size, _, context in
            guard let buffer, let context else { return -1 }
            let source = Unmanaged<PassphraseSource>.fromOpaque(context).takeUnretainedValue()
            source.wasAsked = true
            guard let password = source.password, password.count <= Int(size) else { return -1 }
            password.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress {
                    UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: bytes.count)
                }
            }
            return Int32(password.count)
        }
}
