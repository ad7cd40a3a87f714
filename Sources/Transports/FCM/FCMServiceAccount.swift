import Foundation
import TuisongCore
import TuisongCrypto

/// A Firebase service account, as Google's console downloads it (`type: service_account`):
/// the project messages are sent for, who signs the token request, with which RSA key, and
/// where the token request goes.
public struct FCMServiceAccount: Sendable {
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String?
    /// The PKCS#8 PEM of the RSA key, as the file holds it.
    public var privateKeyPEM: String
    public var tokenURI: String

    /// Google's token endpoint, the `token_uri` of every downloaded account.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    /// Why a file is not a usable service account, in words an operator can act on.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// The same in Chinese, for the console in Chinese.
        public var zh: String
    }

    /// Parses and checks a downloaded service-account JSON: every field FCM needs present,
    /// and the key an RSA private key that loads.
    public init(json: [UInt8]) throws(Invalid) {
        let root: JSONValue
        do {
            root = try JSONValue(parsing: json)
        } catch {
            throw Invalid(description: "the service account is not JSON: \(error)", zh: "服务账号文件不是 JSON：\(error)")
        }
        guard root.objectValue != nil else {
            throw Invalid(description: "the service account is not a JSON object", zh: "服务账号文件不是 JSON 对象")
        }
        func field(_ name: String) throws(Invalid) -> String {
            guard let value = root[name]?.stringValue, !value.isEmpty else {
                throw Invalid(description: "the service account has no \(name)", zh: "服务账号文件缺少 \(name)")
            }
            return value
        }
        guard root["type"]?.stringValue == "service_account" else {
            throw Invalid(
                description: "the JSON is not a service account (type must be \"service_account\")",
                zh: "该 JSON 不是服务账号（type 须为 \"service_account\"）")
        }
        projectID = try field("project_id")
        clientEmail = try field("client_email")
        privateKeyPEM = try field("private_key")
        privateKeyID = root["private_key_id"]?.stringValue
        tokenURI = root["token_uri"]?.stringValue ?? Self.googleTokenURI
        guard tokenURI.hasPrefix("https://") || tokenURI.hasPrefix("http://") else {
            throw Invalid(
                description: "the service account's token_uri is not a URL: \(tokenURI)",
                zh: "服务账号的 token_uri 不是 URL：\(tokenURI)")
        }
        let key: PrivateKey
        do {
            key = try PrivateKey(pem: privateKeyPEM)
        } catch {
            // OpenSSL's error queue says nothing more an operator can act on.
            throw Invalid(
                description: "the service account's private_key does not load: it is not a PEM private key "
                    + "(download the JSON again from Firebase's console)",
                zh: "服务账号的 private_key 无法加载：不是 PEM 私钥（请从 Firebase 控制台重新下载 JSON）")
        }
        guard key.kind == .rsa else {
            throw Invalid(
                description: "the service account's private_key is not an RSA key (FCM signs with RS256)",
                zh: "服务账号的 private_key 不是 RSA 密钥（FCM 使用 RS256 签名）")
        }
    }

    /// The account as JSON again (what is sealed at rest), with `token_uri` made explicit.
    public var json: [UInt8] {
        var object: [String: JSONValue] = [
            "type": "service_account", "project_id": .string(projectID), "client_email": .string(clientEmail),
            "private_key": .string(privateKeyPEM), "token_uri": .string(tokenURI),
        ]
        if let privateKeyID { object["private_key_id"] = .string(privateKeyID) }
        return JSONValue.object(object).serialized()
    }
}
