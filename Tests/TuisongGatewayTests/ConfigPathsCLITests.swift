import Foundation
import Logging
import Testing
import TuisongCore
import TuisongCrypto

@testable import TuisongGateway

/// #41 item 7: the CLI's advice "pass --config with the server's config" works from any
/// directory, because relative paths in a config file are from the file's directory.
@Suite struct ConfigPathsCLITests {
    @Test func theCLIReachesTheServersDatabaseFromAnotherDirectoryWithConfigAlone() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-paths-\(UUID().uuidString)")
        let server = directory.appending(path: "srv")
        let elsewhere = directory.appending(path: "home/operator")
        for folder in [server.appending(path: "config"), elsewhere] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        let configFile = server.appending(path: "config/tuisong.json")
        try Data(
            #"""
            {"database": {"path": "../data/tuisong.db"},
             "security": {"initial_admin_password_file": "../data/initial-admin-password"},
             "listen": {"port": 0}}
            """#.utf8
        ).write(to: configFile)
        let database = server.appending(path: "data/tuisong.db").path

        // The server, from its config file, wherever this test runs.
        let environment = ["TUISONG_SECURITY_MASTER_KEY_FILE": directory.appending(path: "master.key").path]
        let config = try GatewayConfig.load(path: configFile.path, environment: environment)
        #expect(config.database.sqlitePath == database)
        var logger = Logger(label: "paths")
        logger.logLevel = .critical
        let runtime = try await GatewayRuntime.start(config: config, environment: environment, logger: logger)
        do {
            #expect(FileManager.default.fileExists(atPath: database))
            #expect(FileManager.default.fileExists(atPath: server.appending(path: "data/initial-admin-password").path))
            // Started as `tuisong serve` starts it: the admin password hash has the production
            // count (only the test kit's gateways ask for a cheap one).
            let hash = try await runtime.store.setting("admin.password_hash")
            #expect(hash?.hasPrefix("pbkdf2-sha256$\(PasswordHash.defaultIterations)$") == true, "\(hash ?? "none")")

            // The CLI elsewhere, given the config by an absolute path and by a relative one: the
            // server's database, not one of its own.
            let byAbsolute = try TuisongCommand.run(
                ["app", "create", "--config", configFile.path, "--name", "shop", "--bundle-id", "com.example.shop"],
                in: elsewhere, database: false)
            #expect(byAbsolute.status == 0, "\(byAbsolute.errors)")
            let byRelative = try TuisongCommand.run(
                [
                    "app", "create", "--config", "../../srv/config/tuisong.json", "--name", "blog", "--bundle-id",
                    "com.example.blog",
                ], in: elsewhere, database: false)
            #expect(byRelative.status == 0, "\(byRelative.errors)")
            #expect(!FileManager.default.fileExists(atPath: elsewhere.appending(path: "data").path))
            #expect(!FileManager.default.fileExists(atPath: elsewhere.appending(path: "../../data").standardized.path))
            #expect(try await runtime.store.apps().map(\.name).sorted() == ["blog", "shop"])

            // check-config says which file it is, absolute.
            let check = try TuisongCommand.run(
                ["check-config", "--config", "../../srv/config/tuisong.json"], in: elsewhere, database: false)
            #expect(check.status == 0, "\(check.errors)")
            #expect(
                check.errors.contains("database: SQLite file \(database), from database.path"), "\(check.errors)")
        } catch {
            await runtime.shutdown()
            throw error
        }
        await runtime.shutdown()
    }
}
