import Foundation
import Synchronization
public import TuisongCrypto

/// How a pool proves who it is to APNs. One pool per credential and environment: a
/// connection never carries two teams' tokens or two certificates.
public enum APNsCredentialMaterial: Sendable {
    /// Token authentication: the `.p8` signing key, its 10-character key id and the team id.
    case token(key: PrivateKey, keyID: String, teamID: String)
    /// Certificate authentication: the push certificate, its key and intermediate CAs, sent
    /// as the TLS client certificate.
    case certificate(certificate: Certificate, key: PrivateKey, chain: [Certificate])

    /// Loads a `.p8` (PKCS#8 PEM) token signing key.
    public static func token(p8PEM: String, keyID: String, teamID: String) throws(CryptoError)
        -> APNsCredentialMaterial
    {
        .token(key: try PrivateKey(pem: p8PEM), keyID: keyID, teamID: teamID)
    }

    /// Loads a push certificate exported as `.p12` from Keychain Access.
    public static func certificate(p12: [UInt8], password: String) throws(CryptoError)
        -> APNsCredentialMaterial
    {
        let parsed = try PKCS12.parse(p12, password: password)
        return .certificate(certificate: parsed.certificate, key: parsed.key, chain: parsed.chain)
    }

    /// Loads a push certificate from PEM text holding the certificate, its private key and
    /// optionally intermediate CAs.
    public static func certificate(pem: String, password: String? = nil) throws(CryptoError)
        -> APNsCredentialMaterial
    {
        let parsed = try PEMBundle.parse(pem, password: password)
        guard let key = parsed.key else {
            throw CryptoError(.wrongKind, "the PEM text has a certificate but no private key")
        }
        return .certificate(certificate: parsed.certificate, key: key, chain: parsed.chain)
    }

    /// A short description for logs: never key material.
    var summary: String {
        switch self {
        case .token(_, let keyID, let teamID): "token key \(keyID) team \(teamID)"
        case .certificate(let certificate, _, _): "certificate \(certificate.subject)"
        }
    }

    /// The client TLS context: ALPN `h2`, TLS ≥ 1.2, system CAs plus `caFile` and
    /// `extraCACertificates`, and for certificate auth the client identity.
    func makeTLSContext(caFile: String?, extraCACertificates: [Certificate])
        throws(APNsTransportError) -> TLSContext
    {
        do {
            switch self {
            case .token:
                return try Self.tokenContext(caFile: caFile, extraCACertificates: extraCACertificates)
            case .certificate(let certificate, let key, let chain):
                return try TLSContext.client(
                    alpn: ["h2"], trustSystemCAs: true, caFile: caFile,
                    caCertificates: extraCACertificates, clientCertificate: certificate,
                    clientKey: key, clientChain: chain)
            }
        } catch {
            let code: APNsTransportError.Code =
                error.code == .keyMismatch || error.code == .wrongKind
                ? .credentialFailed : .tlsFailed
            throw APNsTransportError(code, "TLS context: \(error.message)")
        }
    }
}

extension APNsCredentialMaterial {
    private struct TrustKey: Hashable {
        var caFile: String?
        var extraCertificates: [String]
    }

    /// One TLS context per trust set for every token credential: without a client certificate
    /// the contexts of two pools are the same, and building one loads and parses the system CA
    /// store (about 30 ms here), which the first push through each new pool waited for.
    private static let tokenContexts = Mutex<[TrustKey: TLSContext]>([:])

    static func tokenContext(caFile: String?, extraCACertificates: [Certificate]) throws(CryptoError) -> TLSContext {
        let key = TrustKey(caFile: caFile, extraCertificates: extraCACertificates.map(\.sha256Fingerprint))
        if let context = tokenContexts.withLock({ $0[key] }) { return context }
        let context = try TLSContext.client(
            alpn: ["h2"], trustSystemCAs: true, caFile: caFile, caCertificates: extraCACertificates)
        return tokenContexts.withLock { contexts in
            if let existing = contexts[key] { return existing }
            contexts[key] = context
            return context
        }
    }

    /// Builds the token credentials' TLS context ahead of the first pool (a gateway starting).
    public static func prepareTokenContext(caFile: String?, extraCACertificates: [Certificate]) {
        _ = try? tokenContext(caFile: caFile, extraCACertificates: extraCACertificates)
    }
}
