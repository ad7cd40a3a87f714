import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongFCM
import TuisongHTTPClient
import TuisongHonor
import TuisongHuawei
import TuisongOPPO
import TuisongTransportKit
import TuisongVivo
import TuisongXiaomi

/// The Android transports of a gateway, one per service, each with its own HTTP client (one
/// event thread) and credential resolver, configured from `transports.*` or, in local mode,
/// pointed at the bundled look-alike with its throwaway credentials as every app's fallback.
struct AndroidTransports: Sendable {
    /// Where local mode sends, and what it signs in with when an app has no credential.
    struct Local: Sendable {
        /// `https://127.0.0.1:<port>` of the in-process look-alike.
        var baseURL: String
        /// A PEM file of the look-alike's CA.
        var caFile: String
        /// The look-alike's own credential of each service.
        var fallbacks: [PushChannel: ChannelCredential]
    }

    /// One service's transport and what the gateway reads of it.
    struct Member: Sendable {
        var transport: any PushTransport
        var tokens: AccessTokenCache
        var statistics: @Sendable () -> HTTPClientStatistics
        var shutdown: @Sendable () -> Void
        /// One sign-in past the cache, for a service that has one (Xiaomi's secret is the key of
        /// every request: nothing to check before a push).
        var checkSignIn: (@Sendable (ChannelCredential) async -> Result<AccessToken, AccessTokenFailure>)?
        /// Until when a credential's daily quota is used up (OPPO, vivo, Xiaomi).
        var quotaExhausted: (@Sendable (Int64) -> Date?)?
    }

    let members: [PushChannel: Member]
    let resolvers: [PushChannel: ChannelCredentialResolver]

    var byChannel: [PushChannel: any PushTransport] { members.mapValues(\.transport) }

    static func start(
        _ config: GatewayConfig.Transports, local: Local?, store: any ChannelCredentialStore,
        secrets: any ChannelSecretOpener, clock: any Clock, logger: Logger
    ) throws -> AndroidTransports {
        let caFile = local?.caFile ?? (config.caFile.isEmpty ? nil : config.caFile)
        func client(_ name: String) throws -> HTTPClient {
            try HTTPClient(
                configuration: HTTPClient.Configuration(
                    caFile: caFile, connectTimeout: .seconds(config.connectTimeoutSeconds),
                    maxConnectionsPerHost: config.connectionsPerHost, maxInFlight: config.maxInFlight,
                    userAgent: "tuisong/\(TuisongVersion.current)"),
                label: name, logger: logger)
        }
        var resolvers: [PushChannel: ChannelCredentialResolver] = [:]
        for channel in PushChannel.allCases where channel.isAndroid {
            resolvers[channel] = ChannelCredentialResolver(
                channel: channel, store: store, secrets: secrets, fallback: local?.fallbacks[channel], clock: clock,
                logger: logger)
        }
        let timeout = Duration.seconds(config.requestTimeoutSeconds)
        let fcm = FCMTransport(
            clients: try (0..<config.fcmClients).map { try client("fcm-\($0)") }, resolver: resolvers[.fcm]!,
            endpoints: FCMTransport.Endpoints(
                sendURL: local?.baseURL ?? config.fcm.url,
                // In local mode every account, the uploaded ones too, signs in at the look-alike;
                // otherwise a configured token_url replaces every account's (a test's look-alike).
                tokenURL: local.map { $0.baseURL + "/token" }
                    ?? (config.fcm.tokenURL.isEmpty ? nil : config.fcm.tokenURL)),
            requestTimeout: timeout, clock: clock, logger: logger)
        var members: [PushChannel: Member] = [
            .fcm: Member(
                transport: fcm, tokens: fcm.tokens, statistics: { fcm.statistics }, shutdown: { fcm.shutdown() },
                checkSignIn: { await fcm.checkSignIn($0) }, quotaExhausted: nil)
        ]
        func batch<Service: TokenBatchService>(_ channel: PushChannel, _ service: Service) throws {
            let transport = TokenBatchTransport(
                service: service, client: try client(channel.rawValue), resolver: resolvers[channel]!,
                requestTimeout: timeout, tokensPerRequest: config.tokensPerRequest, clock: clock, logger: logger)
            let signIn: @Sendable (ChannelCredential) async -> Result<AccessToken, AccessTokenFailure> = {
                await transport.checkSignIn($0)
            }
            let quota: @Sendable (Int64) -> Date? = { transport.quotaExhausted(credentialID: $0) }
            members[channel] = Member(
                transport: transport, tokens: transport.tokens, statistics: { transport.statistics },
                shutdown: { transport.shutdown() }, checkSignIn: channel == .xiaomi ? nil : signIn,
                quotaExhausted: quota)
        }
        try batch(
            .huawei,
            HuaweiService(
                baseURL: local?.baseURL ?? config.huawei.url,
                tokenURL: local.map { $0.baseURL + "/oauth2/v3/token" } ?? config.huawei.tokenURL))
        try batch(
            .honor,
            HonorService(
                baseURL: local?.baseURL ?? config.honor.url,
                tokenURL: local.map { $0.baseURL + "/auth/token" } ?? config.honor.tokenURL))
        try batch(.xiaomi, XiaomiService(baseURL: local?.baseURL ?? config.xiaomiURL))
        try batch(.oppo, OPPOService(baseURL: local?.baseURL ?? config.oppoURL))
        try batch(.vivo, VivoService(baseURL: local?.baseURL ?? config.vivoURL))
        return AndroidTransports(members: members, resolvers: resolvers)
    }

    /// Signs in once with a credential just added and says what the service answered.
    func check(_ credential: ChannelCredential) async -> ChannelCredentialCheck {
        guard let signIn = members[credential.channel]?.checkSignIn else { return .notChecked }
        switch await signIn(credential) {
        case .success: return .accepted
        case .failure(.refused(let reason)): return .refused(reason.description)
        case .failure(.unavailable(let reason, _)): return .unavailable(reason.description)
        }
    }

    /// Until when the credential's daily quota is used up; nil when it is not.
    func quotaExhausted(_ record: ChannelCredentialRecord) -> Date? {
        members[record.channel]?.quotaExhausted?(record.id)
    }

    /// An app's Android credentials changed: look them up again on the next send.
    func credentialsChanged(appID: Int64) {
        for resolver in resolvers.values { resolver.forget(appID: appID) }
    }

    /// Each service's HTTP client and token figures, for metrics.
    var statistics: [(channel: PushChannel, http: HTTPClientStatistics, tokenFetches: Int, tokenFailures: Int)] {
        PushChannel.allCases.compactMap { channel in
            members[channel].map { (channel, $0.statistics(), $0.tokens.fetchCount, $0.tokens.failureCount) }
        }
    }

    func shutdown() {
        for member in members.values { member.shutdown() }
    }
}

/// What the service answered when a credential just added signed in once.
public enum ChannelCredentialCheck: Sendable, Hashable {
    /// The service issued an access token.
    case accepted
    /// The service refused the credential (its reason, verbatim): saved, marked failing.
    case refused(String)
    /// The service could not be asked (unreachable, a 5xx): saved as it is, checked on first use.
    case unavailable(String)
    /// The service has no sign-in to check (Xiaomi): the first push checks it.
    case notChecked

    public var isRefused: Bool {
        if case .refused = self { return true }
        return false
    }

    /// `{"result": "accepted" | "refused" | "unavailable" | "not_checked", "reason": …}`.
    public var object: [String: Any] {
        switch self {
        case .accepted: ["result": "accepted", "reason": NSNull()]
        case .refused(let reason): ["result": "refused", "reason": reason]
        case .unavailable(let reason): ["result": "unavailable", "reason": reason]
        case .notChecked: ["result": "not_checked", "reason": NSNull()]
        }
    }
}

extension ChannelCredentialCheck {
    /// Signs in once with a stored credential through the service the config names, with a
    /// transport made for the purpose and shut down after (the CLI runs no gateway). In local
    /// mode there is nothing to ask: the running gateway's look-alike trusts what is added.
    public static func check(
        _ record: ChannelCredentialRecord, config: GatewayConfig, service: ChannelCredentialService, logger: Logger
    ) async -> ChannelCredentialCheck {
        guard !config.apns.localMock else { return .notChecked }
        let secret: [UInt8]
        do {
            secret = try service.secret(of: record)
        } catch {
            return .refused(SendReason.credentialUnusable.description)
        }
        let transports: AndroidTransports
        do {
            transports = try AndroidTransports.start(
                config.transports, local: nil, store: service.store, secrets: service, clock: SystemClock(),
                logger: logger)
        } catch {
            return .unavailable("\(error)")
        }
        defer { transports.shutdown() }
        return await transports.check(
            ChannelCredential(
                id: record.id, channel: record.channel, vendorAppID: record.vendorAppID, clientID: record.clientID,
                secret: secret, options: record.options))
    }
}
