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
    /// Hosts besides Google's where a service account's `token_uri` may point: the look-alikes
    /// the operator's config names (`testTokenHosts(_:)`).
    let testTokenHosts: Set<String>

    public init(store: any ChannelCredentialStore, masterKey: MasterKey, testTokenHosts: Set<String> = []) {
        self.store = store
        self.masterKey = masterKey
        self.testTokenHosts = Set(testTokenHosts.map { $0.lowercased() })
    }

    /// Google's hosts for a service account's token endpoint (`token_uri` of a downloaded key
    /// file: `https://oauth2.googleapis.com/token`; older files `accounts.google.com`).
    static let googleTokenHosts: Set<String> = ["oauth2.googleapis.com", "accounts.google.com"]

    /// The hosts the operator's config allows a `token_uri` on besides Google's: FCM's endpoints
    /// when they point elsewhere than Google (a look-alike, as the tests and `tuisong apns-mock`
    /// run one), and loopback in local mode, where every token request goes to the bundled
    /// look-alike whatever the account says.
    public static func testTokenHosts(_ config: GatewayConfig) -> Set<String> {
        var hosts: Set<String> = []
        for url in [config.transports.fcm.url, config.transports.fcm.tokenURL] {
            guard let host = URLComponents(string: url)?.host?.lowercased(), !host.isEmpty,
                !host.hasSuffix("googleapis.com"), !host.hasSuffix("google.com")
            else { continue }
            hosts.insert(host)
        }
        if config.apns.localMock { hosts.formUnion(["127.0.0.1", "localhost", "::1", "[::1]"]) }
        return hosts
    }

    /// Checks an upload: an FCM file parses as a service account whose RSA key loads, with a
    /// project id, client email and token URI of the shapes Google gives them; a Huawei, Honor,
    /// OPPO or vivo client has an id, a secret and a numeric app id in range, a Xiaomi one a
    /// package name.
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
            try checkShape(of: account)
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
                // A positive number as the developer console shows it (Huawei's and Honor's run to
                // nine digits or so): no sign, no leading zero, at most 18 digits (fits an Int64).
                guard (1...18).contains(appIDText.utf8.count), appIDText.first != "0",
                    appIDText.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
                else {
                    throw CredentialError(
                        .invalidVendorAppID,
                        "the \(channel.rawValue) app id is the number the developer console shows (1 to 18 digits, not starting with 0)"
                    )
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

    /// The fields Google's console fills, checked against the shapes Google gives them: they end
    /// up in URLs (`/v1/projects/{project_id}/messages:send`), in signed assertions and in the
    /// console, and `token_uri` is where the gateway sends a signed assertion.
    private func checkShape(of account: FCMServiceAccount) throws(CredentialError) {
        // Google: "6 to 30 lowercase letters, digits, or hyphens; start with a letter; no
        // trailing hyphen".
        let project = Array(account.projectID.utf8)
        guard (6...30).contains(project.count), let first = project.first, let last = project.last,
            first >= UInt8(ascii: "a") && first <= UInt8(ascii: "z"), last != UInt8(ascii: "-"),
            project.allSatisfy({ Self.isLowerAlphanumeric($0) || $0 == UInt8(ascii: "-") })
        else {
            throw CredentialError(
                .invalidServiceAccount,
                "the service account's project_id must be a Google Cloud project id: 6 to 30 lowercase letters, digits or hyphens, starting with a letter"
            )
        }
        guard Self.isEmailAddress(account.clientEmail) else {
            throw CredentialError(
                .invalidServiceAccount,
                "the service account's client_email must be an email address, e.g. push@my-project.iam.gserviceaccount.com"
            )
        }
        guard let uri = URLComponents(string: account.tokenURI), uri.scheme?.lowercased() == "https",
            let host = uri.host?.lowercased(), Self.googleTokenHosts.contains(host) || testTokenHosts.contains(host),
            uri.user == nil, uri.password == nil
        else {
            throw CredentialError(
                .invalidServiceAccount,
                "the service account's token_uri must be Google's token endpoint, https://oauth2.googleapis.com/token"
            )
        }
    }

    private static func isLowerAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isLowerAlphanumeric(byte) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    /// `local@domain` in ASCII: a local part of letters, digits and `.!#$%&'*+/=?^_`{|}~-` (up to
    /// 64), a domain of at least two dot-separated labels of letters, digits and inner hyphens;
    /// 254 bytes at most (RFC 5321).
    static func isEmailAddress(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count <= 254, let at = bytes.firstIndex(of: UInt8(ascii: "@")) else { return false }
        let local = bytes[..<at]
        let domain = bytes[(at + 1)...]
        let localSymbols = Set(".!#$%&'*+/=?^_`{|}~-".utf8)
        guard (1...64).contains(local.count),
            local.allSatisfy({ isAlphanumeric($0) || localSymbols.contains($0) })
        else { return false }
        let labels = domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return labels.count >= 2
            && labels.allSatisfy { label in
                (1...63).contains(label.count) && label.first != UInt8(ascii: "-") && label.last != UInt8(ascii: "-")
                    && label.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") }
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
