internal import COpenSSL

/// One-shot message digests.
public enum Digest {
    public static func sha256(_ bytes: some Sequence<UInt8>) -> [UInt8] { run(EVP_sha256(), Array(bytes)) }
    /// For legacy vendor signatures (a vendor's request signature) only; never for anything security-relevant.
    public static func md5(_ bytes: some Sequence<UInt8>) -> [UInt8] { run(EVP_md5(), Array(bytes)) }
    /// For legacy vendor signatures and certificate fingerprints only.
    public static func sha1(_ bytes: some Sequence<UInt8>) -> [UInt8] { run(EVP_sha1(), Array(bytes)) }

    private static func run(_ md: OpaquePointer?, _ input: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = input.withUnsafeBytes { inBytes in
            out.withUnsafeMutableBufferPointer {
                EVP_Digest(inBytes.baseAddress, inBytes.count, $0.baseAddress, &length, md, nil)
            }
        }
        // Only fails on allocation failure or a provider without the algorithm: both would
        // make every later operation meaningless, so this is a programming/system fault.
        precondition(ok == 1, "EVP_Digest failed: \(OpenSSLErrorQueue.drain().map(\.text))")
        return Array(out.prefix(Int(length)))
    }
}

/// Keyed hashing.
public enum HMAC {
    /// HMAC-SHA256 (RFC 2104 / 4231); 32 bytes.
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                out.withUnsafeMutableBufferPointer {
                    COpenSSL.HMAC(
                        EVP_sha256(), keyBytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(keyBytes.count),
                        messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count,
                        $0.baseAddress, &length)
                }
            }
        }
        precondition(result != nil, "HMAC failed: \(OpenSSLErrorQueue.drain().map(\.text))")
        return Array(out.prefix(Int(length)))
    }
}

/// Bytes from OpenSSL's CSPRNG.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0)
        var out = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return out }
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        // A CSPRNG that cannot be seeded must stop the process rather than hand out
        // predictable keys, nonces or API keys.
        precondition(ok == 1, "RAND_bytes failed: \(OpenSSLErrorQueue.drain().map(\.text))")
        return out
    }
}
