import Foundation
import TuisongCrypto

/// Standard Webhooks (standardwebhooks.com) symmetric signatures: `v1,` and the base64
/// HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the base64-decoded
/// part of the secret after `whsec_`. Any of the specification's verification libraries
/// accepts what this signs.
///
///     let header = WebhookSignature.header(id: "msg_…", timestamp: 1614265330, body: body, secrets: [secret])
public enum WebhookSignature {
    public static let secretPrefix = "whsec_"

    /// A new secret: `whsec_` and 32 random bytes in base64 (the specification asks for 24 to 64).
    public static func newSecret() -> String {
        secretPrefix + Data(SecureRandom.bytes(32)).base64EncodedString()
    }

    /// The HMAC key of `secret` (`whsec_…`, or its base64 part alone); nil when it is not base64.
    public static func key(of secret: String) -> [UInt8]? {
        let encoded = secret.hasPrefix(secretPrefix) ? String(secret.dropFirst(secretPrefix.count)) : secret
        guard let bytes = Data(base64Encoded: encoded), !bytes.isEmpty else { return nil }
        return Array(bytes)
    }

    /// One signature, `v1,<base64>`.
    public static func sign(id: String, timestamp: Int64, body: [UInt8], key: [UInt8]) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        return "v1," + Data(HMAC.sha256(key: key, message: signed)).base64EncodedString()
    }

    /// The `webhook-signature` header: one signature per key, space-separated (the current
    /// secret's and, during a rotation, the previous one's).
    public static func header(id: String, timestamp: Int64, body: [UInt8], keys: [[UInt8]]) -> String {
        keys.map { sign(id: id, timestamp: timestamp, body: body, key: $0) }.joined(separator: " ")
    }
}
