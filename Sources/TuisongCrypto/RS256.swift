internal import COpenSSL
import Foundation

/// RS256 (RSASSA-PKCS1-v1_5 over SHA-256, RFC 7518 §3.3): how a Google service account signs
/// the JWT it trades for an access token.
extension PrivateKey {
    /// The signature, as long as the modulus. `wrongKind` unless the key is RSA.
    public func signRS256(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard kind == .rsa else { throw CryptoError(.wrongKind, "RS256 needs an RSA key, this one is \(kind)") }
        let mdctx = try DigestContext()
        // PKCS#1 v1.5 is the RSA default padding of EVP_DigestSign.
        guard EVP_DigestSignInit(mdctx.pointer, nil, EVP_sha256(), nil, evpPKey) == 1 else {
            throw .drained(.openssl, "EVP_DigestSignInit failed")
        }
        return try mdctx.sign(message)
    }
}

extension PublicKey {
    /// Checks an RS256 signature. `false` for any malformed input or a non-RSA key.
    public func verifyRS256(signature: [UInt8], message: [UInt8]) -> Bool {
        defer { OpenSSLErrorQueue.clear() }
        guard kind == .rsa, !signature.isEmpty, let mdctx = try? DigestContext(),
            EVP_DigestVerifyInit(mdctx.pointer, nil, EVP_sha256(), nil, evpPKey) == 1
        else { return false }
        return EVP_DigestVerify(mdctx.pointer, signature, signature.count, message, message.count) == 1
    }
}

extension JWT {
    /// `base64url(header) . base64url(claims) . base64url(RS256 signature)`; `header` and
    /// `claims` are the JSON texts as given (`{"alg":"RS256","typ":"JWT",…}` is the caller's).
    public static func signRS256(header: String, claims: String, key: PrivateKey) throws(CryptoError) -> String {
        let signingInput = Base64URL.encode(header.utf8) + "." + Base64URL.encode(claims.utf8)
        let signature = try key.signRS256(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Checks an RS256 JWT's signature and returns its header and claims JSON bytes.
    /// `corruptInput` for a malformed token, `unsupported` for another `alg`,
    /// `verificationFailed` for a bad signature.
    public static func verifyRS256(_ token: String, publicKey: PublicKey) throws(CryptoError) -> (
        header: [UInt8], claims: [UInt8]
    ) {
        try verifySigned(token, alg: "RS256") { signature, message in
            publicKey.verifyRS256(signature: signature, message: message)
        }
    }

    /// The check RS256 and PS256 share: three base64url parts, the header's `alg` as named, and
    /// `verify(signature, signing input)`; the header and claims JSON bytes.
    static func verifySigned(
        _ token: String, alg expected: String, verify: ([UInt8], [UInt8]) -> Bool
    ) throws(CryptoError) -> (header: [UInt8], claims: [UInt8]) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(String(parts[0])),
            let claims = Base64URL.decode(String(parts[1])), let signature = Base64URL.decode(String(parts[2]))
        else { throw CryptoError(.corruptInput, "a JWT is 3 dot-separated base64url parts") }
        struct Header: Decodable { let alg: String }
        guard let alg = try? JSONDecoder().decode(Header.self, from: Data(header)).alg else {
            throw CryptoError(.corruptInput, "the JWT header is not a JSON object with an alg")
        }
        guard alg == expected else { throw CryptoError(.unsupported, "JWT alg \(alg) is not \(expected)") }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard verify(signature, signingInput) else {
            throw CryptoError(.verificationFailed, "JWT signature does not verify")
        }
        return (header, claims)
    }
}
