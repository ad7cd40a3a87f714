import Foundation
import TuisongPluginTestKit

/// What a run of the built `tuisong` binary printed, and how it ended.
struct CommandRun {
    var status: Int32
    var output: String
    var errors: String
    /// Killed for outliving its bound (`TuisongCommand.run`'s `timeout`).
    var timedOut = false
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
    }
}

/// The built binary run as an operator runs it: in `directory`, with its master key there.
enum TuisongCommand {
    /// `tuisong` with the transports kept in the tests registered too (Package.swift's
    /// `testTransports`; `Tests/TuisongWithTestTransports`).
    static let withTestTransports = repositoryRoot().appending(path: ".build/debug/tuisong-with-test-transports").path

    /// Runs `binary`. `database`: whether TUISONG_DATABASE_PATH names `directory/tuisong.db`
    /// (false: the config's own, relative to `directory`). `input` is its standard input (empty
    /// if nil). A run still going after `timeout` seconds (a `serve` that should have refused its
    /// config and started instead) is killed, so a wrong answer fails the test rather than
    /// hanging it.
    static func run(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:], database: Bool = true,
        input: String? = nil, binary: String = CrashRecoveryTests.binary, timeout: TimeInterval = 60
    ) throws -> CommandRun {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var variables = [
            "TUISONG_SECURITY_MASTER_KEY_FILE": directory.appending(path: "master.key").path,
            "TUISONG_LOG_LEVEL": "warning", "PATH": "/usr/bin:/bin",
        ]
        if database { variables["TUISONG_DATABASE_PATH"] = directory.appending(path: "tuisong.db").path }
        process.environment = variables.merging(environment) { $1 }
        let output = Pipe()
        let errors = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = standardInput
        try process.run()
        let watchdog = DispatchWorkItem { [process] in
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        standardInput.fileHandleForWriting.write(Data((input ?? "").utf8))
        try standardInput.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        let killed = process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL
        return CommandRun(
            status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
            errors: String(decoding: err, as: UTF8.self), timedOut: killed)
    }
}
