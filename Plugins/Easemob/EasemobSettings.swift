import Foundation
import TuisongCore
import TuisongPlugin

/// An app's Easemob settings, from `App.vendorSettings["easemob"]`: the `org` and `app_name`
/// of its URLs (`/{org}/{app_name}/…`), the client id and secret of `POST token` (the secret
/// sealed), and the time zone its users' daily do-not-disturb hours are in.
struct EasemobAppSettings: Sendable, Hashable {
    var org: String
    var appName: String
    var clientID: String
    var clientSecret: String
    var timeZone: TimeZone
    /// Which setting of the client secret this is: its sealed form, new each time the secret is
    /// set to another value (`AdminVendorSettings` keeps the sealed form of a secret entered
    /// again unchanged). Tokens are tied to it, so a rotation revokes them for good, even when
    /// an old secret is set again later.
    var clientSecretRotation: String = ""
    /// Which setting of the client id this is: a random marker the platform stores each time
    /// the client id is set to another value (`VendorSetting.isRotationTracked`), empty for a
    /// client id set before markers were recorded. App tokens are tied to it, so a client id
    /// changed and changed back does not revive the tokens issued before.
    var clientIDRotation: String = ""

    static let vendor = "easemob"
    static let defaultTimeZone = "+08:00"

    /// The declarations the console, the admin API and `tuisong app set-easemob` derive from.
    ///
    /// `org` and `app_name` are unique *together* (two apps may share an org): see
    /// `EasemobProvider.settingsUniqueTogether`. A pair two apps claim anyway (written to the
    /// database by hand) is refused, never guessed (`EasemobDirectory`).
    static let declarations: [VendorSetting] = [
        VendorSetting(
            key: "org", label: LocalizedText(en: "Org name", zh: "Org Name（组织名）"), maxLength: 64,
            problem: { isName($0) ? nil : "must be 1–64 letters, digits, - _ or ." }),
        VendorSetting(
            key: "app_name", label: LocalizedText(en: "App name", zh: "App Name（应用名）"), cliFlag: "app-name",
            maxLength: 64, problem: { isName($0) ? nil : "must be 1–64 letters, digits, - _ or ." }),
        VendorSetting(
            key: "client_id", label: LocalizedText(en: "Client ID", zh: "Client ID"), maxLength: 256,
            isRotationTracked: true, problem: { isPrintable($0) ? nil : "must be printable ASCII without spaces" }),
        VendorSetting(
            key: "client_secret", label: LocalizedText(en: "Client secret", zh: "Client Secret"), isSecret: true,
            cliFlag: "client-secret", maxLength: 256,
            problem: { isPrintable($0) ? nil : "must be printable ASCII without spaces" }),
        VendorSetting(
            key: "time_zone",
            label: LocalizedText(en: "Time zone of do-not-disturb hours", zh: "免打扰时段的时区"),
            isRequired: false, cliFlag: "time-zone", defaultValue: defaultTimeZone, maxLength: 64,
            problem: { parseTimeZone($0) == nil ? "must be an offset like +08:00 or a zone like Asia/Shanghai" : nil }),
    ]

    /// The settings of `app`, the secret opened; nil when the app has no Easemob settings.
    static func of(_ app: App, sealer: any SecretSealer) throws -> EasemobAppSettings? {
        guard let settings = app.vendorSettings[vendor], let org = settings["org"], let appName = settings["app_name"],
            let clientID = settings["client_id"], let sealed = settings["client_secret_sealed"]
        else { return nil }
        let secret = try sealer.open(sealed, context: sealingContext(appID: app.id))
        let zone = settings["time_zone"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultTimeZone
        guard let timeZone = parseTimeZone(zone) else {
            throw EasemobError.internalError("the app's Easemob time_zone \(zone) is not a time zone")
        }
        return EasemobAppSettings(
            org: org, appName: appName, clientID: clientID, clientSecret: secret, timeZone: timeZone,
            clientSecretRotation: sealed, clientIDRotation: settings["client_id_rotation"] ?? "")
    }

    /// The (org, app_name) pair of `app` without opening its secret; nil when not configured.
    static func pair(of app: App) -> EasemobPair? {
        guard let settings = app.vendorSettings[vendor], let org = settings["org"], let appName = settings["app_name"],
            settings["client_id"] != nil, settings["client_secret_sealed"] != nil
        else { return nil }
        return EasemobPair(org: org, appName: appName)
    }

    /// What goes into `App.vendorSettings["easemob"]`, the secret sealed.
    func stored(appID: Int64, sealer: any SecretSealer, timeZoneText: String? = nil) throws -> [String: String] {
        var stored = [
            "org": org, "app_name": appName, "client_id": clientID,
            "client_secret_sealed": try sealer.seal(clientSecret, context: Self.sealingContext(appID: appID)),
        ]
        if let timeZoneText { stored["time_zone"] = timeZoneText }
        return stored
    }

    /// The sealing context the platform uses for declared secrets: `"<provider>:app:<id>"`.
    static func sealingContext(appID: Int64) -> String { "easemob:app:\(appID)" }

    /// `+08:00`, `-05:30`, `+8`, `UTC+8`, `UTC`, or an IANA zone (`Asia/Shanghai`).
    static func parseTimeZone(_ text: String) -> TimeZone? {
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        if rest.uppercased() == "UTC" || rest.uppercased() == "GMT" || rest == "Z" {
            return TimeZone(secondsFromGMT: 0)
        }
        if rest.uppercased().hasPrefix("UTC") || rest.uppercased().hasPrefix("GMT") { rest = rest.dropFirst(3) }
        if let sign = rest.first, sign == "+" || sign == "-" {
            let digits = rest.dropFirst()
            let pieces = digits.split(separator: ":", omittingEmptySubsequences: false)
            guard (1...2).contains(pieces.count),
                pieces.allSatisfy({ !$0.isEmpty && $0.count <= 2 && $0.allSatisfy(\.isASCII) }),
                let hours = Int(pieces[0]), hours <= 14
            else { return nil }
            let minutes = pieces.count == 2 ? Int(pieces[1]) : 0
            guard let minutes, minutes < 60 else { return nil }
            let seconds = (hours * 3600 + minutes * 60) * (sign == "-" ? -1 : 1)
            return TimeZone(secondsFromGMT: seconds)
        }
        guard rest.contains("/"), let zone = TimeZone(identifier: String(rest)) else { return nil }
        return zone
    }

    static func isName(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 64
            && value.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                    true
                default: false
                }
            }
    }

    static func isPrintable(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}

/// The `/{org}/{app_name}` of an app's Easemob URLs. Easemob treats both case-insensitively
/// (the app key `org#app`), so the pair is compared lower-cased.
struct EasemobPair: Sendable, Hashable {
    var org: String
    var appName: String

    init(org: String, appName: String) {
        self.org = org.lowercased()
        self.appName = appName.lowercased()
    }
}
