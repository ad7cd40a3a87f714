import Foundation
import TuisongCore
import TuisongCrypto
import TuisongPlugin

/// An app's Baidu keys, kept in `App.vendorSettings["baidu"]`: the `apikey` (public, unique
/// across apps, how every request names its app), the secret key sealed under the master
/// key, and optionally Baidu's numeric app id (what `bind` answers as `app_id`).
///
///     app.vendorSettings["baidu"] = try BaiduKeys(apiKey: "Ljc710pzAa99GULCo8y48NvB",
///         secretKey: secret, baiduAppID: "1234567").settings(appID: app.id, sealer: sealer)
public struct BaiduKeys: Sendable, Hashable {
    public var apiKey: String
    public var secretKey: String
    public var baiduAppID: String?

    /// Checks the values against `BaiduProvider.settings`; throws a `BaiduKeys.InvalidValue`
    /// naming the bad one.
    public init(apiKey: String, secretKey: String, baiduAppID: String? = nil) throws {
        for (key, value) in [("apikey", apiKey), ("secret_key", secretKey), ("app_id", baiduAppID)] {
            guard let value, let setting = BaiduProvider.setting(key) else { continue }
            if value.isEmpty {
                throw InvalidValue(field: key, message: "must not be empty")
            }
            if let problem = setting.rejection(of: value) {
                throw InvalidValue(field: key, message: problem)
            }
        }
        self.apiKey = apiKey
        self.secretKey = secretKey
        self.baiduAppID = baiduAppID
    }

    /// A value `init` refused.
    public struct InvalidValue: Error, Sendable, CustomStringConvertible {
        public var field: String
        public var message: String
        public var description: String { "\(field) \(message)" }
    }

    static let vendor = "baidu"
    /// The app's Android push service (`fcm`, `huawei`, `honor`): where an Android device
    /// bound without naming its own service is reached. Optional.
    static let androidChannel = "android_channel"
    /// The services a Baidu Android device may be sent through: the declared Android-style
    /// channels but HarmonyOS NEXT's, whose phones run no Android app (and whose devices the
    /// store does not keep yet, #31).
    static var androidChannels: [PushChannel] { PushChannel.android.filter { $0 != .harmony } }

    /// What goes into `App.vendorSettings["baidu"]`; the secret key only sealed.
    public func settings(appID: Int64, sealer: any SecretSealer) throws -> [String: String] {
        var settings = [
            "apikey": apiKey,
            "secret_key_sealed": try sealer.seal(secretKey, context: Self.sealingContext(appID: appID)),
        ]
        if let baiduAppID { settings["app_id"] = baiduAppID }
        return settings
    }

    /// The keys of `app`, the secret opened; nil when the app has no Baidu keys.
    public static func of(_ app: App, sealer: any SecretSealer) throws -> BaiduKeys? {
        guard let settings = app.vendorSettings[vendor], let apiKey = settings["apikey"],
            let sealed = settings["secret_key_sealed"]
        else { return nil }
        let secret = try sealer.open(sealed, context: sealingContext(appID: app.id))
        return try BaiduKeys(apiKey: apiKey, secretKey: secret, baiduAppID: settings["app_id"])
    }

    /// Binds a sealed secret to its app: copied into another app's settings it does not open.
    static func sealingContext(appID: Int64) -> String { "baidu:app:\(appID)" }

    public static func isValidAPIKey(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 64
            && value.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
    }
}

/// Baidu's identifiers.
enum BaiduIDs {
    /// A device's `channel_id`: derived from app and token, so re-binding the same token
    /// always yields the same id (also after an unbind deleted the device). 19 digits, below
    /// 2^63 so clients that parse it as a signed 64-bit number (the Java SDK) can.
    static func channelID(appID: Int64, token: DeviceToken) -> String {
        derived("tuisong-baidu-channel:\(appID):\(token.hex)")
    }

    /// A device's `user_id` in API-key mode, where Baidu derived it from the device.
    static func userID(appID: Int64, token: DeviceToken) -> String {
        derived("tuisong-baidu-user:\(appID):\(token.hex)")
    }

    /// A random 19-digit id (`msg_id`, `timer_id`).
    static func random() -> String {
        String(UInt64.random(in: 1_000_000_000_000_000_000..<9_000_000_000_000_000_000))
    }

    private static func derived(_ text: String) -> String {
        let digest = Digest.sha256(Array(text.utf8))
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        return String(1_000_000_000_000_000_000 + value % 8_000_000_000_000_000_000)
    }
}

/// The services this vendor's fields map to, by the channel names their transports declare (a
/// plugin links no transport).
extension PushChannel {
    fileprivate static let harmony = PushChannel("harmony")
}
