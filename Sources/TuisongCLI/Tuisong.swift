import ArgumentParser
import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongGateway
import TuisongStore

#if canImport(Glibc)
    import Glibc
#endif

/// The `tuisong` command line, run by a binary with the transports it links: `tuisong` with
/// `TransportRegistry.standard`, the tests' binary with the transports kept in the tests added.
/// Every flag, help text and list of services is read from that registry.
public enum TuisongCommandLine {
    /// Declares the registry's channels process-wide, then parses the arguments and runs the command.
    public static func run(transports: TransportRegistry) async {
        TransportRegistry.install()
        ChannelCatalog.shared.install(transports.declarations.map(\.channel))
        linked.withLock { $0 = transports }
        await Tuisong.main(nil)
    }

    private static let linked = Mutex(TransportRegistry.standard)

    /// The transports this binary was run with: what every command's config is typed for, what
    /// `credential add` offers and what `serve` sends through.
    static var transports: TransportRegistry { linked.withLock { $0 } }
}

struct Tuisong: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tuisong",
        abstract:
            "Tuisong (推送): a self-hosted multi-vendor push gateway delivering through \(PushChannel.list()).",
        version: TuisongVersion.current,
        subcommands: [
            Serve.self, CheckConfig.self, Migrate.self, Version.self, AppCommand.self, DeviceCommand.self,
            CredentialCommand.self, WebhookCommand.self, LookAlikeCommand.self,
        ])

}

/// `--config FILE`, shared by every subcommand.
struct ConfigOptions: ParsableArguments {
    static let defaultPath = "config/tuisong.json"

    @Option(
        name: .long,
        help: """
            The JSON config file overlaying the embedded default (default: \(Self.defaultPath) when it \
            exists in the current directory, else the embedded default alone).
            """)
    var config: String?

    /// The file the config comes from: `--config`, else `config/tuisong.json` when the current
    /// directory has one; nil = the embedded default alone (a binary run elsewhere).
    var path: String? {
        config ?? (FileManager.default.fileExists(atPath: Self.defaultPath) ? Self.defaultPath : nil)
    }

    /// Where the config came from, for people: `config /srv/tuisong/config/tuisong.json` or
    /// `the embedded default config (no config/tuisong.json in /tmp)`.
    var source: String {
        guard let path else { return location }
        return "config \(absolutePath(path))"
    }

    /// The config file's absolute path, or which default it is: the start banner's `config:` line.
    var location: String {
        guard let path else {
            return "the embedded default config (no \(Self.defaultPath) in \(FileManager.default.currentDirectoryPath))"
        }
        return absolutePath(path)
    }

    /// The effective config. Without `--config` it says on standard error which config and
    /// database it took (`announce`), so a command run from another directory cannot quietly
    /// work on another database than the server's.
    func load(announce: Bool = true) throws -> GatewayConfig {
        let loaded: GatewayConfig
        do {
            loaded = try GatewayConfig.load(
                path: path, environment: ProcessInfo.processInfo.environment, transports: TuisongCommandLine.transports)
        } catch {
            throw CommandFailure(error.description)
        }
        if announce, config == nil {
            FileHandle.standardError.write(
                Data("tuisong: using \(source) and the \(Self.describe(loaded.database))\n".utf8))
        }
        return loaded
    }

    /// `SQLite file /abs/path` or `PostgreSQL database postgresql://host/db` (no password).
    static func describe(_ database: GatewayConfig.Database) -> String {
        switch database.backend {
        case .sqlite(let path): "SQLite file \(absolutePath(path))"
        case .postgresql: "PostgreSQL database \(database.location)"
        }
    }

    /// The database `database.url` (or `database.path`) names: SQLite or PostgreSQL.
    ///
    /// - Parameter creating: whether a missing database may be created (`migrate`, or
    ///   `--create-database`): an SQLite file, or Tuisong's tables in an empty PostgreSQL
    ///   database. Otherwise a missing one is refused: the command was most likely run from
    ///   another directory than the server, whose relative `data/tuisong.db` it would
    ///   silently replace with an empty one, or given another database's URL.
    func openStore(_ config: GatewayConfig, creating: Bool) throws -> any GatewayStore {
        if !creating, try !StoreOpener.exists(url: config.database.effectiveURL) {
            let location: String
            switch config.database.backend {
            case .sqlite(let path): location = absolutePath(path)
            case .postgresql: location = "\(config.database.location) (a PostgreSQL database without Tuisong's tables)"
            }
            throw CommandFailure(
                "no database at \(location) (from \(source)): run the command where the server runs or "
                    + "pass --config with the server's config; to start a new database, run tuisong migrate "
                    + "or add --create-database")
        }
        return try StoreOpener.open(url: config.database.effectiveURL, options: StoreOpener.Options(config))
    }
}

/// `--config FILE` and `--create-database`, for the commands that work on the database.
struct StoreOptions: ParsableArguments {
    @OptionGroup var configOptions: ConfigOptions
    @Flag(
        name: .customLong("create-database"),
        help: "Create the database when it does not exist yet (otherwise refused: `tuisong migrate` creates it).")
    var createDatabase = false

    func load() throws -> GatewayConfig { try configOptions.load() }

    func openStore(_ config: GatewayConfig) throws -> any GatewayStore {
        try configOptions.openStore(config, creating: createDatabase)
    }
}

/// `path` from the current directory when relative: what the process will open.
func absolutePath(_ path: String) -> String {
    guard !path.hasPrefix("/") else { return path }
    let relative = path.hasPrefix("./") ? String(path.dropFirst(2)) : path
    return FileManager.default.currentDirectoryPath + "/" + relative
}

/// A command that could not do its work for a reason outside its arguments (the config, an
/// environment variable, the database): ArgumentParser prints it as one `Error: …` line and
/// exits 1, where a `ValidationError` would add the usage block and exit 64.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}

/// A file the command could not read, with errno's reason when the file system gives one.
func unreadable(_ path: String) -> CommandFailure {
    guard access(path, R_OK) != 0 else { return CommandFailure("cannot read \(path)") }
    return CommandFailure("cannot read \(path): \(String(cString: strerror(errno)))")
}

/// The value of the environment variable `name`, or a failure saying whether it is unset or
/// set but empty.
func environmentValue(_ name: String) throws -> String {
    guard let value = ProcessInfo.processInfo.environment[name] else {
        throw CommandFailure("the environment variable \(name) is not set")
    }
    guard !value.isEmpty else { throw CommandFailure("the environment variable \(name) is empty") }
    return value
}

/// Bootstraps swift-log (once per process) and returns a logger at `level`. `format` is
/// `log.format`: `text` (swift-log's stream format) or `json` (one object per line).
func makeLogger(_ label: String, level: String, format: String = "text") -> Logger {
    let level = Logger.Level(rawValue: level) ?? .info
    LoggingSystem.bootstrap(LogHandlers.factory(format: format, level: level))
    return Logger(label: label)
}

/// Prints JSON with stable key order, for scripts.
func printJSON(_ object: Any) {
    if let data = try? JSONSerialization.data(
        withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    {
        print(String(decoding: data, as: UTF8.self))
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the gateway until SIGINT or SIGTERM.")
    @OptionGroup var options: ConfigOptions

    func run() async throws {
        MallocTuning.applyForServe()
        let config = try options.load(announce: false)
        let logger = makeLogger("tuisong", level: config.log.level, format: config.log.format)
        let signals = SignalWaiter(signals: [SIGINT, SIGTERM])
        let runtime: GatewayRuntime
        do {
            runtime = try await GatewayRuntime.start(config: config, logger: logger)
        } catch {
            logger.critical("cannot start", metadata: ["error": "\(error)"])
            throw ExitCode.failure
        }
        let console: String
        switch runtime.adminPassword {
        case .generated(let file):
            console = "\(runtime.consoleURL) — log in as admin with the password in \(file) (created now, mode 0600)"
        case .fromEnvironment:
            console = "\(runtime.consoleURL) — log in with TUISONG_ADMIN_PASSWORD"
        case .existing:
            console = "\(runtime.consoleURL) — log in with the admin password set on the first start"
        }
        let masterKey = "\(runtime.masterKey.source)\(runtime.masterKey.created ? " (created, mode 0600)" : "")"
        if config.log.format == "json" {
            // Every output line is JSON for the log shipper: the banner too.
            logger.notice(
                "Tuisong listening",
                metadata: [
                    "version": "\(TuisongVersion.current)", "url": "\(runtime.consoleURL)",
                    "config": "\(options.location)",
                    "database": "\(runtime.store.location)", "backend": "\(runtime.store.backendName)",
                    "master_key": "\(masterKey)",
                    "console": "\(console)", "metrics_port": "\(runtime.metricsPort.map(String.init) ?? "")",
                ])
        } else {
            print("Tuisong \(TuisongVersion.current) listening on \(runtime.consoleURL)")
            print("  config: \(options.location)")
            print("  database: \(runtime.store.backendName) \(runtime.store.location)")
            print("  master key: \(masterKey)")
            print("  console: \(console)")
            if let metricsPort = runtime.metricsPort { print("  metrics: port \(metricsPort)") }
        }
        fflush(nil)  // all output streams: the banner must show before we block
        let received = await signals.wait()
        logger.info("shutting down", metadata: ["signal": "\(received)"])
        await runtime.shutdown()
        logger.info("stopped cleanly")
    }
}

struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config", abstract: "Validate the config and print it, secrets masked.")
    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let config = try options.load(announce: false)
        print(config.maskedJSON())
        // On standard error: standard output stays the JSON alone, for scripts.
        FileHandle.standardError.write(Data(("\(options.source)\n" + Self.databaseLine(config.database) + "\n").utf8))
    }

    /// Which database the config opens, and which key said so (`database.url` wins over
    /// `database.path`).
    static func databaseLine(_ database: GatewayConfig.Database) -> String {
        let source =
            database.url.isEmpty
            ? "database.path (database.url is empty)" : "database.url (it wins over database.path)"
        switch database.backend {
        case .sqlite(let path): return "database: SQLite file \(path), from \(source)"
        case .postgresql: return "database: PostgreSQL \(database.location), from \(source)"
        }
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create or migrate the database, then exit.")
    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let config = try options.load()
        let store = try options.openStore(config, creating: true)
        defer { try? store.close() }
        print(
            "database \(store.backendName) \(store.location) is at schema \(try await store.schemaVersion() ?? "none")")
    }
}

struct Version: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the version.")
    func run() async throws {
        print("tuisong \(TuisongVersion.current)")
    }
}

struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app", abstract: "Manage apps.",
        // `set-<vendor>` for each registered provider, from its settings declarations.
        subcommands: [Create.self, List.self] + VendorCommands.all)

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an app and print its API key once.")
        @OptionGroup var options: StoreOptions
        @Option(help: "A name for people.") var name: String
        @Option(name: .customLong("bundle-id"), help: "The iOS bundle id (its iOS pushes' topic).") var bundleID: String

        func validate() throws {
            guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 200 else {
                throw ValidationError("--name must be 1–200 characters")
            }
            guard BundleID.isValid(bundleID) else {
                throw ValidationError(
                    "--bundle-id \"\(bundleID)\" is not a bundle id (letters, digits, - and . like com.example.app)")
            }
        }

        func run() async throws {
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            if let namesake = App.namesake(of: name, bundleID: bundleID, among: try await store.apps()) {
                throw CommandFailure(App.namesakeMessage(namesake))
            }
            let key = APIKey.generate()
            let app = try await store.createApp(name: name, bundleID: bundleID, apiKeyHash: APIKey.hash(key))
            printJSON(["id": app.id, "name": app.name, "bundle_id": app.bundleID, "api_key": key])
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List apps (never their keys).")
        @OptionGroup var options: StoreOptions

        func run() async throws {
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            let apps = try await store.apps()
            printJSON(apps.map { ["id": $0.id, "name": $0.name, "bundle_id": $0.bundleID] as [String: Any] })
        }
    }
}

struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device", abstract: "Manage devices.", subcommands: [Import.self])

    /// Bulk import, e.g. tokens exported from a vendor console: one token per line, each
    /// checked by the native API's rules (`DeviceRules`).
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register device tokens read one per line from a file or standard input.",
            discussion: """
                Prints {"imported": N, "updated": N, "rejected": N}: devices created, devices that \
                existed and were updated (their environment, channel and, with --tag, tags), and lines \
                that are not a token of the channel (each named on standard error).
                """)
        @OptionGroup var options: StoreOptions
        @Option(help: "The app id.") var app: Int64
        @Option(
            help:
                "The tokens' push service: \(Self.defaultChannel) (hex tokens, the default), \(PushChannel.list(PushChannel.android, \.rawValue, "or"))."
        )
        var channel: String = Self.defaultChannel
        @Option(
            help:
                "sandbox (test phones) or production (the default, as a vendor console exports), for any channel.")
        var environment: String?
        @Option(help: "A file of tokens; standard input when absent.") var file: String?
        @Option(help: "Tag every imported device with this tag.") var tag: String?

        /// The channel whose tokens are taken bare (`ChannelCatalog.bareTokenChannel`), as the
        /// device API takes a token given with no channel.
        static var defaultChannel: String { ChannelCatalog.shared.bareTokenChannel?.channel.rawValue ?? "" }

        /// The channel, environment and tags every line is registered with, by the API's rules.
        func validated() throws -> (PushChannel, PushEnvironment, [TagName]?) {
            do {
                let pushChannel = try DeviceRules.channel(channel)
                let environment = try DeviceRules.environment(
                    environment ?? PushEnvironment.production.rawValue, channel: pushChannel, stored: nil)
                return (pushChannel, environment, try tag.map { [try DeviceRules.tag($0)] })
            } catch let refusal as DeviceRules.Refusal {
                throw ValidationError(refusal.message)
            }
        }

        func validate() throws { _ = try validated() }

        func run() async throws {
            let (channel, environment, tags) = try validated()
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            guard try await store.app(id: app) != nil else { throw CommandFailure("no app with id \(app)") }
            let input: UnsafeMutablePointer<FILE>
            if let file {
                guard let opened = fopen(file, "r") else { throw unreadable(file) }
                input = opened
            } else {
                input = fdopen(0, "r")  // not `stdin`: a C global Swift 6 cannot prove safe
            }
            defer { if file != nil { fclose(input) } }
            var batch: [DeviceRegistration] = []
            var accepted = 0
            var imported = 0
            var rejected = 0
            var lineNumber = 0
            while let line = readLine(from: input) {
                lineNumber += 1
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                let token: DeviceToken
                do {
                    token = try DeviceRules.token(
                        trimmed, channel: channel, hint: { "import it with --channel \($0.rawValue)" })
                } catch {
                    rejected += 1
                    FileHandle.standardError.write(Data("line \(lineNumber): \(error.message)\n".utf8))
                    continue
                }
                accepted += 1
                batch.append(
                    DeviceRegistration(token: token, environment: environment, tags: tags, channel: channel))
                if batch.count == 5000 {
                    imported += try await store.registerDevices(appID: app, batch)
                    batch.removeAll(keepingCapacity: true)
                }
            }
            if !batch.isEmpty { imported += try await store.registerDevices(appID: app, batch) }
            // A bulk import changes the tables' shape at once; the planner should know before the
            // first push to them (PostgreSQL's autovacuum would catch up only later).
            if imported + rejected >= 10_000 { try await store.refreshStatistics() }
            // registerDevices counts the devices it created; every other accepted line updated one
            // (a token repeated in the file updates the device its first line created).
            printJSON(["imported": imported, "updated": accepted - imported, "rejected": rejected])
        }
    }
}

/// One line without its newline, or nil at end of file.
func readLine(from file: UnsafeMutablePointer<FILE>) -> String? {
    var buffer: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(buffer) }
    let count = getline(&buffer, &capacity, file)
    guard count >= 0, let buffer else { return nil }
    var line = String(cString: buffer)
    while line.hasSuffix("\n") || line.hasSuffix("\r") { line.removeLast() }
    return line
}
