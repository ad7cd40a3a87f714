import Foundation

/// JSON Web Tokens signed with ES256 (ECDSA P-256, SHA-256), compact serialisation: a key id in
/// the header, an issuer and an issue time in the claims (the shape Apple's token authentication
/// takes), and the RS256 service-account assertions elsewhere in this module.
public enum JWT {
    /// What a verified (or merely decoded) ES256 token says.
    public struct Token: Sendable, Hashable {
        public var alg: String
        /// Key id: which of the issuer's keys signed it.
        public var kid: String?
        /// Issuer: who signed it.
        public var iss: String?
        /// Issued-at, epoch seconds.
        public var iat: Int64?

        public init(alg: String, kid: String?, iss: String?, iat: Int64?) {
            self.alg = alg
            self.kid = kid
            self.iss = iss
            self.iat = iat
        }

        public var issuedAt: Date? { iat.map { Date(timeIntervalSince1970: TimeInterval($0)) } }
    }

    /// `base64url({"alg":"ES256","kid":keyID}) . base64url({"iss":issuer,"iat":seconds}) . base64url(r‖s)`.
    ///
    ///     let jwt = try JWT.es256Token(keyID: "ABC123DEFG", issuer: "DEF123GHIJ",
    ///                              issuedAt: clock.now, key: p8Key)
    public static func es256Token(keyID: String, issuer: String, issuedAt: Date, key: PrivateKey)
        throws(CryptoError) -> String
    {
        let header = "{\"alg\":\"ES256\",\"kid\":\(jsonString(keyID))}"
        let seconds = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let claims = "{\"iss\":\(jsonString(issuer)),\"iat\":\(seconds)}"
        let signingInput = Base64URL.encode(header.utf8) + "." + Base64URL.encode(claims.utf8)
        let signature = try key.signES256(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Checks the ES256 signature with `publicKey`, then returns header and claims.
    /// `corruptInput` for a malformed token, `unsupported` for another `alg`,
    /// `verificationFailed` for a bad signature.
    public static func verifyES256(_ token: String, publicKey: PublicKey) throws(CryptoError) -> Token {
        let (decoded, signingInput, signature) = try split(token)
        guard decoded.alg == "ES256" else { throw CryptoError(.unsupported, "JWT alg \(decoded.alg) is not ES256") }
        guard publicKey.verifyES256(signature: signature, message: Array(signingInput.utf8)) else {
            throw CryptoError(.verificationFailed, "JWT signature does not verify")
        }
        return decoded
    }

    /// Header and claims WITHOUT checking the signature: only for choosing which key to verify
    /// with (a verifier that trusts several keys looks one up by `kid`/`iss`).
    public static func decodeUnverified(_ token: String) throws(CryptoError) -> Token {
        try split(token).token
    }

    private struct Header: Decodable {
        let alg: String
        let kid: String?
    }

    private struct Claims: Decodable {
        let iss: String?
        let iat: Int64?
    }

    private static func split(_ token: String) throws(CryptoError) -> (
        token: Token, signingInput: Substring, signature: [UInt8]
    ) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw CryptoError(.corruptInput, "a JWT has 3 dot-separated parts, this has \(parts.count)")
        }
        guard let headerBytes = Base64URL.decode(String(parts[0])), let claimBytes = Base64URL.decode(String(parts[1])),
            let signature = Base64URL.decode(String(parts[2]))
        else { throw CryptoError(.corruptInput, "a JWT part is not base64url") }
        let header: Header
        let claims: Claims
        do {
            header = try JSONDecoder().decode(Header.self, from: Data(headerBytes))
            claims = try JSONDecoder().decode(Claims.self, from: Data(claimBytes))
        } catch {
            throw CryptoError(.corruptInput, "JWT header or claims are not the expected JSON: \(error)")
        }
        let signingInput = token[parts[0].startIndex..<parts[1].endIndex]
        return (Token(alg: header.alg, kid: header.kid, iss: claims.iss, iat: claims.iat), signingInput, signature)
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    static func jsonString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
