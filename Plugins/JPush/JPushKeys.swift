import Foundation
import TuisongCore
import TuisongPlugin

/// An app's JPush settings, kept in `App.vendorSettings["jpush"]` as `JPushKeys.settings`
/// declares them: the AppKey every call names in its Basic credentials (unique across apps)
/// and the Master Secret that authenticates it (sealed at rest, never answered).
struct JPushKeys: Sendable, Hashable {
    var appKey: String
    var masterSecret: String

    static let vendor = "jpush"

    /// What `PushProvider.settings` declares: the console's form and the generated
    /// `tuisong app set-jpush --app ID --app-key K --master-secret-env VAR`.
    static let settings: [VendorSetting] = [
        VendorSetting(
            key: "app_key", label: LocalizedText(en: "AppKey", zh: "AppKey"), isUniqueAcrossApps: true,
            cliFlag: "app-key", maxLength: 64, problem: keyProblem),
        VendorSetting(
            key: "master_secret", label: LocalizedText(en: "Master Secret", zh: "Master Secret"), isSecret: true,
            cliFlag: "master-secret", maxLength: 64, problem: keyProblem),
    ]

    /// JPush's AppKeys and Master Secrets are 24 lower-case hex digits; other printable
    /// tokens without `:` (the Basic separator) are taken so an operator may choose their own.
    static func keyProblem(_ text: String) -> String? {
        guard (8...64).contains(text.utf8.count),
            text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") })
        else { return "must be 8–64 printable ASCII characters without spaces or \":\" (JPush's are 24 hex digits)" }
        return nil
    }

    /// The settings of `app`, the secret opened; nil when the app has no (complete) JPush settings.
    static func of(_ app: App, sealer: any SecretSealer) throws -> JPushKeys? {
        guard let settings = app.vendorSettings[vendor], let appKey = settings["app_key"],
            let sealed = settings["master_secret_sealed"]
        else { return nil }
        return JPushKeys(appKey: appKey, masterSecret: try sealer.open(sealed, context: sealingContext(appID: app.id)))
    }

    /// What goes into `App.vendorSettings["jpush"]` (tests and tools; operators use the
    /// generated `tuisong app set-jpush`).
    func settings(appID: Int64, sealer: any SecretSealer) throws -> [String: String] {
        [
            "app_key": appKey,
            "master_secret_sealed": try sealer.seal(masterSecret, context: Self.sealingContext(appID: appID)),
        ]
    }

    /// The context the platform seals declared secrets under: `"<provider>:app:<id>"`.
    static func sealingContext(appID: Int64) -> String { "\(vendor):app:\(appID)" }
}
