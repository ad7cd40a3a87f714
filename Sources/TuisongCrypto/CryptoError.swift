internal import COpenSSL
internal import CTuisongShims

/// An error from TuisongCrypto. `code` says what went wrong in terms a caller can act on;
/// `message` says where, and ends with the OpenSSL error queue that was pending at the time
/// (drained, so it never leaks into the next, unrelated call on the same thread).
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// The input is encrypted and the password is missing or wrong.
        case wrongPassword
        /// The bytes are not what they claim to be (bad PEM/DER/base64, truncated, garbage).
        case corruptInput
        /// Well-formed, but the wrong thing: an RSA key where a P-256 key is needed, a file
        /// without a certificate, a JWT with another algorithm.
        case wrongKind
        /// A certificate and a private key that do not belong together.
        case keyMismatch
        /// Outside its validity period.
        case expired
        /// A version, algorithm or format this build does not support.
        case unsupported
        /// A signature or authentication tag did not verify.
        case verificationFailed
        /// OpenSSL failed for a reason outside the caller's control.
        case openssl
        /// The TLS peer refused our certificate with an alert (bad, unknown CA, expired,
        /// revoked, unsupported, access denied, or required and missing).
        case certificateRejectedByPeer
    }

    public let code: Code
    /// Human-readable detail, including OpenSSL's own error strings.
    public let message: String
    /// OpenSSL's packed error codes (`ERR_get_error`), oldest first; empty when OpenSSL
    /// reported nothing.
    public let opensslErrorCodes: [UInt]

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        self.opensslErrorCodes = []
    }

    init(_ code: Code, _ message: String, opensslErrorCodes: [UInt]) {
        self.code = code
        self.message = message
        self.opensslErrorCodes = opensslErrorCodes
    }

    /// The message alone: a description reaches people (an upload's refusal, a connection
    /// test), who need what went wrong, not a Swift type's name; `code` says which kind.
    public var description: String { message }

    /// Builds an error and drains OpenSSL's thread-local error queue into its message.
    static func drained(_ code: Code, _ context: String) -> CryptoError {
        let queue = OpenSSLErrorQueue.drain()
        if queue.isEmpty { return CryptoError(code, context) }
        let text = queue.map(\.text).joined(separator: "; ")
        return CryptoError(code, "\(context) [openssl: \(text)]", opensslErrorCodes: queue.map(\.code))
    }
}

/// OpenSSL's per-thread error queue. Every failing path drains it so a stale entry cannot be
/// blamed on a later call.
enum OpenSSLErrorQueue {
    struct Entry {
        let code: UInt
        let text: String
    }

    static func drain() -> [Entry] {
        var entries: [Entry] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            entries.append(
                Entry(
                    code: code,
                    text: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        return entries
    }

    /// Forgets errors that are expected and handled (e.g. "no start line" at the end of a PEM
    /// bundle), so they do not end up in the next thrown error.
    static func clear() { ERR_clear_error() }
}
