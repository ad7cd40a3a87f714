import Foundation
import Synchronization
import TuisongCore
package import TuisongCrypto
public import TuisongLookAlikeKit

extension AndroidPushService {
    /// Apple Push Notification service (HTTP/2; provider tokens or client certificates).
    public static let apns = AndroidPushService("apns")
}

/// The look-alike of APNs: `POST /3/device/<token>` validated the way Apple documents
/// (`APNsRequestValidator`), provider tokens checked against the keys it trusts
/// (`ProviderTokenVerifier`) or a client certificate one of the configured CAs issued, the
/// stream limit of a token connection raised after its first valid token, every request
/// recorded (`ReceivedNotification`) and counted (`APNsLookAlikeStatistics`). It is the
/// port's default: a path no other look-alike claims is answered here (`404 BadPath`), as
/// it was when this look-alike was the server. Token faults: `faults.tokenPrefixes`.
package final class APNsLookAlike: PortService {
    package static let declaration = LookAlikeDeclaration(
        service: .apns, summary: "APNs (POST /3/device/<token>)",
        configurationKeys: [("tokenKeys", #"{"keyID","teamID","publicKeyPEM"}"#)],
        setupKeys: ["tokenKeyPEM", "tokenPublicKeyPEM", "keyID", "teamID", "clientCertificatePEM", "clientKeyPEM"],
        isPortDefault: true,
        // The look-alikes began as APNs's mock: its command and config keys kept that name.
        legacyNames: LookAlikeLegacyNames(command: "apns-mock", localModeSection: "apns"),
        makeSetup: { setup in try APNsLookAlike.makeSetup(&setup) },
        configure: { configuration, setup in
            configuration.tokenKeys.append(
                .init(keyID: setup.keyID, teamID: setup.teamID, publicKeyPEM: setup.tokenPublicKeyPEM))
        },
        start: { host, configuration in try APNsLookAlike(host: host, configuration: configuration) },
        // Every app's fallback in local mode: the token key, its team id and key id.
        fallbackCredential: { setup, _ in
            LookAlikeCredential(vendorAppID: setup.teamID, clientID: setup.keyID, secret: Array(setup.tokenKeyPEM.utf8))
        },
        banner: { setup, _, filePrefix in
            let keyPath = filePrefix + "token.p8"
            guard
                FileManager.default.createFile(
                    atPath: keyPath, contents: Data(setup.tokenKeyPEM.utf8), attributes: [.posixPermissions: 0o600])
            else { throw LocalLookAlikeError("cannot write \(keyPath)") }
            return [
                "p8_file": keyPath, "key_id": setup.keyID, "team_id": setup.teamID,
                // A provider token valid for the next hour, for h2load and curl.
                "provider_token": try JWT.es256Token(
                    keyID: setup.keyID, issuer: setup.teamID, issuedAt: Date(),
                    key: try PrivateKey(pem: setup.tokenKeyPEM)),
            ]
        },
        magicFaults: { faults in
            faults.tokenPrefixes.merge(APNsLookAlike.magicTokenPrefixes) { own, _ in own }
        })

    /// Local mode's and `--magic-tokens`' APNs tokens: `410` unregistered, `400bad` a bad
    /// device token, `429` throttled, `500` a server error.
    static let magicTokenPrefixes: [String: LookAlikeConfiguration.APNsFault] = [
        "410": .init(status: 410, reason: "Unregistered"),
        "400bad": .init(status: 400, reason: "BadDeviceToken"),
        "429": .init(status: 429, reason: "TooManyRequests"),
        "500": .init(status: 500, reason: "InternalServerError"),
    ]

    package let service = AndroidPushService.apns
    private let host: LookAlikeHost
    private let verifier: ProviderTokenVerifier
    private let validator: APNsRequestValidator
    let recorder: APNsRecorder

    init(host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        self.host = host
        let tokenKeys = try configuration.lookAlikeSetting("tokenKeys", as: [LookAlikeConfiguration.APNsTokenKey].self)
        verifier = try ProviderTokenVerifier(tokenKeys: tokenKeys ?? [])
        let maxAge = configuration.lookAlikeSettings["maxTokenAgeSeconds"]
        if let maxAge, maxAge.intValue == nil {
            throw LocalLookAlikeError("maxTokenAgeSeconds must be a whole number of seconds")
        }
        validator = APNsRequestValidator(
            maxTokenAgeSeconds: maxAge?.intValue ?? Int64(LookAlikeConfiguration.defaultMaxTokenAgeSeconds),
            verifier: verifier)
        recorder = APNsRecorder(capacity: configuration.recordedNotificationLimit)
    }

    // MARK: On the port

    /// Beyond the largest allowed payload the answer is PayloadTooLarge whatever the bytes are.
    package var bodyStorageLimits: [(pathPrefix: String, bytes: Int)] {
        [("/3/", APNsRequestValidator.bodyStorageLimit)]
    }

    /// The token-prefix faults, longest prefix first.
    final class PreparedFaults: Sendable {
        let prefixes: TokenPrefixFaults
        init(_ prefixes: TokenPrefixFaults) { self.prefixes = prefixes }
    }

    package func prepareFaults(_ faults: LookAlikeConfiguration.Faults) throws -> (any AnyObject & Sendable)? {
        PreparedFaults(
            TokenPrefixFaults(
                try faults.lookAlikeFault("tokenPrefixes", as: [String: LookAlikeConfiguration.APNsFault].self) ?? [:]))
    }

    /// What a connection has shown: its certificate's topics, its provider token's team, the
    /// last token seen; and its apns-id generator. Only the connection's event loop touches it.
    final class ConnectionState {
        var authentication = ConnectionAuthentication()
        var lastAcceptedProviderToken: String?
        var idGenerator = APNsIDGenerator()
    }

    package func connectionOpened(clientCertificate: Certificate?) -> AnyObject? {
        let state = ConnectionState()
        if let certificate = clientCertificate {
            var topics = certificate.applePushTopics
            // Apple's push certificates name the bundle id in the subject UID as well.
            if topics.isEmpty, let uid = certificate.userID { topics = [uid] }
            state.authentication.certificateTopics = topics
        }
        return state
    }

    package func respond(to request: LookAlikeRequest, call: PortCall) -> LookAlikeAnswer? {
        guard request.path.hasPrefix("/3/") else { return nil }
        return answer(request, call: call)
    }

    /// A path no look-alike claims: checked as a push request, it is answered as APNs answers
    /// any other path.
    package func respondUnclaimed(to request: LookAlikeRequest, call: PortCall) -> LookAlikeAnswer? {
        answer(request, call: call)
    }

    private func answer(_ request: LookAlikeRequest, call: PortCall) -> LookAlikeAnswer {
        // Both were made by this look-alike (`connectionOpened`, `prepareFaults`) for this port.
        let state = unsafeDowncast(call.connectionState!, to: ConnectionState.self)
        let faults = unsafeDowncast(call.preparedFaults!, to: PreparedFaults.self)
        let head = APNsRequestHead(request)
        let receivedAt = request.receivedAtMilliseconds
        var verdict = validator.validate(
            head, body: request.body, bodyLength: request.bodyLength, authentication: &state.authentication,
            nowSeconds: receivedAt / 1000, idGenerator: &state.idGenerator)
        if verdict.status == 200, let fault = faults.prefixes.fault(forDeviceToken: verdict.deviceToken) {
            verdict.status = fault.status
            verdict.reason = fault.reason
        }
        if verdict.providerTokenAccepted, let token = head.authorization, token != state.lastAcceptedProviderToken {
            state.lastAcceptedProviderToken = token
            recorder.providerTokenAccepted(token)
        }
        let notification = ReceivedNotification(
            deviceToken: verdict.deviceToken, topic: head.topic, pushType: head.pushType, priority: head.priority,
            expiration: head.expiration, collapseID: head.collapseID, apnsID: verdict.apnsID, payload: request.body,
            connectionID: request.connectionID, streamID: request.streamID, teamID: verdict.teamID,
            keyID: verdict.keyID, status: verdict.status, reason: verdict.reason, receivedAtMilliseconds: receivedAt)
        // The gateway's key probe reaches no device (answered BadDeviceToken once its provider
        // token passed): logged, not counted among what devices were sent.
        if verdict.deviceToken != APNsRequestValidator.probeDeviceToken {
            recorder.record(
                notification, providerTokenRejected: verdict.providerTokenRejected,
                certificateAuthenticated: verdict.certificateAuthenticated)
        }
        if let log = host.requestLog {
            log(APNsRequestLogLine.make(notification, method: head.method, path: head.path))
        }
        guard let reason = verdict.reason else {
            return LookAlikeAnswer(
                status: verdict.status, headers: [("apns-id", verdict.apnsID)], body: [],
                raisesStreamLimit: verdict.providerTokenAccepted, endlessUnderFault: false)
        }
        var json = #"{"reason":""# + reason + "\""
        // Only 410 answers carry a timestamp (ms since 1970).
        if verdict.status == 410 { json += #","timestamp":"# + String(receivedAt) }
        json += "}"
        let body = Array(json.utf8)
        return LookAlikeAnswer(
            status: verdict.status,
            headers: [
                ("apns-id", verdict.apnsID), ("content-type", "application/json"),
                ("content-length", String(body.count)),
            ],
            body: body, raisesStreamLimit: verdict.providerTokenAccepted, endlessUnderFault: false)
    }

    // MARK: Trust, records

    package func trust(vendorAppID: String, clientID: String, secret: [UInt8]) throws {
        trustTokenKey(
            .init(keyID: clientID, teamID: vendorAppID, publicKeyPEM: String(decoding: secret, as: UTF8.self)))
    }

    /// Accepts provider tokens signed with this key from now on (a key it cannot read is logged).
    func trustTokenKey(_ tokenKey: LookAlikeConfiguration.APNsTokenKey) {
        do {
            try verifier.trust(tokenKey)
        } catch {
            host.logger.error(
                "APNs look-alike: cannot trust a token key",
                metadata: ["key_id": "\(tokenKey.keyID)", "error": "\(error)"])
        }
    }

    package func resetRecorded() { recorder.resetNotifications() }
    package func resetStatistics() { recorder.resetStatistics() }
    package func statisticsSummary() -> [String: Int] { ["requests": recorder.statistics.requests] }

    // MARK: Local set-up

    /// A `.p8`-style token key with its key and team ids, and a fake Apple push client
    /// certificate for certificate auth, issued by the set-up's throwaway CA.
    static func makeSetup(_ setup: inout LookAlikeLocalSetup) throws {
        guard let (ca, caKey) = setup.certificateAuthority else {
            throw LocalLookAlikeError(
                "this local set-up has no APNs key and its CA's key is not kept: delete it to make a fresh one")
        }
        let notBefore = Date().addingTimeInterval(-3600)
        let notAfter = notBefore.addingTimeInterval(825 * 24 * 3600)
        let tokenKey = try PrivateKey.generateP256()
        let clientKey = try PrivateKey.generateP256()
        let bundleID = setup.bundleID
        let environmentMarker: [UInt8] = [0x05, 0x00]  // DER NULL, as in Apple's certificates
        let client = try Certificate.issue(
            subjectCommonName: "Apple Push Services: \(bundleID)", subjectUID: bundleID, subjectAltNames: [],
            publicKey: clientKey.publicKey, issuer: (ca, caKey), signingKey: clientKey, isCA: false,
            notBefore: notBefore, notAfter: notAfter,
            extraExtensions: [
                (Certificate.applePushDevelopmentOID, environmentMarker),
                (Certificate.applePushProductionOID, environmentMarker),
                (
                    Certificate.applePushTopicsOID,
                    Certificate.applePushTopicsExtensionValue(topics: [
                        bundleID, bundleID + ".voip", bundleID + ".complication",
                    ])
                ),
            ])
        // Apple's key and team ids: 10 characters of A–Z and 0–9.
        let identifierAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        try setup.setLookAlikeMaterial("tokenKeyPEM", try tokenKey.pkcs8PEM())
        try setup.setLookAlikeMaterial("tokenPublicKeyPEM", try tokenKey.publicKey.pem())
        try setup.setLookAlikeMaterial(
            "keyID", LookAlikeLocalSetup.randomString(count: 10, alphabet: identifierAlphabet))
        try setup.setLookAlikeMaterial(
            "teamID", LookAlikeLocalSetup.randomString(count: 10, alphabet: identifierAlphabet))
        try setup.setLookAlikeMaterial("clientCertificatePEM", client.pem())
        try setup.setLookAlikeMaterial("clientKeyPEM", try clientKey.pkcs8PEM())
    }
}

// MARK: Typed accessors

extension LookAlikeConfiguration {
    /// A provider token signing key the look-alike accepts: JWTs with `kid == keyID` must be
    /// signed by the matching private key and carry `iss == teamID`.
    public struct APNsTokenKey: Sendable, Codable, Equatable {
        /// The 10-character key id (`kid` in the JWT header).
        public var keyID: String
        /// The 10-character team id (`iss` in the JWT claims).
        public var teamID: String
        /// The P-256 public key as PEM (`-----BEGIN PUBLIC KEY-----`).
        public var publicKeyPEM: String

        public init(keyID: String, teamID: String, publicKeyPEM: String) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKeyPEM = publicKeyPEM
        }
    }

    /// A canned APNs error answer.
    public struct APNsFault: Sendable, Codable, Equatable {
        /// HTTP status, e.g. 410.
        public var status: Int
        /// APNs reason string, e.g. `Unregistered`. A 410 answer also carries a timestamp.
        public var reason: String

        public init(status: Int, reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    /// How old a provider token may be unless `maxTokenAgeSeconds` says otherwise.
    static let defaultMaxTokenAgeSeconds = 3600

    /// Keys accepted for token (JWT) authentication (`tokenKeys`).
    public var tokenKeys: [APNsTokenKey] {
        get { lookAlikeList("tokenKeys", of: APNsTokenKey.self) }
        set { setLookAlikeList("tokenKeys", newValue) }
    }

    /// A provider token whose `iat` is older than this is answered 403 ExpiredProviderToken
    /// (`maxTokenAgeSeconds`, 3600 unless set).
    public var maxTokenAgeSeconds: Int {
        get { lookAlikeSettings["maxTokenAgeSeconds"]?.intValue.map(Int.init) ?? Self.defaultMaxTokenAgeSeconds }
        set { lookAlikeSettings["maxTokenAgeSeconds"] = .int(Int64(newValue)) }
    }
}

extension LookAlikeConfiguration.Faults {
    /// Device-token prefix (lower-case hex) → APNs's answer. Applied after validation, so a
    /// request that is invalid anyway still gets its validation error. The longest matching
    /// prefix wins.
    public var tokenPrefixes: [String: LookAlikeConfiguration.APNsFault] {
        get {
            ((try? lookAlikeFault("tokenPrefixes", as: [String: LookAlikeConfiguration.APNsFault].self)) ?? nil) ?? [:]
        }
        set { setLookAlikeFault("tokenPrefixes", newValue.isEmpty ? nil : newValue) }
    }

    /// These faults with APNs's token prefixes (and the others as given).
    public init(
        tokenPrefixes: [String: LookAlikeConfiguration.APNsFault], latencyMilliseconds: Int = 0,
        goawayAfterRequests: Int? = nil, dropConnectionAfterRequests: Int? = nil,
        lowerStreamLimitAfterRequests: Int? = nil, loweredStreamLimit: Int = 1, ignorePings: Bool = false,
        androidTokenPrefixes: [String: LookAlikeConfiguration.AndroidTokenFault] = [:], endlessAnswers: Bool = false
    ) {
        self.init(
            latencyMilliseconds: latencyMilliseconds, goawayAfterRequests: goawayAfterRequests,
            dropConnectionAfterRequests: dropConnectionAfterRequests,
            lowerStreamLimitAfterRequests: lowerStreamLimitAfterRequests, loweredStreamLimit: loweredStreamLimit,
            ignorePings: ignorePings, androidTokenPrefixes: androidTokenPrefixes, endlessAnswers: endlessAnswers)
        self.tokenPrefixes = tokenPrefixes
    }
}

extension LookAlikeLocalSetup {
    private func apnsString(_ key: String) -> String {
        guard let value = lookAlikeMaterials[key]?.stringValue else {
            preconditionFailure("this local set-up has no \(key): made without the APNs look-alike")
        }
        return value
    }

    /// The token signing key as an Apple `.p8` file holds it (PKCS#8 PEM, P-256).
    public var tokenKeyPEM: String { apnsString("tokenKeyPEM") }
    /// Its public half, as `LookAlikeConfiguration.APNsTokenKey` wants it.
    public var tokenPublicKeyPEM: String { apnsString("tokenPublicKeyPEM") }
    /// 10-character key id (`kid`) and team id (`iss`).
    public var keyID: String { apnsString("keyID") }
    public var teamID: String { apnsString("teamID") }
    /// A fake "Apple Push Services" client certificate issued by the CA, with the APNs topics
    /// extension (bundle id, `.voip`, `.complication`) and both environment markers.
    public var clientCertificatePEM: String { apnsString("clientCertificatePEM") }
    /// The client certificate's private key (PKCS#8 PEM).
    public var clientKeyPEM: String { apnsString("clientKeyPEM") }
}

extension LookAlikeServer {
    private var apns: APNsLookAlike? { lookAlike(.apns) as? APNsLookAlike }

    /// Accepts provider tokens signed with this key from now on.
    public func trustTokenKey(_ tokenKey: LookAlikeConfiguration.APNsTokenKey) {
        apns?.trustTokenKey(tokenKey)
    }

    /// The APNs look-alike's counters since start or the last `resetStatistics()`.
    public var apnsStatistics: APNsLookAlikeStatistics { apns?.recorder.statistics ?? APNsLookAlikeStatistics() }

    /// The most recent APNs requests (up to `recordedNotificationLimit`), oldest first, each
    /// with the answer it got.
    public func receivedNotifications() -> [ReceivedNotification] { apns?.recorder.notifications() ?? [] }
}
