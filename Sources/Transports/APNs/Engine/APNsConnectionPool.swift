import Foundation
public import Logging
public import TuisongCore
public import TuisongCrypto

/// HTTP/2 connections to one APNs endpoint for one credential: the shared HTTP/2 engine's pool
/// (`HTTP2ConnectionPool`) with APNs's credential on it (a client certificate in the TLS
/// context, or a provider token on every request) and its answers read as APNs's.
///
/// Requests are spread over `connections` connections (the least-loaded one with a free
/// stream), never above what each server connection allows (SETTINGS_MAX_CONCURRENT_STREAMS,
/// and one stream until a token-authenticated connection has had a request accepted).
/// Requests beyond that wait in a queue. GOAWAY, refused streams and broken connections are
/// handled by retrying on another connection; every request ends with a response or an
/// `APNsTransportError`, at the latest when `requestTimeout` runs out.
///
/// One pool per (credential, environment): a connection never carries two teams' tokens.
///
/// ```swift
/// let pool = try APNsConnectionPool(
///     configuration: .init(endpoint: .sandbox), credential: credential, logger: logger)
/// let response = try await pool.send(request)
/// ```
public final class APNsConnectionPool: APNsTransport {
    public struct Configuration: Sendable {
        public var endpoint: APNsEndpoint
        /// Connections kept open (APNs allows several for volume).
        public var connections: Int = 2
        /// DNS + TCP + TLS + the server's first SETTINGS.
        public var connectTimeout: Duration = .seconds(10)
        /// From `send` to the response, including waiting for a stream and retries.
        public var requestTimeout: Duration = .seconds(30)
        /// An idle connection sends a PING this often.
        public var pingInterval: Duration = .seconds(60)
        /// A PING unanswered this long means the connection is dead.
        public var pingTimeout: Duration = .seconds(10)
        /// A PEM file of extra CAs trusted besides the system's (the local mock's throwaway CA).
        public var caFile: String?
        /// Extra trusted CAs given as certificates.
        public var extraCACertificates: [Certificate] = []
        /// Token auth: how often the JWT is re-minted (clamped to APNs' 20–60 minutes).
        public var tokenRefreshInterval: Duration = .seconds(50 * 60)
        /// How often a request that was in flight on a broken connection is retried.
        public var maxRetriesOnConnectionLoss: Int = 3
        /// Reconnect backoff after failures: doubles from `initial` up to `maximum`, jittered.
        public var reconnectBackoffInitial: Duration = .milliseconds(200)
        public var reconnectBackoffMaximum: Duration = .seconds(30)
        /// While requests wait for a connection, attempts are at most this far apart (jittered
        /// down to half), so an endpoint that comes back after an outage is in use again within
        /// about this long. `reconnectBackoffMaximum` applies only while nothing waits.
        public var reconnectBackoffMaximumWhileQueued: Duration = .seconds(1)

        public init(endpoint: APNsEndpoint) {
            self.endpoint = endpoint
        }
    }

    /// The shared HTTP/2 engine's pool; this type adds APNs's credential and answers.
    let engine: HTTP2ConnectionPool
    private let authentication: PoolAuthentication

    /// Builds the TLS context for `credential` (a client certificate is checked against its
    /// key here) and starts the pool's event loop thread. Connections open on the first
    /// request and are then kept open.
    ///
    /// - Parameter clock: wall-clock time for token issue times (tests move it).
    /// - Parameter providerTokens: where the gateway's nodes share provider tokens (nil: this
    ///   pool signs its own; see `ProviderTokenCache`).
    public convenience init(
        configuration: Configuration, credential: APNsCredentialMaterial,
        clock: any TuisongCore.Clock = SystemClock(), providerTokens: (any ProviderTokenStore)? = nil, logger: Logger
    ) throws(APNsTransportError) {
        let tlsContext = try credential.makeTLSContext(
            caFile: configuration.caFile, extraCACertificates: configuration.extraCACertificates)
        let authentication: PoolAuthentication
        switch credential {
        case .token(let key, let keyID, let teamID):
            do {
                authentication = .token(
                    try ProviderTokenCache(
                        key: key, keyID: keyID, teamID: teamID,
                        refreshInterval: configuration.tokenRefreshInterval, clock: clock, shared: providerTokens,
                        logger: logger))
            } catch {
                throw APNsTransportError(.credentialFailed, "token key \(keyID): \(error.message)")
            }
        case .certificate:
            authentication = .certificate
        }
        var logger = logger
        logger[metadataKey: "apns"] = "\(credential.summary)"
        try self.init(
            configuration: configuration, authentication: authentication, tlsContext: tlsContext,
            logger: logger)
    }

    init(
        configuration: Configuration, authentication: PoolAuthentication,
        tlsContext: TLSContext, logger: Logger
    ) throws(APNsTransportError) {
        var engineConfiguration = HTTP2ConnectionPool.Configuration(label: "APNs", endpoint: configuration.endpoint)
        engineConfiguration.connections = configuration.connections
        engineConfiguration.connectTimeout = configuration.connectTimeout
        engineConfiguration.requestTimeout = configuration.requestTimeout
        engineConfiguration.pingInterval = configuration.pingInterval
        engineConfiguration.pingTimeout = configuration.pingTimeout
        engineConfiguration.maxRetriesOnConnectionLoss = configuration.maxRetriesOnConnectionLoss
        engineConfiguration.reconnectBackoffInitial = configuration.reconnectBackoffInitial
        engineConfiguration.reconnectBackoffMaximum = configuration.reconnectBackoffMaximum
        engineConfiguration.reconnectBackoffMaximumWhileQueued = configuration.reconnectBackoffMaximumWhileQueued
        engineConfiguration.responseHeaders = ["apns-id"]
        // APNs error bodies are tiny.
        engineConfiguration.maxResponseBodyBytes = 16 * 1024
        self.authentication = authentication
        var authorizer: (any HTTP2Authorizer)?
        if case .token(let cache) = authentication { authorizer = ProviderTokenAuthorizer(cache: cache) }
        do {
            engine = try HTTP2ConnectionPool(
                configuration: engineConfiguration, tlsContext: tlsContext, authorizer: authorizer, logger: logger)
        } catch {
            throw APNsTransportError(error)
        }
    }

    /// With a shared provider token store: adopts or signs and offers the provider token now
    /// (one database exchange), so the first requests do not sign one of their own. Does
    /// nothing for certificate authentication or without a store.
    public func prepareProviderToken() async {
        guard case .token(let cache) = authentication else { return }
        await cache.prepare()
    }

    /// Opens the pool's connections now (TLS and HTTP/2 set-up) instead of on the first
    /// request, so a push about to be sent does not wait for them. No effect once open.
    public func connect() {
        engine.connect()
    }

    /// Sends one notification and waits for APNs' answer (any HTTP status is a response).
    /// Cancelling the calling task resets the stream and throws `.cancelled`.
    public func send(_ request: APNsRequest) async throws(APNsTransportError) -> APNsResponse {
        do {
            return APNsResponse(try await engine.send(request))
        } catch {
            throw APNsTransportError(error)
        }
    }

    /// Sends many notifications with one hand-off to the pool's thread, and returns at once.
    ///
    /// `onAnswers` runs on the pool's event loop thread at the end of each loop iteration in
    /// which requests of this batch finished, with their answers (`index` is the position in
    /// `requests`). Across its calls every request is answered exactly once: with APNs'
    /// response (any status), or with an `APNsTransportError` (timeout, connection lost too
    /// often, shutdown, …) at the latest when `requestTimeout` runs out. The handler shares
    /// the thread that drives the connections: keep it short and never block in it. An empty
    /// batch is never answered. Requests of a batch cannot be cancelled one by one; `shutdown`
    /// fails those still waiting.
    ///
    /// ```swift
    /// pool.send(requests) { answers in
    ///     for answer in answers { record(answer.index, answer.result) }
    /// }
    /// ```
    public func send(
        _ requests: [APNsRequest], onAnswers: @escaping @Sendable ([APNsBatchAnswer]) -> Void
    ) {
        engine.send(requests) { answers in
            onAnswers(
                answers.map { answer in
                    APNsBatchAnswer(
                        index: answer.index,
                        result: answer.result.map(APNsResponse.init).mapError(APNsTransportError.init))
                })
        }
    }

    /// Fails waiting and in-flight requests with `.shutdown`, closes the connections (GOAWAY)
    /// and stops the pool's thread. Idempotent.
    public func shutdown() async {
        await engine.shutdown()
    }

    public var statistics: PoolStatistics {
        engine.statistics
    }
}

/// One answer to a request sent with `APNsConnectionPool.send(_:onAnswers:)`.
public struct APNsBatchAnswer: Sendable {
    /// The request's position in the array given to `send(_:onAnswers:)`.
    public var index: Int
    /// APNs' response (any HTTP status), or why there is none.
    public var result: Result<APNsResponse, APNsTransportError>

    public init(index: Int, result: Result<APNsResponse, APNsTransportError>) {
        self.index = index
        self.result = result
    }
}

/// How requests on a pool authenticate.
enum PoolAuthentication: Sendable {
    /// `authorization: bearer <JWT>` on every request, from the credential's shared cache.
    case token(ProviderTokenCache)
    /// The client certificate is in the TLS context.
    case certificate
}

extension APNsResponse {
    /// APNs's reading of the engine's answer: its `apns-id` header and its error body.
    init(_ response: HTTP2Response) {
        self.init(status: response.status, apnsID: response.header("apns-id"), body: response.body)
    }
}
