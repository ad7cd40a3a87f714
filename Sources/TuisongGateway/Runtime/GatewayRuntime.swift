import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTP
import TuisongLookAlikes
import TuisongPlugin
import TuisongStore
import TuisongTransportKit

/// The composition root: opens the store, loads the master key, starts the local look-alikes
/// when configured, makes the transports the registry declares, builds the delivery engine and
/// the router (native API, providers, console), and runs the HTTP server until `shutdown()`.
public final class GatewayRuntime: Sendable {
    public let config: GatewayConfig
    /// The database: SQLite (a file) or PostgreSQL (shared by several nodes), by `database.url`.
    public let store: any GatewayStore
    public let masterKey: MasterKey
    public let adminPassword: AdminPassword.Bootstrap
    public let engine: DeliveryEngine
    public let credentials: CredentialService
    /// The in-process look-alike of every service (local mode, `GatewayConfig.LocalMode`), or nil when sending to
    /// the services themselves.
    public let localMock: LookAlikeServer?
    /// Every transport the registry declares, as made for this gateway.
    let transports: GatewayTransports
    let credentialBackend: GatewayCredentialBackend
    /// The console API (its login checks are observable in tests).
    let adminAPI: AdminAPI
    let server: HTTPServer
    /// The separate metrics listener (`metrics.listen`), if configured.
    let metricsServer: HTTPServer?
    public let metrics: GatewayMetrics
    /// The threads CPU-bound work runs on (the providers' password hashing), off the request
    /// threads and the cooperative pool.
    let compute: ComputePool
    let logger: Logger
    /// Webhook endpoints as the APIs and the CLI change them.
    public let webhooks: WebhookEndpoints
    /// Sends the webhook outbox's events.
    let webhookSender: WebhookSender
    /// Posts the look-alikes' receipts in local mode.
    let localReceipts: LocalReceiptSink?
    /// Records the receipt POSTs kept in the inbox.
    let receiptDigest: ReceiptDigest
    /// Recounts the live nodes for the providers' rate limits (`NodeShare`); cancelled on shutdown.
    private let nodeShareRefresh = Mutex<Task<Void, Never>?>(nil)

    /// The port the HTTP server is bound to (useful with `listen.port` 0).
    public var port: Int { server.port }

    /// The port of the separate metrics listener, nil when metrics are served on `port`.
    public var metricsPort: Int? { metricsServer?.port }

    /// Where an operator reaches the console.
    public var consoleURL: String {
        if !config.web.publicURL.isEmpty { return config.web.publicURL }
        let host = config.listen.host.contains(":") ? "[\(config.listen.host)]" : config.listen.host
        return "http://\(host):\(port)/"
    }

    /// - Parameter adminPasswordIterations: PBKDF2's count for the admin password hash this
    ///   start makes, injected like `clock` (not a setting, so no deployment lowers it): tests
    ///   start hundreds of gateways, and 600,000 iterations cost ~0.2 s of CPU each.
    public static func start(
        config: GatewayConfig, environment: [String: String] = ProcessInfo.processInfo.environment,
        clock: any Clock = SystemClock(), adminPasswordIterations: Int = PasswordHash.defaultIterations,
        logger: Logger
    ) async throws -> GatewayRuntime {
        // OpenSSL writes to sockets with write(2): a peer that hangs up must not kill us.
        signal(SIGPIPE, SIG_IGN)
        let metrics = GatewayMetrics(
            ownResponseHistograms: config.transports.registry.declarations.compactMap { declaration in
                declaration.responseHistogram.map { (declaration.channel.channel, $0.name, $0.help) }
            })
        let store = try openStore(config, metrics: metrics, logger: logger)
        DataDirectory.secure(config, logger: logger)
        var mock: LookAlikeServer?
        var localReceipts: LocalReceiptSink?
        do {
            let masterKey = try MasterKey.load(config.security, logger: logger)
            let admin = try await AdminPassword.bootstrap(
                settings: store, environment: environment, passwordFile: config.security.initialAdminPasswordFile,
                iterations: adminPasswordIterations)
            let credentials = CredentialService(
                store: store, masterKey: masterKey, clock: clock,
                uploadedFiles: config.transports.registry.uploadedFiles)
            let channelCredentials = ChannelCredentialService(
                store: store, masterKey: masterKey, testTokenHosts: ChannelCredentialService.testTokenHosts(config),
                registry: config.transports.registry)
            let receiptKeys = ReceiptKeys(masterKey: masterKey)
            let appReceipts = AppReceiptTokens(keys: receiptKeys)
            var local: GatewayTransports.Local?
            if config.localMode.enabled {
                let started = try await LocalLookAlikes.start(
                    config: config, store: store, channelSecrets: channelCredentials, logger: logger)
                mock = started.server
                local = started.local
            }
            // One cache of opened callback credentials: the receipt routes read it, the admin API
            // (which shares this service) and the change feed drop what changes.
            let callbackCredentialCache = ReceiptCallbackCredentialCache()
            let callbackCredentials = ReceiptCallbackCredentialService(
                store: store, masterKey: masterKey, registry: config.transports.registry, clock: clock,
                cache: callbackCredentialCache)
            // Local mode with no `receipts.public_url`: the look-alikes post to this listener.
            let receiptBase = ReceiptBaseURL(configured: config.receipts.publicURL)
            let receiptSettings =
                config.receipts.publicURL.isEmpty && mock == nil
                ? nil
                : ReceiptSettings(
                    keys: receiptKeys, sends: StoreReceiptSendLog(store: store), publicURL: { receiptBase.current })
            if let mock, let receiptSettings {
                let sink = try LocalReceiptSink(
                    messages: store, settings: receiptSettings, callbackCredentials: callbackCredentials, logger: logger
                )
                localReceipts = sink
                mock.sendReceipts(to: sink)
            }
            let transports = try await GatewayTransports.start(
                config.transports, local: local, store: store, secrets: channelCredentials,
                uploaded: UploadedCredentials(store: store, opener: credentials, providerTokens: store), clock: clock,
                logger: logger, receipts: receiptSettings, appReceipts: appReceipts)
            if mock != nil {
                // Every uploaded key already stored is known to the look-alike, as Apple knows
                // every key of a team.
                try await LocalLookAlikes.trustUploaded(store: store, transports: transports)
            }
            // One cache of apps: the engine reads it, every writer of an app calls `changed(id:)`,
            // which also drops the API keys resolved to that app.
            let apps = AppCache(store: store, clock: clock)
            var deliverySettings = DeliverySettings(config.delivery, cluster: config.cluster)
            // The services that sign their receipts name the request in each status: a status
            // without Tuisong's tag finds its message by it (one row per request).
            deliverySettings.serviceRequestChannels = Set(
                config.transports.registry.declarations.filter { $0.receipts?.usesCallbackCredentials == true }
                    .map(\.channel.channel))
            let engine = DeliveryEngine(
                store: store,
                transport: MeteredTransport(ChannelRouter(transports.byChannel), metrics: metrics),
                settings: deliverySettings, clock: clock, logger: logger,
                apps: apps,
                observer: metrics)
            // A hold decided from a lookup cached before a credential's commit is released once the
            // route can send (the credential's own release may have run before the hold).
            engine.setHoldWatcher(
                HeldRouteReleaser(
                    store: store, transports: transports, engine: engine, changes: store, clock: clock, logger: logger))
            MetricsEndpoint.addGauges(to: metrics, transports: transports, store: store)
            let health = store.health
            metrics.addGauge(
                "tuisong_database_unavailable",
                "1 while the database refuses writes, by reason: insufficient_storage (its disk is full), database_unavailable (it cannot be reached or opened); 0 otherwise.",
                labels: ["reason"]
            ) {
                let kind = health.trouble?.kind
                return [StoreError.Unavailability.storageFull, .databaseDown].map {
                    ([$0.rawValue], kind == $0 ? 1 : 0)
                }
            }
            let authenticator = APIKeyAuthenticator(store: store, clock: clock, logger: logger)
            apps.onChange { id in authenticator.forget(app: id) }
            let webhooks = WebhookEndpoints(
                store: store, box: masterKey.box, allowPrivateNetworks: config.webhooks.allowPrivateNetworks,
                clock: clock)
            var webhookLogger = Logger(label: "tuisong.webhooks")
            webhookLogger.logLevel = logger.logLevel
            let webhookSender = try WebhookSender(
                store: store, endpoints: webhooks,
                settings: WebhookSender.Settings(
                    allowPrivateNetworks: config.webhooks.allowPrivateNetworks,
                    timeout: .seconds(config.webhooks.timeoutSeconds),
                    concurrencyPerEndpoint: config.webhooks.concurrencyPerEndpoint,
                    lease: TimeInterval(config.webhooks.leaseSeconds)),
                metrics: metrics, logger: webhookLogger, clock: clock, owner: WebhookSender.makeOwner())
            metrics.addGauge(
                "tuisong_webhook_outbox_depth", "Webhook events waiting to be sent (pending outbox rows)."
            ) {
                guard let depth = try? await store.webhookOutboxDepth() else { return [] }
                return [([], Double(depth))]
            }
            metrics.addGauge(
                "tuisong_webhook_endpoints_disabled",
                "Webhook endpoints disabled (410 Gone, five days of failures, or by hand)."
            ) {
                guard let all = try? await store.webhookEndpoints(appID: nil) else { return [] }
                return [([], Double(all.filter { !$0.isEnabled }.count))]
            }
            // Changes made by other nodes (and the CLI) drop this node's caches; submits wake idle nodes.
            StoreChangeWiring.subscribe(
                store, store: store, apps: apps, transports: transports, engine: engine, logger: logger,
                receiptCallbackCredentials: callbackCredentialCache,
                webhooksChanged: {
                    store.webhookEndpointsChanged()
                    webhookSender.endpointsChanged()
                })
            let gateway = WakingGateway(engine: engine, changes: store)

            let router = Router(defaultBodyLimit: config.listen.maxBodyBytes)
            let metricsServer = mountMetrics(config, metrics: metrics, on: router, logger: logger)
            router.add(.GET, "/healthz") { _ in await Health.check(store: store) }
            NativePushAPI(
                engine: engine, authenticator: authenticator, clock: clock, changes: store,
                transports: config.transports.registry, receipts: store
            ).register(on: router)
            // SQLite's one writer: receipt POSTs take turns behind the pushes' flushes (ReceiptWriter).
            let receiptWriter = ReceiptWriter(
                store: store, writersTakeTurns: !store.sharedDatabase.dialect.hasConcurrentWriters)
            // The services' receipts are recorded by the digest, after the pushes' own work.
            let receiptDigest = ReceiptDigest(
                store: store, registry: config.transports.registry, keys: receiptKeys, metrics: metrics, clock: clock,
                logger: logger,
                pacing: ReceiptDigestPacing(maxLag: .milliseconds(Int64(config.receipts.digestMaxLagSeconds * 1000))),
                sending: { engine.sendingMessages > 0 })
            metrics.addGauge(
                "tuisong_receipts_waiting", "Receipt statuses answered and not yet recorded (the receipt inbox)."
            ) {
                guard let waiting = try? await store.waitingReceiptStatuses(appID: nil) else { return [] }
                return [([], Double(waiting))]
            }
            ReceiptRoutes(
                store: store, writer: receiptWriter, digest: receiptDigest, registry: config.transports.registry,
                keys: receiptKeys, callbackCredentials: callbackCredentials, clock: clock, metrics: metrics,
                logger: logger
            ).register(on: router)
            let nodeShare = NodeShare()
            NativeReceiptAPI(
                store: store, writer: receiptWriter, keys: receiptKeys, clock: clock, metrics: metrics, logger: logger,
                limits: AppReceiptLimits(config.receipts, clock: clock, share: nodeShare)
            ).register(on: router)
            NativeWebhookAPI(webhooks: webhooks, store: store, authenticator: authenticator).register(on: router)
            let compute = ComputePool.standard()
            // The providers' caches of opened apps forget an app when the one app cache does.
            let appChanges = AppChangeNotices()
            apps.onChange { appChanges.changed(appID: $0) }
            let providers = try ProviderRegistry.mount(config.providers, router: router) { name in
                // At the gateway's level, whatever handler the process bootstrapped.
                var providerLogger = Logger(label: "tuisong.\(name)")
                providerLogger.logLevel = logger.logLevel
                return ProviderContext(
                    store: store, accounts: store, database: store.sharedDatabase, gateway: gateway,
                    secrets: MasterKeySealer(masterKey: masterKey), clock: clock, logger: providerLogger,
                    configuration: config.providerSections[name], nodeShare: nodeShare, compute: compute,
                    appChanges: appChanges)
            }
            // Mounted once the providers are: a registration may carry their device fields
            // (JPush's registration_id) and each adds its own to the answer.
            NativeDeviceAPI(
                store: store, authenticator: authenticator, logger: logger,
                channels: config.transports.registry.channels, providers: providers
            ).register(on: router)
            engine.setPolicies(deliveryPolicies(of: providers))
            // Started once the policies are known: a message left sending by the last stop must
            // not be resumed on the one-payload path.
            try await engine.start()
            receiptDigest.start()
            let credentialBackend = GatewayCredentialBackend(
                credentials: credentials, store: store, transports: transports, engine: engine, localMock: mock,
                channelCredentials: channelCredentials, clock: clock, logger: logger,
                changes: store, apps: apps)
            let adminAPI = AdminAPI(
                store: store, masterKey: masterKey, apiKeys: authenticator, gateway: gateway,
                credentials: credentialBackend, apps: apps, config: config, providers: providers, clock: clock,
                logger: logger, changes: store, webhooks: webhooks, receiptBaseURL: { receiptBase.current },
                receiptCredentials: callbackCredentials)
            adminAPI.register(on: router)
            let observation = HTTPObservation.middleware(router: router, metrics: metrics, logger: logger)
            router.setMiddleware { request, next in
                await observation(request) { request in await adminAPI.gate(request, next) }
            }
            try mountConsole(config, on: router, logger: logger)

            let server = HTTPServer(
                configuration: HTTPServer.Configuration(config.listen, http: config.http), router: router)
            webhookSender.start()
            do {
                try server.start()
                receiptBase.bindListener(host: config.listen.host, port: server.port)
                do {
                    try metricsServer?.start()
                } catch {
                    await server.shutdown()
                    throw error
                }
            } catch {
                await receiptDigest.stop()
                await webhookSender.stop()
                await engine.stop()
                await transports.shutdown()
                throw error
            }
            let runtime = GatewayRuntime(
                config: config, store: store, masterKey: masterKey, adminPassword: admin, engine: engine,
                credentials: credentials, localMock: mock, transports: transports, credentialBackend: credentialBackend,
                adminAPI: adminAPI, server: server, metricsServer: metricsServer, metrics: metrics, compute: compute,
                logger: logger, webhooks: webhooks, webhookSender: webhookSender, localReceipts: localReceipts,
                receiptDigest: receiptDigest)
            runtime.nodeShareRefresh.withLock { $0 = nodeShare.refreshing(from: store, clock: clock, logger: logger) }
            return runtime
        } catch {
            localReceipts?.shutdown()
            mock?.shutdown()
            try? store.close()
            throw error
        }
    }

    /// The per-recipient policies of the mounted providers that have one, by provider name.
    private static func deliveryPolicies(of providers: [any PushProvider]) -> [String: any DeliveryPolicy] {
        var policies: [String: any DeliveryPolicy] = [:]
        for provider in providers {
            if let policy = provider.deliveryPolicy { policies[type(of: provider).name] = policy }
        }
        return policies
    }

    /// The database `database.url` (or `database.path`) names, its write times observed by
    /// `metrics`.
    private static func openStore(_ config: GatewayConfig, metrics: GatewayMetrics, logger: Logger) throws
        -> any GatewayStore
    {
        let storeWrites = metrics.addHistogram(
            "tuisong_store_write_seconds",
            "Seconds a store write transaction took, waiting for the writer connection included.",
            buckets: GatewayMetrics.latencyBuckets)
        // The store's own clock stays the system's (timestamps written to the database), as before.
        var options = StoreOpener.Options(config)
        options.writeObserver = { elapsed in storeWrites.observe(MetricsEndpoint.seconds(elapsed)) }
        var storeLogger = Logger(label: "tuisong.store")
        storeLogger.logLevel = logger.logLevel
        options.logger = storeLogger
        let store = try StoreOpener.open(url: config.database.effectiveURL, options: options)
        logger.info(
            "database open",
            metadata: ["backend": "\(store.backendName)", "location": "\(store.location)"])
        if let sqlite = store as? SQLiteStore {
            for change in sqlite.permissionChanges {
                logger.notice("database file readable by others, now private", metadata: ["change": "\(change)"])
            }
        }
        return store
    }

    /// `/metrics` on the main router, or on a listener of its own (`metrics.listen`), which is
    /// returned unstarted; nil when metrics are off or share the main listener.
    private static func mountMetrics(
        _ config: GatewayConfig, metrics: GatewayMetrics, on router: Router, logger: Logger
    ) -> HTTPServer? {
        guard config.metrics.enabled else { return nil }
        let scrape = MetricsEndpoint.handler(metrics: metrics, bearerToken: config.metrics.bearerToken)
        guard let (host, port) = GatewayConfig.hostAndPort(config.metrics.listen) else {
            router.add(.GET, "/metrics", handler: scrape)
            return nil
        }
        let metricsRouter = Router(defaultBodyLimit: 1024)
        metricsRouter.setMiddleware(HTTPObservation.middleware(router: metricsRouter, metrics: metrics, logger: logger))
        metricsRouter.add(.GET, "/metrics", handler: scrape)
        return HTTPServer(
            configuration: HTTPServer.Configuration(
                host: host, port: port, threads: 1, connectionTimeout: 30, requestTimeout: 30, maxHeaderBytes: 8192,
                maxConnections: 64),
            router: metricsRouter)
    }

    /// The console's static files from `web.root`, when it exists.
    private static func mountConsole(_ config: GatewayConfig, on router: Router, logger: Logger) throws {
        guard FileManager.default.fileExists(atPath: config.web.root) else {
            logger.warning(
                "web.root does not exist; the console is not served", metadata: ["path": "\(config.web.root)"])
            return
        }
        router.setStaticFiles(try StaticFiles(root: config.web.root))
    }

    private init(
        config: GatewayConfig, store: any GatewayStore, masterKey: MasterKey, adminPassword: AdminPassword.Bootstrap,
        engine: DeliveryEngine, credentials: CredentialService, localMock: LookAlikeServer?,
        transports: GatewayTransports, credentialBackend: GatewayCredentialBackend, adminAPI: AdminAPI,
        server: HTTPServer, metricsServer: HTTPServer?, metrics: GatewayMetrics, compute: ComputePool, logger: Logger,
        webhooks: WebhookEndpoints, webhookSender: WebhookSender, localReceipts: LocalReceiptSink?,
        receiptDigest: ReceiptDigest
    ) {
        self.localReceipts = localReceipts
        self.receiptDigest = receiptDigest
        self.webhooks = webhooks
        self.webhookSender = webhookSender
        self.compute = compute
        self.adminAPI = adminAPI
        self.metricsServer = metricsServer
        self.metrics = metrics
        self.config = config
        self.store = store
        self.masterKey = masterKey
        self.adminPassword = adminPassword
        self.engine = engine
        self.credentials = credentials
        self.localMock = localMock
        self.transports = transports
        self.credentialBackend = credentialBackend
        self.server = server
        self.logger = logger
    }

    /// Returns once every receipt POST answered before the call is recorded and counted.
    public func receiptsDigested() async { await receiptDigest.drained() }

    /// Adds an uploaded credential (a `.p8` key, a certificate) to an app: validated, sealed,
    /// stored; deliveries held for want of one are released.
    public func addCredential(
        _ upload: CredentialUpload, appID: Int64, environment: PushEnvironment, selector: String? = nil
    ) async throws -> CredentialRecord {
        try await credentialBackend.add(upload, appID: appID, environment: environment, selector: selector)
    }

    /// Stops accepting, lets in-flight requests finish, stops the delivery engine (what it
    /// had not flushed is sent again on the next start), closes the transports' connections and
    /// the database.
    public func shutdown() async {
        nodeShareRefresh.withLock { $0?.cancel() }
        await server.shutdown()
        await metricsServer?.shutdown()
        // A credential check answered `pending` writes its result when it ends: before the store closes.
        await credentialBackend.pendingChecks.finish()
        compute.shutdown()
        await engine.stop()
        await receiptDigest.stop()
        await webhookSender.stop()
        await transports.shutdown()
        localMock?.shutdown()
        localReceipts?.shutdown()
        do {
            try store.close()
        } catch {
            logger.error("closing the database failed", metadata: ["error": "\(error)"])
        }
    }

    /// The CLI's probe of a `.p8` key just added (it runs no gateway): one push to a made-up
    /// device token through the transport the registry makes for uploaded credentials, as the
    /// console's add does. Not checked in local mode (the running gateway's look-alike trusts
    /// what is added) nor for certificates.
    public static func probeKey(
        _ record: CredentialRecord, topic: String, config: GatewayConfig, credentials: CredentialService,
        store: any GatewayStore
    ) async -> ChannelCredentialCheck {
        guard !config.localMode.enabled else { return .localMode }
        guard record.kind == .p8 else {
            return .notChecked("a certificate is checked in the TLS handshake of the first push")
        }
        // The transports with no declared form take the uploaded files: made for the purpose.
        let uploading = config.transports.registry.declarations.filter { $0.credentialForm == nil }
        let transports: GatewayTransports
        do {
            transports = try await GatewayTransports.start(
                config.transports, local: nil, store: store,
                secrets: ChannelCredentialService(store: store, masterKey: credentials.masterKey),
                uploaded: UploadedCredentials(store: store, opener: credentials), clock: SystemClock(),
                logger: Logger(label: "tuisong.credential-probe"), only: Set(uploading.map(\.channel.channel)))
        } catch {
            return .unavailable("\(error)")
        }
        let probe: CredentialProbe?
        do {
            probe = try await transports.uploaded?.probe(record, topic, .seconds(10))
        } catch {
            probe = .unavailable("\(error)")
        }
        await transports.shutdown()
        switch probe {
        case .accepted?: return .accepted
        case .refused(let reason)?: return .refused(reason)
        case .unavailable(let reason)?: return .unavailable(reason)
        case nil: return .notChecked("a certificate is checked in the TLS handshake of the first push")
        }
    }
}

/// Local mode: the bundled look-alike of every push service in-process, with throwaway
/// keys kept next to the database (so credentials stored against it keep working across
/// restarts); the transports sign in with its throwaway credentials when an app has none.
enum LocalLookAlikes {
    struct Started {
        var server: LookAlikeServer
        var local: GatewayTransports.Local
    }

    static func start(
        config: GatewayConfig, store: any GatewayStore, channelSecrets: any ChannelSecretOpener, logger: Logger
    ) async throws -> Started {
        let directory = config.database.directory
        let lookAlikes = config.transports.lookAlikes
        let names = lookAlikes.legacyNames
        let path = directory + "/\(names.command)-local.json"
        let setup = try LookAlikeLocalSetup.loadOrGenerate(at: path, bundleID: "tuisong.local", lookAlikes: lookAlikes)
        var configuration = setup.configuration(
            host: "127.0.0.1", port: config.localMode.port, lookAlikes: lookAlikes)
        // The same magic tokens as the look-alike command's `--magic-tokens` (docs/android.md, "Local mode"):
        // a newcomer sees an invalidation and a retry with no faults file.
        configuration.faults = .magicTokenPrefixes(lookAlikes: lookAlikes)
        var mockLogger = logger
        mockLogger.logLevel = max(logger.logLevel, .notice)
        let server = try LookAlikeServer(
            lookAlikes: lookAlikes, configuration: configuration, certificate: setup.serverCertificate,
            key: setup.serverKey, logger: mockLogger)
        try server.start()
        // Every channel credential already stored is known to its look-alike service, as each
        // real service knows the accounts and clients its console issued.
        for app in try await store.apps() {
            for record in try await store.formCredentials(appID: app.id) {
                trust(record, secrets: channelSecrets, on: server, logger: logger)
            }
        }
        let baseURL = "https://127.0.0.1:\(server.port)"
        logger.notice(
            "local mode: sending \(PushChannel.list()) pushes to the bundled look-alike (\(GatewayConfig.LocalMode.enabledKey))",
            // The key log readers have filtered on since the look-alike was the only one.
            metadata: ["\(names.localModeSection)_url": "\(baseURL)"])
        let caFile = directory + "/local-mock-ca.pem"
        try setup.writeCAFile(to: caFile)
        var fallbacks: [PushChannel: ChannelCredential] = [:]
        for channel in config.transports.registry.channels {
            guard
                let fallback = setup.fallbackCredential(
                    channel: channel.rawValue, baseURL: baseURL, lookAlikes: lookAlikes)
            else { continue }
            fallbacks[channel] = ChannelCredential(
                id: 0, channel: channel, vendorAppID: fallback.vendorAppID, clientID: fallback.clientID,
                secret: fallback.secret, options: fallback.options)
        }
        let local = GatewayTransports.Local(
            baseURL: baseURL, caFile: caFile, caCertificatePEM: setup.caCertificatePEM, fallbacks: fallbacks,
            trust: { credential in
                try server.trust(
                    channel: credential.channel.rawValue, vendorAppID: credential.vendorAppID,
                    clientID: credential.clientID, secret: credential.secret)
            })
        return Started(server: server, local: local)
    }

    /// Teaches the look-alike every uploaded credential already stored (through the transport
    /// that reads them: it knows what the look-alike checks them with).
    static func trustUploaded(store: any GatewayStore, transports: GatewayTransports) async throws {
        let hooks = transports.uploadedCredentialHooks
        guard !hooks.isEmpty else { return }
        for app in try await store.apps() {
            for record in try await store.credentials(appID: app.id) {
                for hook in hooks { hook.trustLocally(record) }
            }
        }
    }

    /// Teaches the look-alike of its channel a stored channel credential (an uploaded service
    /// account's public key, a client, an app…), so local mode delivers with it as the real
    /// service would.
    static func trust(
        _ record: ChannelCredentialRecord, secrets: any ChannelSecretOpener, on server: LookAlikeServer, logger: Logger
    ) {
        do {
            try server.trust(
                channel: record.channel.rawValue, vendorAppID: record.vendorAppID, clientID: record.clientID,
                secret: try secrets.secret(of: record))
        } catch {
            logger.warning(
                "local mode: the look-alike cannot learn a stored channel credential",
                metadata: ["credential": "\(record.id)", "channel": "\(record.channel.rawValue)", "error": "\(error)"])
        }
    }
}

enum Health {
    static func check(store: any Store) async -> Response {
        do {
            try await store.ping()
        } catch {
            return .json(object: ["status": "unavailable", "database": "\(error)"], status: 503)
        }
        // A read (the ping) works on a full disk; the writes say whether anything can be stored.
        if let trouble = store.health.trouble {
            var response = Response.json(
                object: [
                    "status": "unavailable", "database": trouble.kind.rawValue,
                    "since": ISO8601DateFormatter().string(from: trouble.since),
                    "message": trouble.kind.explanation,
                ], status: 503)
            response.headers.add(name: "Retry-After", value: String(trouble.kind.retryAfterSeconds))
            return response
        }
        return .json(object: ["status": "ok", "database": "ok"])
    }
}

extension StoreOpener.Options {
    /// The store options the configuration sets (`database.*`, `cluster.*`), the plugins'
    /// migrations those of every provider this build knows.
    public init(_ config: GatewayConfig, clock: any Clock = SystemClock()) {
        self.init(
            clock: clock, pluginMigrations: ProviderRegistry.pluginMigrations,
            synchronousFull: config.database.synchronousFull, poolSize: config.database.poolSize,
            leaseDuration: .seconds(config.cluster.leaseSeconds), sliceSize: config.cluster.sliceSize,
            claimPace: .milliseconds(config.cluster.claimPaceMilliseconds))
    }
}
