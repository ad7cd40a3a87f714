import Foundation
import TuisongCrypto

/// Local mode's look-alikes by channel name (the transport registry's names): what each one
/// trusts and which throwaway credential is every app's fallback on it. A transport with a
/// look-alike here runs in local mode; one without is started against its configured URL.
extension APNsMockServer {
    /// The channels whose look-alike this server runs.
    public static let lookAlikeChannels = ["fcm", "huawei", "honor", "xiaomi", "oppo", "vivo", "harmony"]

    /// Teaches the look-alike of `channel` a stored credential (an uploaded FCM account's public
    /// key, a Huawei or Honor client, a Xiaomi, OPPO or vivo app), so local mode delivers with it
    /// as the real service would. False when this server has no look-alike of `channel`.
    @discardableResult
    public func trust(channel: String, vendorAppID: String, clientID: String, secret: [UInt8]) throws -> Bool {
        let text = String(decoding: secret, as: UTF8.self)
        switch channel {
        case "fcm":
            guard let object = try JSONSerialization.jsonObject(with: Data(secret)) as? [String: Any],
                let email = object["client_email"] as? String, let pem = object["private_key"] as? String,
                let project = object["project_id"] as? String
            else { throw LocalLookAlikeError("the FCM service account lacks client_email, private_key or project_id") }
            try trustFCMServiceAccount(
                .init(
                    clientEmail: email, keyID: object["private_key_id"] as? String ?? "",
                    publicKeyPEM: try PrivateKey(pem: pem).publicKey.pem(), projectID: project))
        case "huawei":
            trustHuaweiClient(.init(clientID: clientID, clientSecret: text, appID: vendorAppID))
        case "honor":
            trustHonorClient(.init(clientID: clientID, clientSecret: text, appID: vendorAppID))
        case "xiaomi":
            trustXiaomiApp(.init(appSecret: text, packageName: vendorAppID))
        case "oppo":
            trustOppoApp(.init(appKey: clientID, masterSecret: text))
        case "vivo":
            trustVivoApp(.init(appID: vendorAppID, appKey: clientID, appSecret: text))
        case "harmony":
            guard let object = try JSONSerialization.jsonObject(with: Data(secret)) as? [String: Any],
                let project = object["project_id"] as? String, let keyID = object["key_id"] as? String,
                let pem = object["private_key"] as? String, let subAccount = object["sub_account"] as? String
            else {
                throw LocalLookAlikeError(
                    "the HarmonyOS service account lacks project_id, key_id, private_key or sub_account")
            }
            try trustHarmonyServiceAccount(
                .init(
                    projectID: project, keyID: keyID, subAccount: subAccount,
                    publicKeyPEM: try PrivateKey(pem: pem).publicKey.pem()))
        default:
            return false
        }
        return true
    }
}

public struct LocalLookAlikeError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

extension APNsMockLocalSetup {
    /// The receipt id local mode's vivo look-alike stands for: as if the operator had added the
    /// gateway's receipt address in vivo's console (the look-alike posts to each app's).
    public static let vivoReceiptID = "tuisong-local"

    /// The options of the look-alike's own credential of `channel` (vivo's receipt id).
    public func fallbackCredentialOptions(channel: String) -> [String: String] {
        channel == "vivo" ? ["receipt_id": Self.vivoReceiptID] : [:]
    }

    /// The look-alike's own credential of `channel` (its token endpoint at `baseURL` where the
    /// credential names one), every app's fallback in local mode; nil when there is no look-alike.
    public func fallbackCredential(channel: String, baseURL: String) -> (
        vendorAppID: String, clientID: String, secret: [UInt8]
    )? {
        switch channel {
        case "fcm":
            (
                fcmServiceAccount.projectID, fcmServiceAccount.clientEmail,
                fcmServiceAccountJSON(tokenURI: baseURL + "/token")
            )
        case "huawei": (huaweiClient.appID, huaweiClient.clientID, Array(huaweiClient.clientSecret.utf8))
        case "honor": (honorClient.appID, honorClient.clientID, Array(honorClient.clientSecret.utf8))
        case "xiaomi": (xiaomiApp.packageName, "0", Array(xiaomiApp.appSecret.utf8))
        case "oppo": ("0", oppoApp.appKey, Array(oppoApp.masterSecret.utf8))
        case "vivo": (vivoApp.appID, vivoApp.appKey, Array(vivoApp.appSecret.utf8))
        case "harmony":
            (harmonyServiceAccount.projectID, harmonyServiceAccount.subAccount, harmonyServiceAccountJSON())
        default: nil
        }
    }
}
