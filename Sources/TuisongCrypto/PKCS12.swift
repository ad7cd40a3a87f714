internal import COpenSSL
internal import CTuisongShims

/// PKCS#12 (`.p12`/`.pfx`) files: how push certificates leave Keychain Access.
public enum PKCS12 {
    /// Reads the certificate, its private key and any CA certificates.
    ///
    /// Throws `corruptInput` for bytes that are not PKCS#12, `wrongPassword` when the MAC
    /// does not verify with `password`, `wrongKind` when the file lacks a certificate or
    /// key, `keyMismatch` when they do not belong together, and `unsupported` for an
    /// algorithm no loaded OpenSSL provider has. Old RC2/3DES exports work: the legacy
    /// provider is loaded on first use.
    public static func parse(_ der: [UInt8], password: String) throws(CryptoError) -> (
        certificate: Certificate, key: PrivateKey, chain: [Certificate]
    ) {
        LegacyAlgorithms.ensureLoaded()
        let p12 = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let p12 else { throw .drained(.corruptInput, "not a PKCS#12 file") }
        defer { PKCS12_free(p12) }

        // OpenSSL itself treats an empty password as either "" or no password at all
        // (files written by other tools differ), so try both before calling it wrong.
        var passwordArgument: String? = password
        if PKCS12_mac_present(p12) == 1 {
            if PKCS12_verify_mac(p12, password, Int32(password.utf8.count)) != 1 {
                if password.isEmpty, PKCS12_verify_mac(p12, nil, 0) == 1 {
                    passwordArgument = nil
                } else {
                    throw .drained(.wrongPassword, "the PKCS#12 password is wrong (MAC verification failed)")
                }
            }
        }
        OpenSSLErrorQueue.clear()

        var pkey: OpaquePointer?
        var cert: OpaquePointer?
        var ca: OpaquePointer?
        guard PKCS12_parse(p12, passwordArgument, &pkey, &cert, &ca) == 1 else {
            let error = CryptoError.drained(.corruptInput, "cannot decode the PKCS#12 contents")
            if error.message.contains("unsupported") {
                throw CryptoError(.unsupported, error.message, opensslErrorCodes: error.opensslErrorCodes)
            }
            throw error
        }
        let key = pkey.map { PrivateKey(owning: $0) }
        let certificate = cert.map { Certificate(owning: $0) }
        var chain: [Certificate] = []
        if let ca {
            for index in 0..<tuisong_openssl_x509_stack_count(ca) {
                if let x509 = tuisong_openssl_x509_stack_value(ca, index) { chain.append(Certificate(retaining: x509)) }
            }
            tuisong_openssl_x509_stack_free_all(ca)
        }
        guard let certificate else { throw CryptoError(.wrongKind, "the PKCS#12 file holds no certificate with a key") }
        guard let key else { throw CryptoError(.wrongKind, "the PKCS#12 file holds no private key") }
        guard certificate.matches(key) else {
            throw CryptoError(.keyMismatch, "the PKCS#12 private key does not belong to \(certificate.subject)")
        }
        return (certificate, key, chain)
    }

    /// Writes a PKCS#12 file (AES-256-CBC, PBKDF2, HMAC-SHA256 MAC: OpenSSL 3's defaults).
    /// `keyMismatch` if `key` is not the certificate's.
    public static func make(
        certificate: Certificate, key: PrivateKey, chain: [Certificate] = [], password: String
    ) throws(CryptoError) -> [UInt8] {
        guard certificate.matches(key) else {
            throw CryptoError(.keyMismatch, "the private key does not belong to \(certificate.subject)")
        }
        guard let stack = tuisong_openssl_x509_stack_new() else { throw .drained(.openssl, "sk_X509_new failed") }
        defer { tuisong_openssl_x509_stack_free_all(stack) }
        for member in chain {
            guard tuisong_openssl_x509_stack_push_up_ref(stack, member.x509) == 1 else {
                throw .drained(.openssl, "sk_X509_push failed")
            }
        }
        guard let p12 = PKCS12_create(password, nil, key.evpPKey, certificate.x509, stack, 0, 0, 0, 0, 0) else {
            throw .drained(.openssl, "PKCS12_create failed")
        }
        defer { PKCS12_free(p12) }
        return try derEncode { i2d_PKCS12(p12, $0) }
    }
}

/// Makes RC2-40 / DES / 3DES available for old PKCS#12 exports (Keychain Access, older
/// `openssl pkcs12`), which OpenSSL 3 only has in its "legacy" provider.
enum LegacyAlgorithms {
    /// Loaded once per process and kept; `retain_fallbacks` keeps the default provider.
    private static let loaded: Bool = {
        let provider = OSSL_PROVIDER_try_load(nil, "legacy", 1)
        OpenSSLErrorQueue.clear()
        return provider != nil
    }()

    static func ensureLoaded() { _ = loaded }
}

/// A certificate bundle in PEM: what operators upload when they have no `.p12`.
public enum PEMBundle {
    /// Reads every certificate and the first private key of `text`. The certificate is the
    /// one the key belongs to (or the first, when there is no key); the others, in file
    /// order, are the chain.
    ///
    /// Throws `wrongKind` without any certificate, `keyMismatch` when the key belongs to
    /// none of them, `wrongPassword` for an encrypted key with a missing/wrong password.
    public static func parse(_ text: String, password: String? = nil) throws(CryptoError) -> (
        certificate: Certificate, key: PrivateKey?, chain: [Certificate]
    ) {
        let blocks = PEMBlock.scan(text)
        var certificates: [Certificate] = []
        for block in blocks where block.isCertificate { certificates.append(try Certificate(block: block)) }
        guard !certificates.isEmpty else { throw CryptoError(.wrongKind, "no CERTIFICATE block in the PEM text") }
        guard let keyBlock = blocks.first(where: \.isPrivateKey) else {
            return (certificates[0], nil, Array(certificates.dropFirst()))
        }
        let key = PrivateKey(owning: try PrivateKey.read(block: keyBlock, password: password))
        guard let leafIndex = certificates.firstIndex(where: { $0.matches(key) }) else {
            throw CryptoError(.keyMismatch, "the private key belongs to none of the \(certificates.count) certificates")
        }
        var chain = certificates
        let leaf = chain.remove(at: leafIndex)
        return (leaf, key, chain)
    }
}
