import Foundation
import Testing

/// `tuisong apns-mock` as an operator runs it: faults come from a JSON file and flags.
@Suite(.serialized) struct MockCommandTests {
    @Test func faultsFileAndMagicTokensShapeTheAnswers() async throws {
        guard FileManager.default.isExecutableFile(atPath: CrashRecoveryTests.binary) else {
            Issue.record("build the tuisong executable first (swift build)")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-mock-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let faults = directory.appending(path: "faults.json")
        try Data(#"{"tokenPrefixes": {"c0ffee": {"status": 429, "reason": "TooManyRequests"}}}"#.utf8).write(to: faults)

        let mock = try CrashRecoveryTests.Spawned(
            [
                "apns-mock", "--port", "0", "--setup", directory.appending(path: "mock.json").path,
                "--faults", faults.path, "--magic-tokens",
            ],
            environment: [:])
        defer { mock.terminate() }
        let info = try await CrashRecoveryTests().firstJSONObject(in: mock, timeout: .seconds(20))
        let url = try #require(info["url"] as? String)
        let token = try #require(info["provider_token"] as? String)
        let caFile = try #require(info["ca_file"] as? String)

        func status(forDevice device: String) throws -> String {
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            curl.arguments = [
                "-s", "--http2", "--cacert", caFile, "-o", "/dev/null", "-w", "%{http_code}",
                "-H", "authorization: bearer \(token)", "-H", "apns-topic: tuisong.local",
                "-H", "apns-push-type: alert", "--data", #"{"aps":{"alert":"hi"}}"#,
                "\(url)/3/device/\(device)",
            ]
            let pipe = Pipe()
            curl.standardOutput = pipe
            try curl.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            curl.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(try status(forDevice: "c0ffee" + String(repeating: "0", count: 58)) == "429")  // from the file
        #expect(try status(forDevice: "410" + String(repeating: "0", count: 61)) == "410")  // --magic-tokens
        #expect(try status(forDevice: String(repeating: "ab", count: 32)) == "200")
    }

    @Test func anUnreadableFaultsFileIsRefusedWithItsName() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CrashRecoveryTests.binary)
        process.arguments = [
            "apns-mock", "--port", "0", "--setup", "/tmp/unused-\(UUID().uuidString).json", "--faults",
            "/nonexistent/faults.json",
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        #expect(message.contains("/nonexistent/faults.json"))
    }
}
