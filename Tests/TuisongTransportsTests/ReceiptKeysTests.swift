import Foundation
import Testing
import TuisongCrypto

@testable import TuisongTransportKit

/// `ReceiptKeys` keeps each app's derived secret (issue #42: a Xiaomi or OPPO tag cost two HMACs,
/// one of them deriving the same app key again). What it makes must stay what the recipe gives,
/// per app, however the apps' calls interleave and past the kept secrets' bound.
@Suite struct ReceiptKeysTests {
    static let root = Array((0..<32).map { UInt8($0) })

    /// The documented recipe, computed here without `ReceiptKeys`: 16 base64url characters of
    /// HMAC-SHA256 under HMAC-SHA256(root, "tag:app:<id>").
    static func mac(appID: Int64, _ text: String) -> String {
        let secret = HMAC.sha256(key: root, message: Array("tag:app:\(appID)".utf8))
        let mac = HMAC.sha256(key: secret, message: Array(text.utf8))
        return String(
            Data(mac).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "").prefix(16))
    }

    @Test func eachAppsTagsFollowTheRecipeWhateverTheOrderOfCalls() {
        let keys = ReceiptKeys(root: Self.root)
        for round in 0..<3 {
            for appID: Int64 in [7, 8, 7, 9, 8] {
                let messageID = Int64(40 + round)
                #expect(
                    keys.tag(appID: appID, messageID: messageID) == "\(messageID)."
                        + Self.mac(appID: appID, "message:\(messageID)"))
                #expect(
                    keys.tokenTag(appID: appID, messageID: messageID, token: "regid")
                        == "t\(messageID)." + Self.mac(appID: appID, "message:\(messageID):token:regid"))
                #expect(keys.sendTag(appID: appID, sendID: 3) == "s3." + Self.mac(appID: appID, "send:3"))
            }
        }
        // A tag resolves for its own app only, after both apps' secrets are kept.
        let seven = keys.tokenTag(appID: 7, messageID: 42, token: "regid")
        #expect(keys.resolve(tag: seven, appID: 7, token: "regid") == .token(messageID: 42))
        #expect(keys.resolve(tag: seven, appID: 8, token: "regid") == nil)
        #expect(keys.resolve(tag: seven, appID: 7, token: "other") == nil)
        // A copy of the keys (a transport's settings) agrees with the original.
        let copy = keys
        #expect(copy.tag(appID: 9, messageID: 1) == keys.tag(appID: 9, messageID: 1))
    }

    @Test func theKeptSecretsAreBoundedAndStillRightPastTheBound() {
        let keys = ReceiptKeys(root: Self.root)
        let secrets = AppSecrets()
        for appID in 1...Int64(AppSecrets.limit + 10) {
            _ = secrets.secret(appID: appID) { HMAC.sha256(key: Self.root, message: Array("tag:app:\(appID)".utf8)) }
            _ = keys.tag(appID: appID, messageID: 1)
        }
        #expect(secrets.count <= AppSecrets.limit)
        #expect(secrets.count == 10)
        for appID: Int64 in [1, 5, Int64(AppSecrets.limit), Int64(AppSecrets.limit + 10)] {
            #expect(keys.tag(appID: appID, messageID: 1) == "1." + Self.mac(appID: appID, "message:1"))
        }
    }
}
