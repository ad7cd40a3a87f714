import Foundation
public import TuisongCrypto

/// Everything needed to push through the mock with no Apple account: a throwaway CA, a TLS
/// server certificate for localhost, a `.p8`-style token key with key and team ids, and a fake
/// Apple push client certificate for certificate auth.
///
///     let setup = try APNsMockLocalSetup.generate(bundleID: "com.example.app")
///     let server = try APNsMockServer(configuration: setup.configuration(),
///                                     certificate: setup.serverCertificate, key: setup.serverKey)
///     // the client trusts setup.caCertificatePEM and signs JWTs with setup.tokenKeyPEM,
///     // kid setup.keyID, iss setup.teamID
public struct APNsMockLocalSetup: Sendable {
    /// The bundle id the client certificate is issued for (its APNs topics).
    public var bundleID: String
    /// The throwaway CA: trust it to reach the mock, and it issued the client certificate.
    public var caCertificatePEM: String
    /// TLS server identity for `localhost`, `127.0.0.1` and `::1`, issued by the CA.
    public var serverCertificate: Certificate
    public var serverKey: PrivateKey
    /// The token signing key as an Apple `.p8` file holds it (PKCS#8 PEM, P-256).
    public var tokenKeyPEM: String
    /// Its public half, as `APNsMockConfiguration.TokenKey` wants it.
    public var tokenPublicKeyPEM: String
    /// 10-character key id (`kid`) and team id (`iss`).
    public var keyID: String
    public var teamID: String
    /// A fake "Apple Push Services" client certificate issued by the CA, with the APNs topics
    /// extension (bundle id, `.voip`, `.complication`) and both environment markers.
    public var clientCertificatePEM: String
    /// The client certificate's private key (PKCS#8 PEM).
    public var clientKeyPEM: String
    /// A Google service account of project `tuisong-local` the FCM look-alike trusts (its public
    /// half); `fcmServiceAccountJSON(tokenURI:)` is the file a client loads.
    public var fcmServiceAccount: APNsMockConfiguration.FCMServiceAccount
    /// The service account's RSA 2048 private key (PKCS#8 PEM, `private_key` of the JSON).
    public var fcmPrivateKeyPEM: String
    /// `client_id` of the service-account JSON (21 digits, as Google's).
    public var fcmClientID: String
    /// A Huawei Push Kit OAuth client (numeric id, as AppGallery Connect issues them).
    public var huaweiClient: APNsMockConfiguration.PushKitClient
    /// A Honor Push OAuth client.
    public var honorClient: APNsMockConfiguration.PushKitClient
    /// A Xiaomi MiPush app (package `<bundleID>`, as the APNs topic).
    public var xiaomiApp: APNsMockConfiguration.XiaomiApp
    /// An OPPO Push app (AppKey and MasterSecret).
    public var oppoApp: APNsMockConfiguration.OppoApp
    /// A vivo Push app (numeric AppID, AppKey, AppSecret).
    public var vivoApp: APNsMockConfiguration.VivoApp
    /// A HarmonyOS Push Kit service account the v3 look-alike trusts (its public half);
    /// `harmonyServiceAccountJSON()` is the key file a client loads.
    public var harmonyServiceAccount: APNsMockConfiguration.HarmonyServiceAccount
    /// The account's RSA private key (PKCS#8 PEM, `private_key` of the key file).
    public var harmonyPrivateKeyPEM: String
    /// False when this setup was decoded from a file saved before it had every Android
    /// credential (those missing were generated on decoding).
    var decodedAndroidCredentials = true

    /// Makes fresh keys and certificates (valid from an hour ago for 825 days).
    public static func generate(bundleID: String) throws -> APNsMockLocalSetup {
        let notBefore = Date().addingTimeInterval(-3600)
        let notAfter = notBefore.addingTimeInterval(825 * 24 * 3600)

        let caKey = try PrivateKey.generateP256()
        let ca = try Certificate.issue(
            subjectCommonName: "Tuisong APNs Mock CA", subjectAltNames: [], publicKey: caKey.publicKey,
            issuer: nil, signingKey: caKey, isCA: true, notBefore: notBefore, notAfter: notAfter)

        let serverKey = try PrivateKey.generateP256()
        let server = try Certificate.issue(
            subjectCommonName: "localhost", subjectAltNames: ["localhost", "127.0.0.1", "::1"],
            publicKey: serverKey.publicKey, issuer: (ca, caKey), signingKey: serverKey, isCA: false,
            notBefore: notBefore, notAfter: notAfter)

        let tokenKey = try PrivateKey.generateP256()

        let clientKey = try PrivateKey.generateP256()
        let environmentMarker: [UInt8] = [0x05, 0x00]  // DER NULL, as in Apple's certificates
        let client = try Certificate.issue(
            subjectCommonName: "Apple Push Services: \(bundleID)", subjectUID: bundleID, subjectAltNames: [],
            publicKey: clientKey.publicKey, issuer: (ca, caKey), signingKey: clientKey, isCA: false,
            notBefore: notBefore, notAfter: notAfter,
            extraExtensions: [
                (Certificate.apnsDevelopmentOID, environmentMarker),
                (Certificate.apnsProductionOID, environmentMarker),
                (
                    Certificate.apnsTopicsOID,
                    Certificate.apnsTopicsExtensionValue(topics: [
                        bundleID, bundleID + ".voip", bundleID + ".complication",
                    ])
                ),
            ])

        let android = try AndroidCredentials.generate()
        let vendors = VendorCredentials.generate(packageName: bundleID)
        let harmony = try HarmonyCredentials.generate()
        return APNsMockLocalSetup(
            bundleID: bundleID, caCertificatePEM: ca.pem(), serverCertificate: server, serverKey: serverKey,
            tokenKeyPEM: try tokenKey.pkcs8PEM(), tokenPublicKeyPEM: try tokenKey.publicKey.pem(),
            keyID: randomIdentifier(), teamID: randomIdentifier(), clientCertificatePEM: client.pem(),
            clientKeyPEM: try clientKey.pkcs8PEM(), fcmServiceAccount: android.fcmServiceAccount,
            fcmPrivateKeyPEM: android.fcmPrivateKeyPEM, fcmClientID: android.fcmClientID,
            huaweiClient: android.huaweiClient, honorClient: android.honorClient, xiaomiApp: vendors.xiaomiApp,
            oppoApp: vendors.oppoApp, vivoApp: vendors.vivoApp, harmonyServiceAccount: harmony.account,
            harmonyPrivateKeyPEM: harmony.privateKeyPEM)
    }

    /// The HarmonyOS service account of a setup: project, key id and sub-account as Huawei's
    /// API Console issues them (digits, a 32-hex key id), signed with the process's RSA key.
    struct HarmonyCredentials {
        var account: APNsMockConfiguration.HarmonyServiceAccount
        var privateKeyPEM: String

        static func generate() throws -> HarmonyCredentials {
            let key = try AndroidCredentials.sharedKey()
            return HarmonyCredentials(
                account: .init(
                    projectID: "10" + randomString(count: 16, alphabet: "0123456789"),
                    keyID: randomString(count: 32, alphabet: "0123456789abcdef"),
                    subAccount: "1" + randomString(count: 9, alphabet: "0123456789"),
                    publicKeyPEM: try key.publicKey.pem()),
                privateKeyPEM: try key.pkcs8PEM())
        }
    }

    /// The HarmonyOS service-account key file as Huawei's API Console downloads it.
    public func harmonyServiceAccountJSON() -> [UInt8] {
        let fields: [(String, String)] = [
            ("project_id", harmonyServiceAccount.projectID),
            ("key_id", harmonyServiceAccount.keyID),
            ("private_key", harmonyPrivateKeyPEM),
            ("sub_account", harmonyServiceAccount.subAccount),
            ("auth_uri", "https://oauth-login.cloud.huawei.com/oauth2/v3/authorize"),
            ("token_uri", "https://oauth-login.cloud.huawei.com/oauth2/v3/token"),
            ("auth_provider_cert_uri", "https://oauth-login.cloud.huawei.com/oauth2/v3/certs"),
            ("client_cert_uri", "https://oauth-login.cloud.huawei.com/oauth2/v3/x509?client_id="),
        ]
        let lines = fields.map { "    \(RequestLogLine.quoted($0.0)): \(RequestLogLine.quoted($0.1))" }
        return Array(("{\n" + lines.joined(separator: ",\n") + "\n}\n").utf8)
    }

    /// The Xiaomi, OPPO and vivo apps of a setup (no key pair: their credentials are secrets).
    struct VendorCredentials {
        var xiaomiApp: APNsMockConfiguration.XiaomiApp
        var oppoApp: APNsMockConfiguration.OppoApp
        var vivoApp: APNsMockConfiguration.VivoApp

        static func generate(packageName: String) -> VendorCredentials {
            let base64 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/"
            let hex = "0123456789abcdef"
            func uuid() -> String {
                [8, 4, 4, 4, 12].map { randomString(count: $0, alphabet: hex) }.joined(separator: "-")
            }
            return VendorCredentials(
                xiaomiApp: .init(appSecret: randomString(count: 22, alphabet: base64) + "==", packageName: packageName),
                oppoApp: .init(
                    appKey: randomString(count: 32, alphabet: hex), masterSecret: randomString(count: 32, alphabet: hex)
                ),
                vivoApp: .init(
                    appID: "1" + randomString(count: 8, alphabet: "0123456789"), appKey: uuid(), appSecret: uuid()))
        }
    }

    /// The Android services' credentials of a setup.
    struct AndroidCredentials {
        var fcmServiceAccount: APNsMockConfiguration.FCMServiceAccount
        var fcmPrivateKeyPEM: String
        var fcmClientID: String
        var huaweiClient: APNsMockConfiguration.PushKitClient
        var honorClient: APNsMockConfiguration.PushKitClient

        /// One RSA key per process: generating RSA 2048 costs about 150 ms of CPU, and test suites
        /// build a setup per test (a hundred setups doubled the APNs suite's CPU time). Each setup
        /// still has its own `private_key_id`, and a setup is throwaway by design.
        private static let processKey = Result { try PrivateKey.generateRSA(bits: 2048) }

        static func sharedKey() throws -> PrivateKey { try processKey.get() }

        static func generate() throws -> AndroidCredentials {
            let key = try processKey.get()
            let account = APNsMockConfiguration.FCMServiceAccount(
                clientEmail: "tuisong-local@tuisong-local.iam.gserviceaccount.com",
                keyID: randomString(count: 40, alphabet: "0123456789abcdef"), publicKeyPEM: try key.publicKey.pem(),
                projectID: "tuisong-local")
            let huaweiID = "10" + randomString(count: 7, alphabet: "0123456789")
            let honorAppID = "104" + randomString(count: 6, alphabet: "0123456789")
            return AndroidCredentials(
                fcmServiceAccount: account, fcmPrivateKeyPEM: try key.pkcs8PEM(),
                fcmClientID: "1" + randomString(count: 20, alphabet: "0123456789"),
                huaweiClient: .init(
                    clientID: huaweiID, clientSecret: randomString(count: 64, alphabet: "0123456789abcdef"),
                    appID: huaweiID),
                honorClient: .init(
                    clientID: randomString(count: 32, alphabet: "0123456789abcdef"),
                    clientSecret: randomString(
                        count: 32, alphabet: "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
                    appID: honorAppID))
        }
    }

    /// The service-account key file as Google's console downloads it, with `token_uri` pointing
    /// at the mock (e.g. `https://127.0.0.1:2197/token`), for any Google auth library to load.
    public func fcmServiceAccountJSON(tokenURI: String) -> [UInt8] {
        let email = fcmServiceAccount.clientEmail
        let escapedEmail = email.replacingOccurrences(of: "@", with: "%40")
        let fields: [(String, String)] = [
            ("type", "service_account"),
            ("project_id", fcmServiceAccount.projectID),
            ("private_key_id", fcmServiceAccount.keyID),
            ("private_key", fcmPrivateKeyPEM),
            ("client_email", email),
            ("client_id", fcmClientID),
            ("auth_uri", "https://accounts.google.com/o/oauth2/auth"),
            ("token_uri", tokenURI),
            ("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"),
            ("client_x509_cert_url", "https://www.googleapis.com/robot/v1/metadata/x509/\(escapedEmail)"),
            ("universe_domain", "googleapis.com"),
        ]
        let lines = fields.map { "  \(RequestLogLine.quoted($0.0)): \(RequestLogLine.quoted($0.1))" }
        return Array(("{\n" + lines.joined(separator: ",\n") + "\n}\n").utf8)
    }

    /// A configuration accepting this setup's token key and client certificates.
    public func configuration(
        host: String = "127.0.0.1", port: Int = 0, faults: APNsMockConfiguration.Faults = .init()
    ) -> APNsMockConfiguration {
        APNsMockConfiguration(
            host: host, port: port,
            tokenKeys: [.init(keyID: keyID, teamID: teamID, publicKeyPEM: tokenPublicKeyPEM)],
            clientCertificateCAPEMs: [caCertificatePEM], faults: faults, fcmServiceAccounts: [fcmServiceAccount],
            huaweiClients: [huaweiClient], honorClients: [honorClient], xiaomiApps: [xiaomiApp], oppoApps: [oppoApp],
            vivoApps: [vivoApp], harmonyServiceAccounts: [harmonyServiceAccount])
    }

    /// Writes the CA certificate (PEM) for clients to trust, e.g. `curl --cacert`.
    public func writeCAFile(to path: String) throws {
        try Data(caCertificatePEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Reuses the setup saved at `path` when it is for `bundleID` and its server certificate stays
    /// valid for at least another day, so credentials a gateway stored from it keep working across
    /// restarts; otherwise generates a fresh one and saves it there (mode 0600: it holds keys).
    public static func loadOrGenerate(at path: String, bundleID: String) throws -> APNsMockLocalSetup {
        if let data = FileManager.default.contents(atPath: path),
            let saved = try? JSONDecoder().decode(APNsMockLocalSetup.self, from: data),
            saved.bundleID == bundleID, saved.serverCertificate.isValid(at: Date().addingTimeInterval(24 * 3600))
        {
            // A setup saved before (some of) the Android look-alikes got their credentials on
            // decoding; keep them from now on.
            if !saved.decodedAndroidCredentials { try saved.save(to: path) }
            return saved
        }
        let setup = try generate(bundleID: bundleID)
        try setup.save(to: path)
        return setup
    }

    /// Writes this setup as JSON (PEM strings) with mode 0600, replacing any file at `path`.
    public func save(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600])
        else {
            throw APNsMockError.posix("create \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            let error = APNsMockError.posix("rename \(temporary) to \(path)")
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
    }

    /// Apple's key and team ids: 10 characters of A–Z and 0–9.
    static func randomIdentifier() -> String {
        randomString(count: 10, alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    }

    static func randomString(count: Int, alphabet: String) -> String {
        let characters = Array(alphabet)
        var generator = SystemRandomNumberGenerator()
        return String((0..<count).map { _ in characters.randomElement(using: &generator)! })
    }
}

/// Encoded as PEM strings, so a setup can be saved and reused (see `loadOrGenerate`).
extension APNsMockLocalSetup: Codable {
    private enum CodingKeys: String, CodingKey {
        case bundleID, caCertificatePEM, serverCertificatePEM, serverKeyPEM, tokenKeyPEM, tokenPublicKeyPEM
        case keyID, teamID, clientCertificatePEM, clientKeyPEM
        case fcmServiceAccount, fcmPrivateKeyPEM, fcmClientID, huaweiClient, honorClient
        case xiaomiApp, oppoApp, vivoApp, harmonyServiceAccount, harmonyPrivateKeyPEM
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func string(_ key: CodingKeys) throws -> String { try container.decode(String.self, forKey: key) }
        bundleID = try string(.bundleID)
        caCertificatePEM = try string(.caCertificatePEM)
        serverCertificate = try Certificate(pem: try string(.serverCertificatePEM))
        serverKey = try PrivateKey(pem: try string(.serverKeyPEM))
        tokenKeyPEM = try string(.tokenKeyPEM)
        tokenPublicKeyPEM = try string(.tokenPublicKeyPEM)
        keyID = try string(.keyID)
        teamID = try string(.teamID)
        clientCertificatePEM = try string(.clientCertificatePEM)
        clientKeyPEM = try string(.clientKeyPEM)
        if let account = try container.decodeIfPresent(
            APNsMockConfiguration.FCMServiceAccount.self, forKey: .fcmServiceAccount)
        {
            fcmServiceAccount = account
            fcmPrivateKeyPEM = try string(.fcmPrivateKeyPEM)
            fcmClientID = try string(.fcmClientID)
            huaweiClient = try container.decode(APNsMockConfiguration.PushKitClient.self, forKey: .huaweiClient)
            honorClient = try container.decode(APNsMockConfiguration.PushKitClient.self, forKey: .honorClient)
        } else {
            let android = try AndroidCredentials.generate()
            fcmServiceAccount = android.fcmServiceAccount
            fcmPrivateKeyPEM = android.fcmPrivateKeyPEM
            fcmClientID = android.fcmClientID
            huaweiClient = android.huaweiClient
            honorClient = android.honorClient
            decodedAndroidCredentials = false
        }
        // Files saved before the Xiaomi, OPPO and vivo look-alikes lack these three.
        let vendors = VendorCredentials.generate(packageName: bundleID)
        var generated = false
        func decode<T: Decodable>(_ key: CodingKeys, _ fresh: T) throws -> T {
            if let value = try container.decodeIfPresent(T.self, forKey: key) { return value }
            generated = true
            return fresh
        }
        xiaomiApp = try decode(.xiaomiApp, vendors.xiaomiApp)
        oppoApp = try decode(.oppoApp, vendors.oppoApp)
        vivoApp = try decode(.vivoApp, vendors.vivoApp)
        // Files saved before the HarmonyOS look-alike lack its account.
        if let account = try container.decodeIfPresent(
            APNsMockConfiguration.HarmonyServiceAccount.self, forKey: .harmonyServiceAccount),
            let key = try container.decodeIfPresent(String.self, forKey: .harmonyPrivateKeyPEM)
        {
            harmonyServiceAccount = account
            harmonyPrivateKeyPEM = key
        } else {
            let harmony = try HarmonyCredentials.generate()
            harmonyServiceAccount = harmony.account
            harmonyPrivateKeyPEM = harmony.privateKeyPEM
            generated = true
        }
        if generated { decodedAndroidCredentials = false }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(bundleID, forKey: .bundleID)
        try container.encode(caCertificatePEM, forKey: .caCertificatePEM)
        try container.encode(serverCertificate.pem(), forKey: .serverCertificatePEM)
        try container.encode(try serverKey.pkcs8PEM(), forKey: .serverKeyPEM)
        try container.encode(tokenKeyPEM, forKey: .tokenKeyPEM)
        try container.encode(tokenPublicKeyPEM, forKey: .tokenPublicKeyPEM)
        try container.encode(keyID, forKey: .keyID)
        try container.encode(teamID, forKey: .teamID)
        try container.encode(clientCertificatePEM, forKey: .clientCertificatePEM)
        try container.encode(clientKeyPEM, forKey: .clientKeyPEM)
        try container.encode(fcmServiceAccount, forKey: .fcmServiceAccount)
        try container.encode(fcmPrivateKeyPEM, forKey: .fcmPrivateKeyPEM)
        try container.encode(fcmClientID, forKey: .fcmClientID)
        try container.encode(huaweiClient, forKey: .huaweiClient)
        try container.encode(honorClient, forKey: .honorClient)
        try container.encode(xiaomiApp, forKey: .xiaomiApp)
        try container.encode(oppoApp, forKey: .oppoApp)
        try container.encode(vivoApp, forKey: .vivoApp)
        try container.encode(harmonyServiceAccount, forKey: .harmonyServiceAccount)
        try container.encode(harmonyPrivateKeyPEM, forKey: .harmonyPrivateKeyPEM)
    }
}
