import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient
import TuisongTransportKit

/// The transports of a gateway, every one the registry declares made from its declaration:
/// each with its own connections (an HTTP client, HTTP/2 pools) and credential lookup (a
/// `ChannelCredentialResolver`, or its own over the uploaded files), configured from its config
/// section or, in local mode, pointed at the bundled look-alike with its throwaway credentials
/// as every app's fallback.
struct GatewayTransports: Sendable {
    /// Where local mode sends, and what it signs in with when an app has no credential.
    struct Local: Sendable {
        /// `https://127.0.0.1:<port>` of the in-process look-alike.
        var baseURL: String
        /// A PEM file of the look-alike's CA, and the certificate itself.
        var caFile: String
        var caCertificatePEM: String
        /// The look-alike's own credential of each service.
        var fallbacks: [PushChannel: ChannelCredential]
        /// Teaches the look-alike a credential stored later.
        var trust: @Sendable (ChannelCredential) throws -> Void
    }

    /// One service's transport and what the gateway reads of it.
    typealias Member = TransportInstance

    let members: [PushChannel: Member]
    let resolvers: [PushChannel: ChannelCredentialResolver]
    /// The registry's order, for metrics.
    let order: [PushChannel]

    var byChannel: [PushChannel: any PushTransport] { members.mapValues(\.transport) }

    /// Makes the registry's transports (`only`: just those, for a one-off check).
    static func start(
        _ config: GatewayConfig.Transports, local: Local?,
        store: any ChannelCredentialStore, secrets: any ChannelSecretOpener, uploaded: UploadedCredentials?,
        clock: any Clock, logger: Logger, receipts: ReceiptSettings? = nil, appReceipts: AppReceiptTokens? = nil,
        only: Set<PushChannel>? = nil
    ) async throws -> GatewayTransports {
        let caFile = local?.caFile ?? (config.caFile.isEmpty ? nil : config.caFile)
        let client: @Sendable (String) throws -> HTTPClient = { name in
            try HTTPClient(
                configuration: HTTPClient.Configuration(
                    caFile: caFile, connectTimeout: .seconds(config.connectTimeoutSeconds),
                    maxConnectionsPerHost: config.connectionsPerHost, maxInFlight: config.maxInFlight,
                    userAgent: "tuisong/\(TuisongVersion.current)"),
                label: name, logger: logger)
        }
        var resolvers: [PushChannel: ChannelCredentialResolver] = [:]
        var members: [PushChannel: Member] = [:]
        var order: [PushChannel] = []
        do {
            for declaration in config.registry.declarations {
                guard let make = declaration.make else { continue }
                let channel = declaration.channel.channel
                if let only, !only.contains(channel) { continue }
                let fallback = local?.fallbacks[channel]
                let resolver = ChannelCredentialResolver(
                    channel: channel, store: store, secrets: secrets, fallback: fallback, clock: clock,
                    logger: logger)
                resolvers[channel] = resolver
                members[channel] = try make(
                    TransportContext(
                        channel: channel, section: config.section(channel),
                        // Local mode sends where the look-alike stands in for the service.
                        localBaseURL: fallback != nil ? local?.baseURL : nil, client: client,
                        resolver: resolver, requestTimeout: .seconds(config.requestTimeoutSeconds),
                        tokensPerRequest: config.tokensPerRequest, clock: clock, logger: logger, receipts: receipts,
                        appReceipts: appReceipts, uploadedCredentials: uploaded,
                        localLookAlike: local.map {
                            LocalLookAlike(
                                baseURL: $0.baseURL, caCertificatePEM: $0.caCertificatePEM, fallback: fallback,
                                trust: $0.trust)
                        }, caFile: caFile, connectTimeout: .seconds(config.connectTimeoutSeconds)))
                order.append(channel)
            }
        } catch {
            for member in members.values { await member.shutdown() }
            throw error
        }
        return GatewayTransports(members: members, resolvers: resolvers, order: order)
    }

    /// Signs in once with a credential just added and says what the service answered.
    func check(_ credential: ChannelCredential) async -> ChannelCredentialCheck {
        guard let signIn = members[credential.channel]?.checkSignIn else {
            return .notChecked("\(credential.channel.rawValue) has no sign-in to check: the first push checks it")
        }
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

    /// An app's channel credentials changed: look them up again on the next send.
    func credentialsChanged(appID: Int64) {
        for resolver in resolvers.values { resolver.forget(appID: appID) }
    }

    /// The transports that look their uploaded credentials up themselves, in order.
    var uploadedCredentialHooks: [UploadedCredentialHooks] {
        order.compactMap { members[$0]?.uploadedCredentials }
    }

    /// An app's uploaded credentials changed: the transports that use them look them up again.
    func uploadedCredentialsChanged(appID: Int64) async {
        for hooks in uploadedCredentialHooks { await hooks.changed(appID) }
    }

    /// The uploaded credentials' transport: the one the uploaded-credential API speaks for.
    var uploaded: UploadedCredentialHooks? { uploadedCredentialHooks.first }

    /// Whether pushes of a held route could be sent now (looked up again, not cached).
    func canSend(_ route: HeldRoute) async -> Bool {
        if let hooks = members[route.channel]?.uploadedCredentials { return await hooks.canSend(route) }
        guard let resolver = resolvers[route.channel] else { return false }
        return await resolver.canSend(appID: route.appID, selector: route.selector)
    }

    /// Drops what the route's transport cached of the app's credentials.
    func forget(_ route: HeldRoute) async {
        if let hooks = members[route.channel]?.uploadedCredentials {
            await hooks.changed(route.appID)
        } else {
            credentialsChanged(appID: route.appID)
        }
    }

    /// Whether the route's held pushes are released per environment rather than per channel.
    func holdsPerEnvironment(_ channel: PushChannel) -> Bool {
        members[channel]?.uploadedCredentials?.holdsPerEnvironment ?? false
    }

    /// Each service's HTTP client and token figures, for metrics (those with an HTTP client).
    var statistics: [(channel: PushChannel, http: HTTPClientStatistics, tokenFetches: Int, tokenFailures: Int)] {
        order.compactMap { channel in
            guard let member = members[channel], let statistics = member.statistics, let tokens = member.tokens
            else { return nil }
            return (channel, statistics(), tokens.fetchCount, tokens.failureCount)
        }
    }

    /// The transports' own gauges, in order.
    var gauges: [TransportGauge] { order.flatMap { members[$0]?.gauges ?? [] } }

    func shutdown() async {
        for member in members.values { await member.shutdown() }
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
    /// Nothing was asked, and why: local mode (its look-alike takes every credential added, so
    /// a sign-in there would prove nothing), or a credential with nothing to ask about.
    case notChecked(String)
    /// Saved, and the check still running after the answer's bound: its result lands on the
    /// credential (`failing` with the reason, or in use).
    case pending

    /// Local mode's reason, in the words the console and the CLI show.
    public static let localMode = ChannelCredentialCheck.notChecked(
        "local mode: not checked (the bundled look-alike takes every credential added)")

    public var isRefused: Bool {
        if case .refused = self { return true }
        return false
    }

    /// `{"result": "accepted" | "refused" | "unavailable" | "not_checked" | "pending", "reason": …}`.
    public var object: [String: Any] {
        switch self {
        case .accepted: ["result": "accepted", "reason": NSNull()]
        case .refused(let reason): ["result": "refused", "reason": reason]
        case .unavailable(let reason): ["result": "unavailable", "reason": reason]
        case .notChecked(let reason): ["result": "not_checked", "reason": reason]
        case .pending:
            [
                "result": "pending",
                "reason": "saved; the check goes on and its result will show on the credential",
            ]
        }
    }

    /// What a repeated upload's answer says of the credential saved before: refused when it
    /// is failing, else that it is the one saved before.
    static func repeated(status: String, reason: String?, id: Int64) -> ChannelCredentialCheck {
        if status == "failing" { return .refused(reason ?? "failing") }
        return .notChecked("the same credential was saved before (credential \(id)); nothing new was added")
    }

    static func repeated(_ record: CredentialRecord) -> ChannelCredentialCheck {
        repeated(status: record.status, reason: record.statusReason, id: record.id)
    }

    static func repeated(_ record: ChannelCredentialRecord) -> ChannelCredentialCheck {
        repeated(status: record.status, reason: record.statusReason, id: record.id)
    }
}

extension ChannelCredentialCheck {
    /// Signs in once with a stored credential through the service the config names, with a
    /// transport made for the purpose and shut down after (the CLI runs no gateway). In local
    /// mode nothing is asked (`localMode`): the running gateway's look-alike trusts what is added.
    public static func check(
        _ record: ChannelCredentialRecord, config: GatewayConfig, service: ChannelCredentialService, logger: Logger
    ) async -> ChannelCredentialCheck {
        guard !config.localMode.enabled else { return .localMode }
        let secret: [UInt8]
        do {
            secret = try service.secret(of: record)
        } catch {
            return .refused(SendReason.credentialUnusable.description)
        }
        let transports: GatewayTransports
        do {
            transports = try await GatewayTransports.start(
                config.transports, local: nil, store: service.store, secrets: service,
                uploaded: nil, clock: SystemClock(), logger: logger, only: [record.channel])
        } catch {
            return .unavailable("\(error)")
        }
        let check = await transports.check(
            ChannelCredential(
                id: record.id, channel: record.channel, vendorAppID: record.vendorAppID, clientID: record.clientID,
                secret: secret, options: record.options))
        await transports.shutdown()
        return check
    }
}
