import Foundation
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongFCM

/// What an operator gives for an Android push service.
public enum ChannelCredentialUpload: Sendable {
    /// FCM: the service-account JSON Firebase's console downloads.
    case fcm(serviceAccountJSON: [UInt8])
    /// Huawei or Honor: the app's OAuth 2.0 client (id and secret) and the service's app id;
    /// `badgeClass` is the launcher activity a badge number is shown on. Xiaomi: the package
    /// name, AppID and AppSecret; OPPO: AppID, AppKey and MasterSecret; vivo: AppID, AppKey
    /// and AppSecret.
    case oauthClient(
        channel: PushChannel, vendorAppID: String, clientID: String, clientSecret: String, badgeClass: String?)

    public var channel: PushChannel {
        switch self {
        case .fcm: .fcm
        case .oauthClient(let channel, _, _, _, _): channel
        }
    }
}

/// Validates Android credentials, seals their secrets under the master key, and opens them for
/// the transports. The console, the CLI and local mode add credentials through here.
public struct ChannelCredentialService: Sendable, ChannelSecretOpener {
    let store: any ChannelCredentialStore
    let masterKey: MasterKey

    public init(store: any ChannelCredentialStore, masterKey: MasterKey) {
        self.store = store
        self.masterKey = masterKey
    }

    /// Checks an upload: an FCM file parses as a service account whose RSA key loads; a
    /// Huawei or Honor client has an id, a secret and a numeric app id.
    public func inspect(_ upload: ChannelCredentialUpload, appID: Int64, selector: String?) throws(CredentialError)
        -> NewChannelCredential
    {
        let selector = try CredentialSelector.validated(selector)
        switch upload {
        case .fcm(let json):
            let account: FCMServiceAccount
            do {
                account = try FCMServiceAccount(json: json)
            } catch {
                throw CredentialError(.corruptFile, error.description)
            }
            return NewChannelCredential(
                appID: appID, channel: .fcm, selector: selector, vendorAppID: account.projectID,
                clientID: account.clientEmail, encryptedSecret: try seal(account.json, appID: appID, channel: .fcm))
        case .oauthClient(let channel, let vendorAppID, let clientID, let clientSecret, let badgeClass):
            guard channel.isAndroid, channel != .fcm else {
                throw CredentialError(.wrongKind, "\(channel.rawValue) does not sign in with a client id and secret")
            }
            let appIDText = vendorAppID.trimmingCharacters(in: .whitespaces)
            if channel == .xiaomi {
                // Xiaomi addresses the app by its package name (restricted_package_name).
                guard !appIDText.isEmpty, appIDText.count <= 255, appIDText.contains("."),
                    appIDText.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_") })
                else {
                    throw CredentialError(
                        .invalidVendorAppID, "for xiaomi the app id is the app's package name, e.g. com.example.chat")
                }
            } else {
                guard !appIDText.isEmpty, appIDText.count <= 32, appIDText.allSatisfy({ $0.isASCII && $0.isNumber })
                else {
                    throw CredentialError(
                        .invalidVendorAppID, "the \(channel.rawValue) app id is the number the developer console shows")
                }
            }
            let client = clientID.trimmingCharacters(in: .whitespaces)
            guard !client.isEmpty, client.count <= 256, !client.contains(where: \.isWhitespace) else {
                throw CredentialError(.invalidClientID, "the client id is required and has no spaces")
            }
            guard !clientSecret.isEmpty, clientSecret.utf8.count <= 1024 else {
                throw CredentialError(.invalidClientSecret, "the client secret is required (at most 1 KiB)")
            }
            var options: [String: String] = [:]
            if let badgeClass = badgeClass?.trimmingCharacters(in: .whitespaces), !badgeClass.isEmpty {
                guard badgeClass.count <= 256,
                    badgeClass.allSatisfy({
                        $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "$")
                    })
                else {
                    throw CredentialError(
                        .invalidBadgeClass,
                        "the badge class is the launcher activity's class name, e.g. com.example.MainActivity")
                }
                options["badge_class"] = badgeClass
            }
            return NewChannelCredential(
                appID: appID, channel: channel, selector: selector, vendorAppID: appIDText, clientID: client,
                encryptedSecret: try seal(Array(clientSecret.utf8), appID: appID, channel: channel), options: options)
        }
    }

    public func add(_ upload: ChannelCredentialUpload, appID: Int64, selector: String? = nil) async throws
        -> ChannelCredentialRecord
    {
        try await store.addChannelCredential(try inspect(upload, appID: appID, selector: selector))
    }

    public func secret(of record: ChannelCredentialRecord) throws -> [UInt8] {
        try masterKey.box.open(
            record.encryptedSecret, associatedData: Self.associatedData(record.appID, record.channel))
    }

    private func seal(_ secret: [UInt8], appID: Int64, channel: PushChannel) throws(CredentialError) -> [UInt8] {
        do {
            return try masterKey.box.seal(secret, associatedData: Self.associatedData(appID, channel))
        } catch {
            throw CredentialError(.corruptFile, "cannot seal the credential: \(error)")
        }
    }

    /// Binds a sealed secret to its app and service: a row copied elsewhere does not decrypt.
    static func associatedData(_ appID: Int64, _ channel: PushChannel) -> [UInt8] {
        Array("tuisong-channel-credential-v1:\(appID):\(channel.rawValue)".utf8)
    }
}

/// How APIs and the CLI show an Android credential: never its secret.
public enum ChannelCredentialView {
    public static func object(_ r: ChannelCredentialRecord) -> [String: Any] {
        var object: [String: Any] = [
            "id": r.id, "app_id": r.appID, "channel": r.channel.rawValue, "vendor_app_id": r.vendorAppID,
            "client_id": r.clientID, "status": r.status, "created_at": ISO8601.string(r.createdAt),
        ]
        object["selector"] = r.selector.map { $0 as Any } ?? NSNull()
        object["status_reason"] = r.statusReason.map { $0 as Any } ?? NSNull()
        object["badge_class"] = r.options["badge_class"].map { $0 as Any } ?? NSNull()
        return object
    }
}
