internal import COpenSSL
import Foundation

extension Certificate {
    /// Issues a v3 certificate: for tests, a look-alike's throwaway CA and server
    /// certificate, and fake Apple push certificates carrying Apple's push OIDs.
    ///
    /// - Parameters:
    ///   - subjectAltNames: DNS names and IP literals (`"localhost"`, `"127.0.0.1"`, `"::1"`).
    ///   - issuer: the CA certificate and its key; the certificate is signed by that key and
    ///     names that subject as issuer. `nil` makes a self-signed certificate.
    ///   - signingKey: the key that signs a self-signed certificate; it must be the private
    ///     half of `publicKey`. When `issuer` is given the issuer's key signs and this key
    ///     is not used.
    ///   - isCA: `CA:TRUE` with keyCertSign/cRLSign; otherwise a TLS/push leaf with
    ///     digitalSignature/keyEncipherment and serverAuth + clientAuth.
    ///   - extraExtensions: non-critical extensions, each value the DER that goes inside
    ///     `extnValue` (e.g. `[0x05, 0x00]` for Apple's environment markers, or
    ///     ``applePushTopicsExtensionValue(topics:)``).
    ///
    /// Throws `keyMismatch` when a signing key does not belong to its certificate/public key.
    public static func issue(
        subjectCommonName: String, subjectUID: String? = nil, subjectAltNames: [String],
        publicKey: PublicKey, issuer: (Certificate, PrivateKey)?, signingKey: PrivateKey, isCA: Bool,
        notBefore: Date, notAfter: Date, extraExtensions: [(oid: String, value: [UInt8])] = []
    ) throws(CryptoError) -> Certificate {
        let signer: PrivateKey
        if let (issuerCertificate, issuerKey) = issuer {
            guard issuerCertificate.matches(issuerKey) else {
                throw CryptoError(
                    .keyMismatch,
                    "the issuer key does not belong to the issuer certificate \(issuerCertificate.subject)")
            }
            signer = issuerKey
        } else {
            guard signingKey.publicKey == publicKey else {
                throw CryptoError(
                    .keyMismatch, "a self-signed certificate must be signed by the private half of its public key")
            }
            signer = signingKey
        }
        guard notAfter > notBefore else { throw CryptoError(.corruptInput, "notAfter must be later than notBefore") }
        for name in subjectAltNames where name.isEmpty || name.contains(",") || name.contains(":") && !isIPAddress(name)
        {
            throw CryptoError(.corruptInput, "invalid subject alternative name \(name.debugDescription)")
        }

        guard let raw = X509_new() else { throw .drained(.openssl, "X509_new failed") }
        let certificate = Certificate(owning: raw)  // frees on any throw below
        let x509 = certificate.x509

        guard X509_set_version(x509, 2) == 1 else { throw .drained(.openssl, "X509_set_version failed") }
        var serial = SecureRandom.bytes(16)
        serial[0] &= 0x7F  // positive
        serial[0] |= 0x01  // and 16 bytes long
        guard let serialNumber = serial.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, 16, nil) }) else {
            throw .drained(.openssl, "BN_bin2bn failed")
        }
        defer { BN_free(serialNumber) }
        guard BN_to_ASN1_INTEGER(serialNumber, X509_get_serialNumber(x509)) != nil else {
            throw .drained(.openssl, "serial number failed")
        }

        guard let subjectName = X509_get_subject_name(x509) else { throw .drained(.openssl, "no subject name") }
        if let subjectUID { try addEntry(subjectName, nid: NID_userId, value: subjectUID) }
        try addEntry(subjectName, nid: NID_commonName, value: subjectCommonName)
        let issuerName = issuer.map { X509_get_subject_name($0.0.x509) } ?? subjectName
        guard X509_set_issuer_name(x509, issuerName) == 1 else {
            throw .drained(.openssl, "X509_set_issuer_name failed")
        }

        guard ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore.timeIntervalSince1970.rounded(.down))) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter.timeIntervalSince1970.rounded(.down))) != nil
        else { throw .drained(.openssl, "ASN1_TIME_set failed") }
        guard X509_set_pubkey(x509, publicKey.evpPKey) == 1 else { throw .drained(.openssl, "X509_set_pubkey failed") }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.0.x509 ?? x509, x509, nil, nil, 0)
        var standard: [(Int32, String)] = [(NID_subject_key_identifier, "hash")]
        if issuer != nil { standard.append((NID_authority_key_identifier, "keyid:always")) }
        if isCA {
            standard.append((NID_basic_constraints, "critical,CA:TRUE"))
            standard.append((NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"))
        } else {
            standard.append((NID_basic_constraints, "critical,CA:FALSE"))
            let usage =
                publicKey.kind == .rsa ? "critical,digitalSignature,keyEncipherment" : "critical,digitalSignature"
            standard.append((NID_key_usage, usage))
            standard.append((NID_ext_key_usage, "serverAuth,clientAuth"))
        }
        if !subjectAltNames.isEmpty {
            let names = subjectAltNames.map { isIPAddress($0) ? "IP:\($0)" : "DNS:\($0)" }.joined(separator: ",")
            standard.append((NID_subject_alt_name, names))
        }
        for (nid, value) in standard {
            guard let ext = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
                throw .drained(.openssl, "cannot build extension \(String(cString: OBJ_nid2sn(nid))) = \(value)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else { throw .drained(.openssl, "X509_add_ext failed") }
        }
        for (oid, value) in extraExtensions {
            try addRawExtension(x509, oid: oid, value: value)
        }

        guard X509_sign(x509, signer.evpPKey, EVP_sha256()) > 0 else { throw .drained(.openssl, "X509_sign failed") }
        return certificate
    }

    private static func addEntry(_ name: OpaquePointer, nid: Int32, value: String) throws(CryptoError) {
        let bytes = Array(value.utf8)
        guard X509_NAME_add_entry_by_NID(name, nid, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else {
            throw .drained(.corruptInput, "cannot put \(value.debugDescription) into the subject")
        }
    }

    private static func addRawExtension(_ x509: OpaquePointer, oid: String, value: [UInt8]) throws(CryptoError) {
        guard let object = OBJ_txt2obj(oid, 1) else { throw .drained(.corruptInput, "invalid extension OID \(oid)") }
        defer { ASN1_OBJECT_free(object) }
        guard let octets = ASN1_OCTET_STRING_new() else { throw .drained(.openssl, "ASN1_OCTET_STRING_new failed") }
        defer { ASN1_OCTET_STRING_free(octets) }
        guard ASN1_OCTET_STRING_set(octets, value, Int32(value.count)) == 1,
            let ext = X509_EXTENSION_create_by_OBJ(nil, object, 0, octets)
        else { throw .drained(.openssl, "cannot build extension \(oid)") }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(x509, ext, -1) == 1 else { throw .drained(.openssl, "X509_add_ext(\(oid)) failed") }
    }
}

/// Whether `text` is an IPv4 or IPv6 literal (rather than a DNS name).
func isIPAddress(_ text: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
}
