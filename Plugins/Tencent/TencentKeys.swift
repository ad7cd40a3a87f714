import Foundation
import TuisongCore
import TuisongPlugin

/// An app's Tencent IM settings, kept in `App.vendorSettings["tencent"]` as the declarations
/// in `TencentKeys.settings` describe: the SDKAppID (how every call names its app), the
/// secret key UserSigs are signed with (sealed), and the administrator identifier that server
/// calls must use.
struct TencentKeys: Sendable, Hashable {
    var sdkAppID: Int64
    var secretKey: String
    var adminIdentifier: String

    static let vendor = "tencent"
    static let defaultAdminIdentifier = "administrator"

    /// What `PushProvider.settings` declares (the console's form, `tuisong app set-tencent`).
    static let settings: [VendorSetting] = [
        VendorSetting(
            key: "sdkappid", label: LocalizedText(en: "SDKAppID", zh: "SDKAppID"), isUniqueAcrossApps: true,
            cliFlag: "sdkappid", maxLength: 20, problem: sdkAppIDProblem),
        VendorSetting(
            key: "secret_key", label: LocalizedText(en: "Secret key (UserSig)", zh: "密钥（UserSig）"), isSecret: true,
            cliFlag: "secret", maxLength: 256, problem: secretKeyProblem),
        VendorSetting(
            key: "admin_identifier", label: LocalizedText(en: "Administrator identifier", zh: "App 管理员帐号"),
            isRequired: false, cliFlag: "admin", defaultValue: defaultAdminIdentifier, maxLength: 32,
            problem: { Account.problem($0) }),
        VendorSetting(
            key: huaweiIntentKey,
            label: LocalizedText(
                en: "Huawei/Honor: page a notification opens (intent URI)", zh: "华为/荣耀：点击通知打开应用内指定页面（intent）"),
            isRequired: false, cliFlag: "huawei-intent", maxLength: 1024, problem: HuaweiIntent.problem),
    ]

    /// The intent Huawei and Honor notifications open, as Tencent's console sets it per app;
    /// unset: they open the app.
    static let huaweiIntentKey = "huawei_intent"

    static func sdkAppID(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (48...57).contains($0) }),
            let value = Int64(text), value > 0
        else { return nil }
        return value
    }

    /// Also refuses leading zeros: the stored text is the number's one spelling, so a call's
    /// SDKAppID finds its app by a point lookup of that text.
    static func sdkAppIDProblem(_ text: String) -> String? {
        sdkAppID(text) == nil || text.hasPrefix("0")
            ? "must be a positive number without leading zeros (Tencent's SDKAppID, e.g. 1400000000)" : nil
    }

    static func secretKeyProblem(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= 256, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "must be 1–256 printable ASCII characters without spaces"
        }
        return nil
    }

    /// The settings of `app`, the key opened; nil when the app has no (complete) Tencent
    /// settings.
    static func of(_ app: App, sealer: any SecretSealer) throws -> TencentKeys? {
        guard let settings = app.vendorSettings[vendor], let text = settings["sdkappid"],
            let sdkAppID = sdkAppID(text), let sealed = settings["secret_key_sealed"]
        else { return nil }
        let secret = try sealer.open(sealed, context: sealingContext(appID: app.id))
        let admin = settings["admin_identifier"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultAdminIdentifier
        return TencentKeys(sdkAppID: sdkAppID, secretKey: secret, adminIdentifier: admin)
    }

    /// What goes into `App.vendorSettings["tencent"]` (tests and tools; operators use the
    /// generated `tuisong app set-tencent`).
    func settings(appID: Int64, sealer: any SecretSealer) throws -> [String: String] {
        [
            "sdkappid": String(sdkAppID),
            "secret_key_sealed": try sealer.seal(secretKey, context: Self.sealingContext(appID: appID)),
            "admin_identifier": adminIdentifier,
        ]
    }

    /// The context the platform seals declared secrets under: `"<provider>:app:<id>"`.
    static func sealingContext(appID: Int64) -> String { "\(vendor):app:\(appID)" }
}

/// Tencent account identifiers (UserID): at most 32 bytes of letters, digits, `_`, `-`, `@`
/// and `.`, as Tencent's account_import accepts them.
enum Account {
    static let maximumLength = 32

    static func problem(_ text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= maximumLength else {
            return "must be 1–\(maximumLength) bytes"
        }
        guard
            text.utf8.allSatisfy({ byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "@"),
                    UInt8(ascii: "."):
                    true
                default: false
                }
            })
        else { return "may hold only letters, digits, _, -, @ and ." }
        return nil
    }

    static func isValid(_ text: String) -> Bool { problem(text) == nil }
}

/// Android intent URIs as Huawei's `click_action.intent` takes them
/// (`intent://host/path#Intent;scheme=app;launchFlags=0x4000000;end`).
enum HuaweiIntent {
    static func problem(_ text: String) -> String? {
        guard text.hasPrefix("intent:"), text.contains("#Intent;"), text.hasSuffix(";end"),
            text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { return "must be an Android intent URI: intent://…#Intent;…;end, printable ASCII" }
        return nil
    }

    /// `intent` with `S.<key>=<value>;` before its `end`, the value encoded as Android's
    /// `Uri.encode` does (`Intent.parseUri` decodes it): a string extra the opened activity
    /// reads with `getStringExtra(key)`.
    static func appending(stringExtra key: String, value: String, to intent: String) -> String {
        guard intent.hasSuffix(";end") else { return intent }
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-!.~'()*".utf8)
        var encoded = ""
        for byte in value.utf8 {
            if unreserved.contains(byte) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return String(intent.dropLast(3)) + "S.\(key)=\(encoded);end"
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
