import Foundation
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
                return try TLSContext.client(
                    alpn: ["h2"], trustSystemCAs: true, caFile: caFile,
                    caCertificates: extraCACertificates)
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
