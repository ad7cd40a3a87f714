import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongFCM
import TuisongHTTPClient
import TuisongHonor
import TuisongHuawei

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
        var fcm: ChannelCredential
        var huawei: ChannelCredential
        var honor: ChannelCredential
    }

    let fcm: FCMTransport
    let huawei: HuaweiTransport
    let honor: HonorTransport
    let resolvers: [PushChannel: ChannelCredentialResolver]

    var byChannel: [PushChannel: any PushTransport] { [.fcm: fcm, .huawei: huawei, .honor: honor] }

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
        func resolver(_ channel: PushChannel, fallback: ChannelCredential?) -> ChannelCredentialResolver {
            ChannelCredentialResolver(
                channel: channel, store: store, secrets: secrets, fallback: fallback, clock: clock, logger: logger)
        }
        let timeout = Duration.seconds(config.requestTimeoutSeconds)
        let resolvers: [PushChannel: ChannelCredentialResolver] = [
            .fcm: resolver(.fcm, fallback: local?.fcm), .huawei: resolver(.huawei, fallback: local?.huawei),
            .honor: resolver(.honor, fallback: local?.honor),
        ]
        let fcm = FCMTransport(
            clients: try (0..<config.fcmClients).map { try client("fcm-\($0)") }, resolver: resolvers[.fcm]!,
            endpoints: FCMTransport.Endpoints(
                sendURL: local?.baseURL ?? config.fcm.url,
                // In local mode every account, the uploaded ones too, signs in at the look-alike;
                // otherwise a configured token_url replaces every account's (a test's look-alike).
                tokenURL: local.map { $0.baseURL + "/token" }
                    ?? (config.fcm.tokenURL.isEmpty ? nil : config.fcm.tokenURL)),
            requestTimeout: timeout, clock: clock, logger: logger)
        let huawei = HuaweiTransport(
            service: HuaweiService(baseURL: local?.baseURL ?? config.huawei.url), client: try client("huawei"),
            resolver: resolvers[.huawei]!,
            tokenURL: local.map { $0.baseURL + "/oauth2/v3/token" } ?? config.huawei.tokenURL,
            requestTimeout: timeout, tokensPerRequest: config.tokensPerRequest, clock: clock, logger: logger)
        let honor = HonorTransport(
            service: HonorService(baseURL: local?.baseURL ?? config.honor.url), client: try client("honor"),
            resolver: resolvers[.honor]!, tokenURL: local.map { $0.baseURL + "/auth/token" } ?? config.honor.tokenURL,
            requestTimeout: timeout, tokensPerRequest: config.tokensPerRequest, clock: clock, logger: logger)
        return AndroidTransports(fcm: fcm, huawei: huawei, honor: honor, resolvers: resolvers)
    }

    /// An app's Android credentials changed: look them up again on the next send.
    func credentialsChanged(appID: Int64) {
        for resolver in resolvers.values { resolver.forget(appID: appID) }
    }

    /// Each service's HTTP client and token figures, for metrics.
    var statistics: [(channel: PushChannel, http: HTTPClientStatistics, tokenFetches: Int, tokenFailures: Int)] {
        [
            (.fcm, fcm.statistics, fcm.tokens.fetchCount, fcm.tokens.failureCount),
            (.huawei, huawei.statistics, huawei.tokens.fetchCount, huawei.tokens.failureCount),
            (.honor, honor.statistics, honor.tokens.fetchCount, honor.tokens.failureCount),
        ]
    }

    func shutdown() {
        fcm.shutdown()
        huawei.shutdown()
        honor.shutdown()
    }
}
