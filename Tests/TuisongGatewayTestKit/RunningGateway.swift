import Foundation
import Logging
import TuisongCore
import TuisongGateway
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongPostgresTestKit

/// A whole gateway (`GatewayRuntime`, as `tuisong serve` runs it) on a loopback port chosen by
/// the system, with its database, master key and initial admin password file in a temporary
/// directory, and the bundled APNs mock unless the environment turns it off.
public final class RunningGateway: Sendable {
    public let runtime: GatewayRuntime
    /// Holds the database (`tuisong.db`), `master.key` and `admin-password`.
    public let directory: URL
    public let baseURL: String
    /// The PostgreSQL test database the gateway runs on, dropped at `stop` (nil: SQLite).
    let database: TestDatabase?

    /// The PostgreSQL test database's URL, for another node started on it (nil: SQLite).
    public var databaseURL: String? { database?.url }

    public var port: Int { runtime.port }

    /// The bundled APNs mock every notification goes to (`apns.local_mock`, on by default).
    public var mock: LookAlikeServer {
        guard let mock = runtime.localMock else {
            preconditionFailure("the gateway was started with TUISONG_APNS_LOCAL_MOCK=false: it has no mock")
        }
        return mock
    }

    /// The repository's `web/` folder: the admin console as `tuisong serve` ships it.
    public static let repositoryWebRoot = repositoryRoot().appending(path: "web")

    /// Starts a gateway configured only from the environment, as the container runs it.
    ///
    /// - Parameters:
    ///   - providers: `TUISONG_PROVIDERS`; nil leaves the config's default list.
    ///   - environment: more `TUISONG_*` variables; they win over the ones made here.
    ///   - directory: where the files go; an existing one is reused as it is (a restart on the
    ///     same database). Nil makes a fresh `tuisong-<name>-<uuid>` under the temporary directory.
    ///   - webRoot: the console's folder; nil names a folder that does not exist, so no console.
    ///   - logLevel: the level of the logger handed to the runtime (`TUISONG_LOG_LEVEL` stays
    ///     `warning` unless `environment` says otherwise).
    ///   - name: the logger's label and the fresh directory's name.
    ///   - clock: the clock the runtime hands its components (credentials, caches, API keys, providers).
    ///   - database: SQLite (a file in `directory`) or a new database in the PostgreSQL test cluster.
    ///   - adminPasswordIterations: PBKDF2's count for the admin password's hash: cheap, since
    ///     the suite starts hundreds of gateways and the production count (600,000) cost ~0.2 s
    ///     of CPU each, a fifth of the suite's; a test of the hashing's cost asks for that.
    public static func start(
        providers: [String]? = nil, environment: [String: String] = [:], directory: URL? = nil,
        webRoot: URL? = nil, logLevel: Logger.Level = .warning, name: String = "gateway",
        clock: any TuisongCore.Clock = SystemClock(), database: PluginStoreBackend = .sqlite,
        transports: TransportRegistry = .standard, lookAlikes: LookAlikeRegistry = .standard,
        adminPasswordIterations: Int = 1_000
    ) async throws -> RunningGateway {
        let created = directory == nil
        let directory =
            directory ?? FileManager.default.temporaryDirectory.appending(path: "tuisong-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var variables = [
            "TUISONG_LISTEN_PORT": "0",
            "TUISONG_DATABASE_PATH": directory.appending(path: "tuisong.db").path,
            "TUISONG_SECURITY_MASTER_KEY_FILE": directory.appending(path: "master.key").path,
            "TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE": directory.appending(path: "admin-password").path,
            "TUISONG_WEB_ROOT": (webRoot ?? directory.appending(path: "no-console")).path,
            "TUISONG_LOG_LEVEL": "warning",
        ]
        if let providers { variables["TUISONG_PROVIDERS"] = providers.joined(separator: ",") }
        // A new database starts as a copy of this process's migrated template (`SQLiteTemplates`,
        // `migratedTemplate`): the runtime opens it as `tuisong serve` opens a migrated one. A
        // PostgreSQL gateway migrated an empty database (every core and plugin migration, a few
        // hundred statements) for each test before (issue #46); one whose environment names
        // another database gets an empty one, as before.
        let freshPostgres = created && (environment["TUISONG_DATABASE_URL"] ?? "").isEmpty
        let postgres =
            database == .postgresql
            ? try TestDatabase(
                template: freshPostgres ? try migratedTemplate(plugins: ProviderRegistry.pluginMigrations) : nil)
            : nil
        if let postgres { variables["TUISONG_DATABASE_URL"] = postgres.url }
        variables.merge(environment) { _, new in new }
        let databasePath = directory.appending(path: "tuisong.db").path
        if created, postgres == nil, variables["TUISONG_DATABASE_PATH"] == databasePath,
            (variables["TUISONG_DATABASE_URL"] ?? "").isEmpty
        {
            try SQLiteTemplates.copyMigrated(plugins: ProviderRegistry.pluginMigrations, to: databasePath)
        }
        var logger = Logger(label: name)
        logger.logLevel = logLevel
        do {
            var config = try GatewayConfig.load(fileContents: nil, environment: variables, transports: transports)
            config.transports.lookAlikes = lookAlikes
            let runtime = try await GatewayRuntime.start(
                config: config, environment: variables, clock: clock,
                adminPasswordIterations: adminPasswordIterations, logger: logger)
            return RunningGateway(runtime: runtime, directory: directory, database: postgres)
        } catch {
            // A directory the caller handed in may hold what it means to restart on.
            if created { try? FileManager.default.removeItem(at: directory) }
            postgres?.drop()
            throw error
        }
    }

    private init(runtime: GatewayRuntime, directory: URL, database: TestDatabase?) {
        self.runtime = runtime
        self.directory = directory
        self.database = database
        self.baseURL = "http://127.0.0.1:\(runtime.port)"
    }

    /// Waits until every device of the message has an outcome (completed, nothing queued or
    /// sending) and returns its status; throws after `timeout`.
    public func completed(messageID: Int64, timeout: Duration = .seconds(60)) async throws -> MessageStatus {
        try await DeliveryWait.completed(runtime.engine, messageID, timeout: timeout)
    }

    /// Shuts the runtime down, then removes the directory unless it is kept for a restart.
    public func stop(keepingDirectory: Bool = false) async {
        await runtime.shutdown()
        if !keepingDirectory {
            try? FileManager.default.removeItem(at: directory)
            database?.drop()
        }
    }
}

/// The package root, found from this source file so tests run from any directory.
private func repositoryRoot() -> URL {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appending(path: "Package.swift").path) { return url }
    }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
}
