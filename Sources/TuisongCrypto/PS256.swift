internal import COpenSSL
import Foundation

/// PS256 (RSASSA-PSS over SHA-256, MGF1 with SHA-256, a 32-byte salt; RFC 7518 §3.5): how a
/// service account signs a JWT that its service takes as its bearer token
/// ("SHA256withRSA/PSS").
extension PrivateKey {
    /// The PSS salt length of PS256: the digest's length (RFC 7518 §3.5).
    public static let ps256SaltLength: Int32 = 32

    /// The signature, as long as the modulus; randomised (two signatures of one message
    /// differ). `wrongKind` unless the key is RSA.
    public func signPS256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard kind == .rsa else { throw CryptoError(.wrongKind, "PS256 needs an RSA key, this one is \(kind)") }
        let mdctx = try DigestContext()
        var pctx: OpaquePointer?
        guard EVP_DigestSignInit(mdctx.pointer, &pctx, EVP_sha256(), nil, evpPKey) == 1, let pctx else {
            throw .drained(.openssl, "EVP_DigestSignInit failed")
        }
        guard EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1,
            EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, Self.ps256SaltLength) == 1,
            EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) == 1
        else { throw .drained(.openssl, "cannot set RSA-PSS padding") }
        return try mdctx.sign(message)
    }
}

extension PublicKey {
    /// Checks a PS256 signature (salt length 32, as RFC 7518 fixes it). `false` for any
    /// malformed input, a non-RSA key, or a PKCS#1 v1.5 (RS256) signature.
    public func verifyPS256(signature: [UInt8], message: [UInt8]) -> Bool {
        defer { OpenSSLErrorQueue.clear() }
        var pctx: OpaquePointer?
        guard kind == .rsa, !signature.isEmpty, let mdctx = try? DigestContext(),
            EVP_DigestVerifyInit(mdctx.pointer, &pctx, EVP_sha256(), nil, evpPKey) == 1, let pctx,
            EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1,
            EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, PrivateKey.ps256SaltLength) == 1,
            EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) == 1
        else { return false }
        return EVP_DigestVerify(mdctx.pointer, signature, signature.count, message, message.count) == 1
    }
}

extension JWT {
    /// `base64url(header) . base64url(claims) . base64url(PS256 signature)`; `header` and
    /// `claims` are the JSON texts as given (`{"kid":…,"typ":"JWT","alg":"PS256"}` is the caller's).
    public static func signPS256(header: String, claims: String, key: PrivateKey) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(header.utf8) + "." + Base64URL.encode(claims.utf8)
        let signature = try key.signPS256(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// The header and claims JSON bytes of a compact JWT, without checking anything: for
    /// choosing the key to verify with (by `kid`).
    public static func decodeParts(_ token: String) throws(CryptoError) -> (header: [UInt8], claims: [UInt8]) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(String(parts[0])),
            let claims = Base64URL.decode(String(parts[1]))
        else { throw CryptoError(.corruptInput, "a JWT is 3 dot-separated base64url parts") }
        return (header, claims)
    }

    /// Checks a PS256 JWT's signature and returns its header and claims JSON bytes.
    /// `corruptInput` for a malformed token, `unsupported` for another `alg`,
    /// `verificationFailed` for a bad signature.
    public static func verifyPS256(_ token: String, publicKey: PublicKey) throws(CryptoError) -> (
        header: [UInt8], claims: [UInt8]
    ) {
        try verifySigned(token, alg: "PS256") { signature, message in
            publicKey.verifyPS256(signature: signature, message: message)
        }
    }
}
