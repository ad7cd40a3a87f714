import Foundation
import Testing
import TuisongCore
import TuisongPostgresTestKit
import TuisongStore

/// What an operator sees when a command cannot do its work: one `Error:` sentence, exit 1,
/// and `check-config` refusing what `serve` would.
@Suite(.serialized) struct CLIErrorTests {
    typealias Run = CommandRun

    func tuisong(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:], database: Bool = true,
        input: String? = nil
    ) throws -> Run {
        try TuisongCommand.run(arguments, in: directory, environment: environment, database: database, input: input)
    }

    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test func checkConfigRefusesWhatServeRefuses() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let configs = [
            "unknown-provider.json": (#"{"providers": ["getui"]}"#, #"unknown provider "getui""#),
            "trailing-comma.json": ("{\"log\": {\"level\": \"info\",},}", "is not valid JSON: line 1"),
        ]
        for (name, (contents, expected)) in configs {
            try Data(contents.utf8).write(to: directory.appending(path: name))
            for command in ["check-config", "serve"] {
                let run = try TuisongCommand.run([command, "--config", name], in: directory, timeout: 30)
                #expect(!run.timedOut, "\(command) \(name) started instead of refusing its config")
                #expect(run.status == 1, "\(command) \(name)")
                #expect(run.errors.contains(expected), "\(command) \(name): \(run.errors)")
                #expect(!run.errors.contains("Usage"), "a config error is one sentence, not the usage")
            }
        }
        let missing = try tuisong(["check-config", "--config", "nope.json"], in: directory)
        #expect(missing.status == 1)
        #expect(missing.errors.contains("cannot read nope.json: No such file or directory"), "\(missing.errors)")
    }

    @Test func environmentVariablesSetButEmptySaySo() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try tuisong(["migrate"], in: directory).status == 0)
        let created = try tuisong(
            ["app", "create", "--name", "shop", "--bundle-id", "com.example.shop"], in: directory)
        #expect(created.status == 0, "\(created.errors)")
        let add = [
            "credential", "add", "--app", "1", "--channel", "huawei", "--vendor-app-id", "10", "--client-id", "20",
        ]
        let empty = try tuisong(
            add + ["--client-secret-env", "HW_SECRET"], in: directory, environment: ["HW_SECRET": ""])
        #expect(empty.status == 1)
        #expect(empty.errors.contains("the environment variable HW_SECRET is empty"), "\(empty.errors)")
        let unset = try tuisong(add + ["--client-secret-env", "HW_SECRET"], in: directory)
        #expect(unset.errors.contains("the environment variable HW_SECRET is not set"), "\(unset.errors)")
        let noApp = try tuisong(
            ["credential", "add", "--app", "9", "--channel", "fcm", "--service-account", "sa.json"], in: directory)
        #expect(noApp.status == 1)
        #expect(noApp.errors.contains("no app with id 9") && !noApp.errors.contains("Usage"), "\(noApp.errors)")
        let noFile = try tuisong(
            ["credential", "add", "--app", "1", "--channel", "fcm", "--service-account", "sa.json"], in: directory)
        #expect(noFile.status == 1)
        #expect(noFile.errors.contains("cannot read sa.json: No such file or directory"), "\(noFile.errors)")
        // A file that is there but not a key: what it holds is found at run time, one sentence.
        try Data("not a key".utf8).write(to: directory.appending(path: "bad.p8"))
        let badKey = try tuisong(
            [
                "credential", "add", "--app", "1", "--environment", "production", "--p8", "bad.p8", "--key-id",
                "ABC123DEFG", "--team-id", "DEF123GHIJ",
            ], in: directory)
        #expect(badKey.status == 1, "\(badKey.errors)")
        #expect(badKey.errors.contains("Error: ") && !badKey.errors.contains("Usage"), "\(badKey.errors)")
        let guessed = try tuisong(add + ["--client-secret", "s3cret"], in: directory)
        #expect(guessed.status != 0)
        #expect(guessed.errors.contains("--client-secret-env"), "\(guessed.errors)")
    }

    /// Issue #30: `cd /tmp && tuisong app list` printed `[]` and made `./data/tuisong.db`.
    @Test func aCommandRunElsewhereSaysWhichDatabaseAndRefusesToCreateOne() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let here = directory.path
        let list = try tuisong(["app", "list"], in: directory, database: false)
        #expect(list.status == 1)
        #expect(list.output.isEmpty)
        #expect(
            list.errors.contains(
                "tuisong: using the embedded default config (no config/tuisong.json in \(here)) and the SQLite file \(here)/data/tuisong.db"
            ), "\(list.errors)")
        #expect(list.errors.contains("Error: no database at \(here)/data/tuisong.db"), "\(list.errors)")
        #expect(list.errors.contains("tuisong migrate") && list.errors.contains("--create-database"))
        #expect(!list.errors.contains("Usage"))
        #expect(!FileManager.default.fileExists(atPath: here + "/data"), "nothing is created")
        let create = try tuisong(
            ["app", "create", "--name", "shop", "--bundle-id", "com.example.shop"], in: directory, database: false)
        #expect(create.status == 1 && !create.output.contains("api_key"), "no key the server never sees")
        #expect(!FileManager.default.fileExists(atPath: here + "/data/tuisong.db"))

        // Asked for: --create-database.
        let asked = try tuisong(["app", "list", "--create-database"], in: directory, database: false)
        #expect(asked.status == 0, "\(asked.errors)")
        #expect((try? JSONSerialization.jsonObject(with: Data(asked.output.utf8))) as? [Any] != nil, "\(asked.output)")
        #expect(((try? JSONSerialization.jsonObject(with: Data(asked.output.utf8))) as? [Any])?.isEmpty == true)
        #expect(FileManager.default.fileExists(atPath: here + "/data/tuisong.db"))
        #expect(try tuisong(["app", "list"], in: directory, database: false).status == 0, "it exists now")

        // The config of the current directory, named on standard error; migrate creates its
        // database, which a relative path puts beside the config file.
        try FileManager.default.createDirectory(
            at: directory.appending(path: "config"), withIntermediateDirectories: true)
        try Data(#"{"database": {"path": "server.db"}}"#.utf8).write(
            to: directory.appending(path: "config/tuisong.json"))
        #expect(try tuisong(["app", "list"], in: directory, database: false).status == 1)
        let migrate = try tuisong(["migrate"], in: directory, database: false)
        #expect(migrate.status == 0, "\(migrate.errors)")
        #expect(FileManager.default.fileExists(atPath: here + "/config/server.db"))
        let created = try tuisong(
            ["app", "create", "--name", "shop", "--bundle-id", "com.example.shop"], in: directory, database: false)
        #expect(created.status == 0, "\(created.errors)")
        #expect(
            created.errors.contains(
                "tuisong: using config \(here)/config/tuisong.json and the SQLite file \(here)/config/server.db"),
            "\(created.errors)")
        // Given --config, the operator chose: nothing to announce.
        let named = try tuisong(["app", "list", "--config", "config/tuisong.json"], in: directory, database: false)
        #expect(named.status == 0)
        #expect(!named.errors.contains("tuisong: using"), "\(named.errors)")
    }

    /// On PostgreSQL the database must exist already; its tables are what a command would
    /// create, so an empty database is refused too unless migrate (or --create-database) asks.
    @Test func anEmptyPostgreSQLDatabaseIsMigratedOnlyWhenAsked() throws {
        let database = try TestDatabase()
        defer { database.drop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = ["TUISONG_DATABASE_URL": database.url]
        let list = try tuisong(["app", "list"], in: directory, environment: environment)
        #expect(list.status == 1)
        #expect(list.errors.contains("a PostgreSQL database without Tuisong's tables"), "\(list.errors)")
        #expect(try !StoreOpener.exists(url: database.url), "the refusal created nothing")
        #expect(try tuisong(["migrate"], in: directory, environment: environment).status == 0)
        #expect(try StoreOpener.exists(url: database.url))
        let again = try tuisong(["app", "list"], in: directory, environment: environment)
        #expect(again.status == 0, "\(again.errors)")
    }

    /// `device import` takes what `PUT /api/v1/devices/{token}` takes, and says what it updated.
    @Test func deviceImportObeysTheAPIRulesAndCountsUpdates() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try tuisong(["migrate"], in: directory).status == 0)
        #expect(
            try tuisong(["app", "create", "--name", "shop", "--bundle-id", "com.example.shop"], in: directory)
                .status == 0)
        let fcm = ["device", "import", "--app", "1", "--channel", "fcm"]
        // Any channel's device may be a sandbox one (a test phone), as the API registers it.
        let testPhone = try tuisong(fcm + ["--environment", "sandbox"], in: directory, input: "fcm-test-phone\n")
        #expect(testPhone.status == 0, "\(testPhone.errors)")
        #expect(testPhone.json as NSDictionary == ["imported": 1, "updated": 0, "rejected": 0] as NSDictionary)
        let badChannel = try tuisong(["device", "import", "--app", "1", "--channel", "jpush"], in: directory)
        #expect(badChannel.status != 0)
        #expect(badChannel.errors.contains(#"channel must be one of "apns", "fcm""#), "\(badChannel.errors)")
        let badEnvironment = try tuisong(
            ["device", "import", "--app", "1", "--environment", "staging"], in: directory)
        #expect(badEnvironment.errors.contains(#"environment must be "sandbox" or "production", got "staging""#))
        let badTag = try tuisong(["device", "import", "--app", "1", "--tag", "a b"], in: directory)
        #expect(badTag.errors.contains("tag must be \(TagName.rule)"), "\(badTag.errors)")

        let apnsToken = String(repeating: "ab", count: 32)
        let lines = "fcm-token-1\n\n# a comment\nfcm-token-2\n\(apnsToken)\n"
        let first = try tuisong(fcm, in: directory, input: lines)
        #expect(first.status == 0, "\(first.errors)")
        #expect(first.json as NSDictionary == ["imported": 2, "updated": 0, "rejected": 1] as NSDictionary)
        #expect(first.errors.contains("line 5: an FCM device token must be"), "\(first.errors)")
        let again = try tuisong(fcm + ["--tag", "vip"], in: directory, input: lines)
        #expect(again.json as NSDictionary == ["imported": 0, "updated": 2, "rejected": 1] as NSDictionary)

        // An APNs import (the default channel, production) of an FCM token says how to import it.
        let apns = try tuisong(
            ["device", "import", "--app", "1"], in: directory, input: "\(apnsToken)\nfcm-token-3\n")
        #expect(apns.json as NSDictionary == ["imported": 1, "updated": 0, "rejected": 1] as NSDictionary)
        #expect(apns.errors.contains("line 2: an APNs device token must be hexadecimal"), "\(apns.errors)")
        #expect(apns.errors.contains("if this is an FCM token, import it with --channel fcm"), "\(apns.errors)")
    }

    /// Two apps of one bundle id with one name could not be told apart in any list.
    @Test func aSecondAppWithTheSameNameAndBundleIDIsRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try tuisong(["migrate"], in: directory).status == 0)
        func create(_ name: String, _ bundleID: String) throws -> Run {
            try tuisong(["app", "create", "--name", name, "--bundle-id", bundleID], in: directory)
        }
        #expect(try create("Shop", "com.example.shop").status == 0)
        let twin = try create("shop ", "com.example.shop")
        #expect(twin.status == 1)
        #expect(
            twin.errors.contains(#"app 1 is already named "Shop" for com.example.shop"#)
                && !twin.errors.contains("Usage"),
            "\(twin.errors)")
        #expect(try create("Shop staging", "com.example.shop").status == 0)
        #expect(try create("Shop", "com.example.other").status == 0)
    }
}
