import ArgumentParser
import Foundation
import Logging
import TuisongCore
import TuisongGateway
import TuisongStore

#if canImport(Glibc)
    import Glibc
#endif

@main
struct Tuisong: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tuisong",
        abstract:
            "Tuisong (推送): a self-hosted multi-vendor push gateway delivering through \(PushChannel.list()).",
        version: TuisongVersion.current,
        subcommands: [
            Serve.self, CheckConfig.self, Migrate.self, Version.self, AppCommand.self, DeviceCommand.self,
            CredentialCommand.self, APNsMockCommand.self,
        ])
}

/// `--config FILE`, shared by every subcommand.
struct ConfigOptions: ParsableArguments {
    @Option(name: .long, help: "The JSON config file overlaying the embedded default.")
    var config: String = "config/tuisong.json"

    func load() throws -> GatewayConfig {
        // The default path may be absent (a binary run elsewhere): the embedded default applies.
        let path: String? =
            (config == "config/tuisong.json" && !FileManager.default.fileExists(atPath: config)) ? nil : config
        do {
            return try GatewayConfig.load(path: path, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw CommandFailure(error.description)
        }
    }

    /// The database `database.url` (or `database.path`) names: SQLite or PostgreSQL.
    func openStore(_ config: GatewayConfig) throws -> any GatewayStore {
        try StoreOpener.open(url: config.database.effectiveURL, options: StoreOpener.Options(config))
    }
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

/// glibc gives each thread that meets contention an arena of its own, up to 8 per core, and
/// memory freed in one is not reused by another: the server's threads (HTTP, the cooperative
/// pool, event loops, database queues) each kept their own high-water mark, and a chat load's
/// peak RSS was ~270 MB where two arenas measured ~140 MB at the same rate (bench/messages.sh).
/// An operator's own `MALLOC_ARENA_MAX` wins.
func limitMallocArenas() {
    #if canImport(Glibc)
        guard ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil else { return }
        // mallopt is in <malloc.h>, which the Glibc module does not bring in: looked up by name.
        // M_ARENA_MAX is -8 there.
        guard let symbol = dlsym(nil, "mallopt") else { return }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        _ = unsafeBitCast(symbol, to: Mallopt.self)(-8, 2)
    #endif
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the gateway until SIGINT or SIGTERM.")
    @OptionGroup var options: ConfigOptions

    func run() async throws {
        limitMallocArenas()
        let config = try options.load()
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
                    "database": "\(runtime.store.location)", "backend": "\(runtime.store.backendName)",
                    "master_key": "\(masterKey)",
                    "console": "\(console)", "metrics_port": "\(runtime.metricsPort.map(String.init) ?? "")",
                ])
        } else {
            print("Tuisong \(TuisongVersion.current) listening on \(runtime.consoleURL)")
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
        let config = try options.load()
        print(config.maskedJSON())
        // On standard error: standard output stays the JSON alone, for scripts.
        FileHandle.standardError.write(Data((Self.databaseLine(config.database) + "\n").utf8))
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
        let store = try options.openStore(config)
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
        @OptionGroup var options: ConfigOptions
        @Option(help: "A name for people.") var name: String
        @Option(name: .customLong("bundle-id"), help: "The iOS bundle id (the APNs topic).") var bundleID: String

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
            let key = APIKey.generate()
            let app = try await store.createApp(name: name, bundleID: bundleID, apiKeyHash: APIKey.hash(key))
            printJSON(["id": app.id, "name": app.name, "bundle_id": app.bundleID, "api_key": key])
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List apps (never their keys).")
        @OptionGroup var options: ConfigOptions

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

    /// Bulk import, e.g. tokens exported from a vendor console: one token per line.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register device tokens read one per line from a file or standard input.")
        @OptionGroup var options: ConfigOptions
        @Option(help: "The app id.") var app: Int64
        @Option(help: "The tokens' push service: apns (hex tokens), fcm, huawei, honor, xiaomi, oppo or vivo.")
        var channel: String = "apns"
        @Option(help: "APNs: sandbox or production.") var environment: String = "production"
        @Option(help: "A file of tokens; standard input when absent.") var file: String?
        @Option(help: "Tag every imported device with this tag.") var tag: String?

        func run() async throws {
            guard let environment = APNsEnvironment(rawValue: environment) else {
                throw ValidationError("--environment must be sandbox or production")
            }
            guard let channel = PushChannel(rawValue: channel) else {
                throw ValidationError(
                    "--channel must be one of \(PushChannel.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            var tags: [TagName]?
            if let tag {
                guard let name = TagName(tag) else { throw ValidationError("--tag \"\(tag)\" is not a valid tag") }
                tags = [name]
            }
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
            var imported = 0
            var rejected = 0
            var lineNumber = 0
            while let line = readLine(from: input) {
                lineNumber += 1
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
                guard let token = DeviceToken(trimmed, channel: channel) else {
                    rejected += 1
                    FileHandle.standardError.write(
                        Data("line \(lineNumber): not \(channel.withArticle) device token\n".utf8))
                    continue
                }
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
            printJSON(["imported": imported, "rejected": rejected])
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
