internal import COpenSSL

/// Password storage for the console's admin login: PBKDF2-HMAC-SHA256 with a random salt,
/// encoded `pbkdf2-sha256$<iterations>$<salt base64url>$<hash base64url>`.
public enum PasswordHash {
    /// OWASP's 2023 figure for PBKDF2-HMAC-SHA256; ~0.1 s per login on this class of machine,
    /// which also slows guessing.
    public static let defaultIterations = 600_000

    public static func make(_ password: String, iterations: Int = defaultIterations) throws -> String {
        let salt = SecureRandom.bytes(16)
        let hash = try derive(password, salt: salt, iterations: iterations)
        return "pbkdf2-sha256$\(iterations)$\(Base64URL.encode(salt))$\(Base64URL.encode(hash))"
    }

    /// Constant-time comparison against a stored hash; `false` for anything malformed.
    public static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "pbkdf2-sha256", let iterations = Int(parts[1]),
            (1...10_000_000).contains(iterations), let salt = Base64URL.decode(String(parts[2])),
            let expected = Base64URL.decode(String(parts[3])), expected.count == 32,
            let actual = try? derive(password, salt: salt, iterations: iterations)
        else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(actual, expected) { difference |= a ^ b }
        return difference == 0
    }

    static func derive(_ password: String, salt: [UInt8], iterations: Int) throws -> [UInt8] {
        let passwordBytes = Array(password.utf8)
        var output = [UInt8](repeating: 0, count: 32)
        let ok = passwordBytes.withUnsafeBufferPointer { passwordBuffer in
            passwordBuffer.withMemoryRebound(to: CChar.self) { passwordChars in
                PKCS5_PBKDF2_HMAC(
                    passwordChars.baseAddress, Int32(passwordBytes.count), salt, Int32(salt.count), Int32(iterations),
                    EVP_sha256(), Int32(output.count), &output)
            }
        }
        guard ok == 1 else { throw CryptoError.drained(.openssl, "PKCS5_PBKDF2_HMAC") }
        return output
    }
}
