import TuisongCore
import TuisongGateway
import TuisongTransportKit

/// Shorthands the tests use for the forms the FCM, Huawei-style and other Android transports
/// declare; the gateway itself knows only `.form(channel:_:)`, as the admin API and the CLI build it.
extension ChannelCredentialUpload {
    /// FCM: the service-account JSON Firebase's console downloads.
    public static func fcm(serviceAccountJSON: [UInt8]) -> Self {
        .form(channel: .fcm, CredentialFormInput(files: ["file": serviceAccountJSON]))
    }

    /// Huawei or Honor: the OAuth 2.0 client and the service's app id; Xiaomi, OPPO and vivo
    /// name the same three fields differently in their consoles (package name / AppID /
    /// AppKey / AppSecret / MasterSecret) but declare them under these names.
    public static func oauthClient(
        channel: PushChannel, vendorAppID: String, clientID: String, clientSecret: String, badgeClass: String?
    ) -> Self {
        .form(
            channel: channel,
            CredentialFormInput(values: [
                "vendor_app_id": vendorAppID, "client_id": clientID, "client_secret": clientSecret,
                "badge_class": badgeClass ?? "",
            ]))
    }
}
