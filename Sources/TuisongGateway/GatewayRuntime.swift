import Foundation
import Logging
import TuisongCore
import TuisongHTTP
import TuisongStore

/// The composition root: opens the store, loads the master key, builds the router from the
/// native API and the mounted providers, and runs the HTTP server until `shutdown()`.
public final class GatewayRuntime: Sendable {
    public let config: GatewayConfig
    public let store: SQLiteStore
    public let masterKey: MasterKey
    public let adminPassword: AdminPassword.Bootstrap
    let server: HTTPServer
    let logger: Logger

    /// The port the HTTP server is bound to (useful with `listen.port` 0).
    public var port: Int { server.port }

    /// Where an operator reaches the console.
    public var consoleURL: String {
        if !config.web.publicURL.isEmpty { return config.web.publicURL }
        let host = config.listen.host.contains(":") ? "[\(config.listen.host)]" : config.listen.host
        return "http://\(host):\(port)/"
    }

    public static func start(
        config: GatewayConfig, environment: [String: String] = ProcessInfo.processInfo.environment,
        clock: any Clock = SystemClock(), logger: Logger
    ) async throws -> GatewayRuntime {
        let store = try SQLiteStore(
            path: config.database.path,
            configuration: SQLiteStore.Options(synchronousFull: config.database.synchronousFull))
        do {
            let masterKey = try MasterKey.load(config.security, logger: logger)
            let admin = try await AdminPassword.bootstrap(
                settings: store, environment: environment,
                passwordFile: config.security.initialAdminPasswordFile)

            let router = Router(defaultBodyLimit: config.listen.maxBodyBytes)
            let authenticator = APIKeyAuthenticator(store: store, clock: clock, logger: logger)
            router.add(.GET, "/healthz") { _ in await Health.check(store: store) }
            NativeDeviceAPI(store: store, authenticator: authenticator, logger: logger).register(on: router)
            AdminAPI(
                store: store, masterKey: masterKey, apiKeys: authenticator, gateway: nil, config: config,
                clock: clock, logger: logger
            ).register(on: router)
            if FileManager.default.fileExists(atPath: config.web.root) {
                router.setStaticFiles(try StaticFiles(root: config.web.root))
            } else {
                logger.warning("web.root \(config.web.root) does not exist; the console is not served")
            }

            let server = HTTPServer(
                configuration: HTTPServer.Configuration(
                    host: config.listen.host, port: config.listen.port,
                    threads: config.listen.threads == 0
                        ? ProcessInfo.processInfo.activeProcessorCount : config.listen.threads,
                    connectionTimeout: Double(config.listen.connectionTimeoutSeconds),
                    requestTimeout: Double(config.listen.requestTimeoutSeconds),
                    maxHeaderBytes: config.listen.maxHeaderBytes,
                    maxConnections: config.listen.maxConnections),
                router: router)
            try server.start()
            return GatewayRuntime(
                config: config, store: store, masterKey: masterKey, adminPassword: admin,
                server: server, logger: logger)
        } catch {
            try? store.close()
            throw error
        }
    }

    private init(
        config: GatewayConfig, store: SQLiteStore, masterKey: MasterKey,
        adminPassword: AdminPassword.Bootstrap, server: HTTPServer, logger: Logger
    ) {
        self.config = config
        self.store = store
        self.masterKey = masterKey
        self.adminPassword = adminPassword
        self.server = server
        self.logger = logger
    }

    /// Stops accepting, lets in-flight requests finish, then closes the database cleanly.
    public func shutdown() async {
        await server.shutdown()
        do {
            try store.close()
        } catch {
            logger.error("closing the database failed: \(error)")
        }
    }
}

enum Health {
    static func check(store: any Store) async -> Response {
        do {
            try await store.ping()
            return .json(object: ["status": "ok", "database": "ok"])
        } catch {
            return .json(object: ["status": "unavailable", "database": "\(error)"], status: 503)
        }
    }
}
