import Foundation
import Testing

/// What an operator sees when a command cannot do its work: one `Error:` sentence, exit 1,
/// and `check-config` refusing what `serve` would.
@Suite(.serialized) struct CLIErrorTests {
    struct Run {
        var status: Int32
        var errors: String
    }

    func tuisong(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CrashRecoveryTests.binary)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = [
            "TUISONG_DATABASE_PATH": directory.appending(path: "tuisong.db").path,
            "TUISONG_SECURITY_MASTER_KEY_FILE": directory.appending(path: "master.key").path,
            "TUISONG_LOG_LEVEL": "warning", "PATH": "/usr/bin:/bin",
        ].merging(environment) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        _ = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, errors: String(decoding: err, as: UTF8.self))
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
            "unknown-provider.json": (#"{"providers": ["jpush"]}"#, #"unknown provider "jpush""#),
            "trailing-comma.json": ("{\"log\": {\"level\": \"info\",},}", "is not valid JSON: line 1"),
        ]
        for (name, (contents, expected)) in configs {
            try Data(contents.utf8).write(to: directory.appending(path: name))
            for command in ["check-config", "serve"] {
                let run = try tuisong([command, "--config", name], in: directory)
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
        let guessed = try tuisong(add + ["--client-secret", "s3cret"], in: directory)
        #expect(guessed.status != 0)
        #expect(guessed.errors.contains("--client-secret-env"), "\(guessed.errors)")
    }
}
