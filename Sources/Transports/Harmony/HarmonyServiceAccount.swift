import Foundation
import TuisongCore
import TuisongCrypto

/// A Huawei service account for HarmonyOS Push Kit, as the API Console downloads it: the
/// project messages are sent for, the key's id, the RSA key that signs the JWT, and the
/// sub-account the JWT is issued by (docs/reference/harmony.md §2).
public struct HarmonyServiceAccount: Sendable {
    public var projectID: String
    public var keyID: String
    /// The PKCS#8 PEM of the RSA key, as the file holds it. Secret.
    public var privateKeyPEM: String
    public var subAccount: String

    /// The JWT's `aud`, fixed by Huawei (the key file's `token_uri`).
    public static let audience = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    /// How long a JWT is used: Huawei advises an hour.
    public static let lifetimeSeconds: Int64 = 3600

    /// Why a file is not a usable service account, in words an operator can act on (never
    /// quoting the key).
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// The same in Chinese, for the console in Chinese.
        public var zh: String
    }

    public init(projectID: String, keyID: String, privateKeyPEM: String, subAccount: String) {
        self.projectID = projectID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
        self.subAccount = subAccount
    }

    /// Parses and checks a downloaded key file: every field Push Kit needs present, and the key
    /// an RSA private key that loads.
    public init(json: [UInt8]) throws(Invalid) {
        let root: JSONValue
        do {
            root = try JSONValue(parsing: json)
        } catch {
            throw Invalid(description: "the HarmonyOS service account key is not JSON", zh: "HarmonyOS 服务账号密钥文件不是 JSON")
        }
        guard root.objectValue != nil else {
            throw Invalid(
                description: "the HarmonyOS service account key is not a JSON object",
                zh: "HarmonyOS 服务账号密钥文件不是 JSON 对象")
        }
        func field(_ name: String) throws(Invalid) -> String {
            guard let value = root[name]?.stringValue, !value.isEmpty else {
                throw Invalid(
                    description: "the HarmonyOS service account key has no \(name)",
                    zh: "HarmonyOS 服务账号密钥文件缺少 \(name)")
            }
            return value
        }
        projectID = try field("project_id")
        keyID = try field("key_id")
        privateKeyPEM = try field("private_key")
        subAccount = try field("sub_account")
        let key: PrivateKey
        do {
            key = try PrivateKey(pem: privateKeyPEM)
        } catch {
            throw Invalid(
                description: "the HarmonyOS service account's private_key does not load: it is not a PEM private key "
                    + "(download the key file again from the API Console)",
                zh: "HarmonyOS 服务账号的 private_key 无法加载：不是 PEM 私钥（请从 API 控制台重新下载密钥文件）")
        }
        guard key.kind == .rsa else {
            throw Invalid(
                description: "the HarmonyOS service account's private_key is not an RSA key (PS256)",
                zh: "HarmonyOS 服务账号的 private_key 不是 RSA 密钥（PS256）")
        }
    }

    /// The account as JSON again (what is sealed at rest).
    public var json: [UInt8] {
        JSONValue.object([
            "project_id": .string(projectID), "key_id": .string(keyID), "private_key": .string(privateKeyPEM),
            "sub_account": .string(subAccount),
        ]).serialized()
    }

    /// The bearer token of Push Kit v3: `{"kid","typ":"JWT","alg":"PS256"}` .
    /// `{"iss": sub_account, "aud", "iat", "exp"}` signed SHA256withRSA/PSS.
    public func jwt(issuedAt: Date, lifetimeSeconds: Int64 = HarmonyServiceAccount.lifetimeSeconds) throws(CryptoError)
        -> String
    {
        let key = try PrivateKey(pem: privateKeyPEM)
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let header = JSONValue.object(["kid": .string(keyID), "typ": "JWT", "alg": "PS256"]).serializedString
        let claims = JSONValue.object([
            "iss": .string(subAccount), "aud": .string(Self.audience), "iat": .int(iat),
            "exp": .int(iat + lifetimeSeconds),
        ]).serializedString
        return try JWT.signPS256(header: header, claims: claims, key: key)
    }
}
