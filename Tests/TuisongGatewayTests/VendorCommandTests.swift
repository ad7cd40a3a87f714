import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongStore

@testable import TuisongGateway

/// `tuisong app set-<vendor>`, generated from the provider's settings, as an operator runs it.
@Suite(.serialized) struct VendorCommandTests {
    typealias Run = CommandRun

    /// Runs the built binary in `directory` with its database and master key there.
    func tuisong(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws -> Run {
        try TuisongCommand.run(arguments, in: directory, environment: environment)
    }

    @Test func setBaiduKeepsItsFlagsSealsTheSecretAndChecksUniqueness() async throws {
        guard FileManager.default.isExecutableFile(atPath: CrashRecoveryTests.binary) else {
            Issue.record("build the tuisong executable first (swift build)")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appending(
            path: "tuisong-vendor-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try tuisong(["migrate"], in: directory).status == 0)
        for name in ["one", "two"] {
            #expect(
                try tuisong(["app", "create", "--name", name, "--bundle-id", "com.example.\(name)"], in: directory)
                    .status == 0)
        }
        let secret = "cli-secret-Zk42"
        let set = try tuisong(
            [
                "app", "set-baidu", "--app", "1", "--apikey", "AK-cli", "--secret-env", "BAIDU_SECRET",
                "--baidu-app-id", "42",
            ],
            in: directory, environment: ["BAIDU_SECRET": secret])
        #expect(set.status == 0, "\(set.errors)")
        #expect(set.json["id"] as? Int == 1)
        #expect(set.json["baidu"] as? [String: String] == ["apikey": "AK-cli", "app_id": "42"])
        #expect(!set.output.contains(secret) && !set.errors.contains(secret))

        // The other app cannot take the apikey; a secret on the command line is refused.
        let taken = try tuisong(
            ["app", "set-baidu", "--app", "2", "--apikey", "AK-cli", "--secret-env", "BAIDU_SECRET"], in: directory,
            environment: ["BAIDU_SECRET": secret])
        #expect(taken.status == 1, "the database's state, not the arguments: one sentence, exit 1")
        #expect(taken.errors.contains("apikey AK-cli already belongs to app 1") && !taken.errors.contains("Usage"))
        let onCommandLine = try tuisong(
            ["app", "set-baidu", "--app", "2", "--apikey", "AK-2", "--secret", secret], in: directory)
        #expect(onCommandLine.status != 0)
        #expect(onCommandLine.errors.contains("--secret-env"))
        let missing = try tuisong(["app", "set-baidu", "--app", "2", "--apikey", "AK-2"], in: directory)
        #expect(missing.status != 0)
        #expect(missing.errors.contains("missing --secret-env"))
        let badValue = try tuisong(
            ["app", "set-baidu", "--app", "2", "--apikey", "AK 2", "--secret-env", "S"], in: directory,
            environment: ["S": "x"])
        #expect(badValue.errors.contains("apikey must be 1–64 letters"))

        // What was stored is what the Baidu provider reads: the secret sealed for app 1 only.
        let store = try SQLiteStore(
            path: directory.appending(path: "tuisong.db").path,
            configuration: .init(pluginMigrations: ProviderRegistry.pluginMigrations))
        defer { try? store.close() }
        let app = try #require(try await store.app(id: 1))
        let settings = try #require(app.vendorSettings["baidu"])
        #expect(settings["apikey"] == "AK-cli")
        let sealed = try #require(settings["secret_key_sealed"])
        let keyText = try String(contentsOf: directory.appending(path: "master.key"), encoding: .utf8)
        let box = try SecretBox(
            key: Array(try #require(Data(base64Encoded: keyText.trimmingCharacters(in: .whitespacesAndNewlines)))))
        let sealedBytes = Array(try #require(Data(base64Encoded: sealed)))
        #expect(
            String(decoding: try box.open(sealedBytes, associatedData: Array("baidu:app:1".utf8)), as: UTF8.self)
                == secret)
        #expect(throws: (any Error).self) { try box.open(sealedBytes, associatedData: Array("baidu:app:2".utf8)) }
        #expect(try await store.app(id: 2)?.vendorSettings["baidu"] == nil)

        // Easemob's org and app name are unique together: a shared org is fine, a shared pair is not.
        let easemob = { (app: String, org: String, name: String) throws -> (status: Int32, errors: String) in
            let result = try tuisong(
                [
                    "app", "set-easemob", "--app", app, "--org", org, "--app-name", name, "--client-id", "YXA6-\(app)",
                    "--client-secret-env", "EM_SECRET",
                ],
                in: directory, environment: ["EM_SECRET": "em-secret-\(app)"])
            return (result.status, result.errors)
        }
        #expect(try easemob("1", "acme", "chat").status == 0)
        #expect(try easemob("2", "acme", "shop").status == 0)
        let pairTaken = try easemob("2", "acme", "chat")
        #expect(pairTaken.status != 0)
        #expect(pairTaken.errors.contains("org + app_name"), "\(pairTaken.errors)")

        // The help lists the declared flags.
        let help = try tuisong(["app", "set-baidu", "--help"], in: directory)
        #expect(help.output.contains("--apikey VALUE") && help.output.contains("--secret-env VAR"))
        #expect(help.output.contains("--baidu-app-id VALUE"))
    }
}
