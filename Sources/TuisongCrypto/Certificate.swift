internal import COpenSSL
internal import CTuisongShims
import Foundation

/// An X.509 certificate: a TLS client or server certificate (an Apple push certificate among
/// them, with its extensions below), or a CA.
/// Immutable once loaded.
public final class Certificate: @unchecked Sendable, Equatable, CustomStringConvertible {
    // @unchecked Sendable: the X509 is never mutated after init; OpenSSL 3 allows concurrent
    // read-only use of one X509 (its lazily computed extension cache is lock-protected).

    package let x509: OpaquePointer

    /// Takes ownership of one reference to `x509`.
    init(owning x509: OpaquePointer) {
        self.x509 = x509
    }

    /// Takes a new reference to `x509`, which the caller keeps owning.
    package convenience init(retaining x509: OpaquePointer) {
        X509_up_ref(x509)
        self.init(owning: x509)
    }

    deinit { X509_free(x509) }

    /// Loads the first `CERTIFICATE` block of `pem`.
    public convenience init(pem: String) throws(CryptoError) {
        guard let block = PEMBlock.scan(pem).first(where: \.isCertificate) else {
            throw CryptoError(.wrongKind, "no CERTIFICATE block in the PEM text")
        }
        try self.init(block: block)
    }

    convenience init(block: PEMBlock) throws(CryptoError) {
        let bio = try MemoryBIO(bytes: Array(block.text.utf8))
        let x509 =
            block.label == "TRUSTED CERTIFICATE"
            ? PEM_read_bio_X509_AUX(bio.pointer, nil, nil, nil) : PEM_read_bio_X509(bio.pointer, nil, nil, nil)
        guard let x509 else { throw .drained(.corruptInput, "cannot parse the \(block.label) block") }
        self.init(owning: x509)
    }

    /// Loads a DER certificate.
    public convenience init(der: [UInt8]) throws(CryptoError) {
        let x509 = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let x509 else { throw .drained(.corruptInput, "cannot parse DER certificate") }
        self.init(owning: x509)
    }

    /// Every `CERTIFICATE` block of `pem`, in order. `wrongKind` if there is none.
    public static func parseChain(pem: String) throws(CryptoError) -> [Certificate] {
        let blocks = PEMBlock.scan(pem).filter(\.isCertificate)
        guard !blocks.isEmpty else { throw CryptoError(.wrongKind, "no CERTIFICATE block in the PEM text") }
        var chain: [Certificate] = []
        for block in blocks { chain.append(try Certificate(block: block)) }
        return chain
    }

    // MARK: Names

    /// The subject as one RFC 2253 line (`UID=com.example.app,CN=Apple Push Services: com.example.app,…`),
    /// non-ASCII kept as UTF-8.
    public var subject: String { Certificate.oneLine(X509_get_subject_name(x509)) }

    /// The issuer in the same format as `subject`.
    public var issuer: String { Certificate.oneLine(X509_get_issuer_name(x509)) }

    /// The subject's common name (the last CN if there are several).
    public var commonName: String? { Certificate.lastEntry(X509_get_subject_name(x509), nid: NID_commonName) }

    /// The subject's `UID` (0.9.2342.19200300.100.1.1); Apple puts the bundle id there.
    public var userID: String? { Certificate.lastEntry(X509_get_subject_name(x509), nid: NID_userId) }

    public var description: String { "Certificate(\(subject), notAfter: \(notAfter))" }

    private static func oneLine(_ name: OpaquePointer?) -> String {
        guard let name, let bio = try? MemoryBIO() else { return "" }
        X509_NAME_print_ex(bio.pointer, name, 0, tuisong_openssl_name_flags_rfc2253_utf8())
        return bio.readString()
    }

    private static func lastEntry(_ name: OpaquePointer?, nid: Int32) -> String? {
        guard let name else { return nil }
        var found: String?
        var index: Int32 = -1
        while true {
            index = X509_NAME_get_index_by_NID(name, nid, index)
            if index < 0 { break }
            guard let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else {
                continue
            }
            var utf8: UnsafeMutablePointer<UInt8>?
            let length = ASN1_STRING_to_UTF8(&utf8, data)
            if length >= 0, let utf8 {
                found = String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
                tuisong_openssl_free(utf8)
            }
        }
        OpenSSLErrorQueue.clear()
        return found
    }

    // MARK: Validity

    public var notBefore: Date { Certificate.date(X509_get0_notBefore(x509)) }
    public var notAfter: Date { Certificate.date(X509_get0_notAfter(x509)) }

    /// Whether `date` falls inside `notBefore…notAfter`.
    public func isValid(at date: Date) -> Bool { date >= notBefore && date <= notAfter }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else {
            OpenSSLErrorQueue.clear()
            return Date(timeIntervalSince1970: 0)
        }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    // MARK: Apple push extensions

    /// Apple's "topics" extension of universal push certificates: a SEQUENCE of topic
    /// strings, each followed by a SEQUENCE naming its kinds (`app`, `voip`, `complication`).
    public static let applePushTopicsOID = "1.2.840.113635.100.6.3.6"
    /// Present in certificates valid for the development (sandbox) environment.
    public static let applePushDevelopmentOID = "1.2.840.113635.100.6.3.1"
    /// Present in certificates valid for the production environment.
    public static let applePushProductionOID = "1.2.840.113635.100.6.3.2"

    /// The topics this push certificate may send to: the entries of Apple's topics extension,
    /// or, for older single-topic certificates, the subject `UID`. Empty for other certificates.
    public var applePushTopics: [String] {
        if let value = extensionValue(oid: Certificate.applePushTopicsOID), let children = DER.sequenceChildren(value) {
            let topics = children.compactMap { child -> String? in
                switch child.tag {
                case DER.utf8StringTag, DER.printableStringTag, DER.ia5StringTag:
                    return String(decoding: child.content, as: UTF8.self)
                default:
                    return nil
                }
            }
            if !topics.isEmpty { return topics }
        }
        return userID.map { [$0] } ?? []
    }

    /// `"sandbox"` and/or `"production"`, from Apple's environment extensions.
    public var applePushEnvironments: Set<String> {
        var environments: Set<String> = []
        if extensionValue(oid: Certificate.applePushDevelopmentOID) != nil { environments.insert("sandbox") }
        if extensionValue(oid: Certificate.applePushProductionOID) != nil { environments.insert("production") }
        return environments
    }

    /// The DER value (the content of `extnValue`) of the extension `oid`, or nil.
    public func extensionValue(oid: String) -> [UInt8]? {
        defer { OpenSSLErrorQueue.clear() }
        guard let object = OBJ_txt2obj(oid, 1) else { return nil }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(x509, object, -1)
        guard index >= 0, let ext = X509_get_ext(x509, index), let data = X509_EXTENSION_get_data(ext) else {
            return nil
        }
        let length = Int(ASN1_STRING_length(data))
        guard length > 0, let bytes = ASN1_STRING_get0_data(data) else { return [] }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }

    /// The DER value of Apple's topics extension for `topics`, as Apple writes it: each
    /// topic followed by its kinds. The bundle id gets `app`, `.voip` gets `voip`,
    /// `.complication` gets `complication`; other topics get `app`.
    public static func applePushTopicsExtensionValue(topics: [String]) -> [UInt8] {
        var children: [[UInt8]] = []
        for topic in topics {
            let kind =
                topic.hasSuffix(".voip") ? "voip" : topic.hasSuffix(".complication") ? "complication" : "app"
            children.append(DER.utf8String(topic))
            children.append(DER.sequence([DER.utf8String(kind)]))
        }
        return DER.sequence(children)
    }

    // MARK: Keys and encodings

    public var publicKey: PublicKey {
        guard let pkey = X509_get_pubkey(x509) else {
            // A certificate OpenSSL parsed always has a key it can decode unless the algorithm
            // is unknown to every loaded provider.
            preconditionFailure("certificate public key is undecodable: \(OpenSSLErrorQueue.drain().map(\.text))")
        }
        return PublicKey(owning: pkey)
    }

    /// Whether `key` is the private half of this certificate's public key.
    public func matches(_ key: PrivateKey) -> Bool {
        defer { OpenSSLErrorQueue.clear() }
        return X509_check_private_key(x509, key.evpPKey) == 1
    }

    public func pem() -> String {
        guard let bio = try? MemoryBIO(), PEM_write_bio_X509(bio.pointer, x509) == 1 else {
            preconditionFailure("PEM_write_bio_X509 failed: \(OpenSSLErrorQueue.drain().map(\.text))")
        }
        return bio.readString()
    }

    public func der() -> [UInt8] {
        do {
            return try derEncode { i2d_X509(x509, $0) }
        } catch {
            preconditionFailure("i2d_X509 failed: \(error)")
        }
    }

    /// SHA-256 of the DER encoding, lower-case hex.
    public var sha256Fingerprint: String { Hex.encode(Digest.sha256(der())) }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { X509_cmp(lhs.x509, rhs.x509) == 0 }
}
