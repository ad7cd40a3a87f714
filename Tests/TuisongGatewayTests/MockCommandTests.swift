import Foundation
import Testing
import TuisongPluginTestKit

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
            let curl = ChildProcess()
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

        // The banner names the Xiaomi, OPPO and vivo look-alikes and their generated credentials,
        // and --magic-tokens covers them: quota- is Xiaomi's daily limit.
        let xiaomi = try #require(info["xiaomi"] as? [String: Any])
        let oppo = try #require(info["oppo"] as? [String: Any])
        let vivo = try #require(info["vivo"] as? [String: Any])
        #expect(oppo["auth_url"] as? String == url + "/server/v1/auth")
        #expect(oppo["unicast_batch_url"] as? String == url + "/server/v1/message/notification/unicast_batch")
        #expect((oppo["master_secret"] as? String)?.isEmpty == false)
        #expect(vivo["push_to_list_url"] as? String == url + "/message/pushToList")
        #expect((vivo["app_id"] as? String)?.allSatisfy(\.isNumber) == true)
        #expect(xiaomi["package_name"] as? String == "tuisong.local")
        let secret = try #require(xiaomi["app_secret"] as? String)
        let send = try #require(xiaomi["send_url"] as? String)
        let curl = ChildProcess()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = [
            "-s", "--http2", "--cacert", caFile, "-H", "authorization: key=\(secret)",
            "--data-urlencode", "registration_id=quota-1", "--data-urlencode", "restricted_package_name=tuisong.local",
            "--data-urlencode", "title=t", "--data-urlencode", "description=d", send,
        ]
        let pipe = Pipe()
        curl.standardOutput = pipe
        try curl.run()
        let answer = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        #expect(answer.contains(#""code":200001"#))

        // The HarmonyOS look-alike: its service-account key file, as Huawei's console downloads it.
        let harmony = try #require(info["harmony"] as? [String: Any])
        let project = try #require(harmony["project_id"] as? String)
        #expect(harmony["send_url"] as? String == url + "/v3/\(project)/messages:send")
        let keyFile = try #require(harmony["service_account_file"] as? String)
        let account = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: keyFile))) as? [String: Any])
        #expect(account["project_id"] as? String == project)
        #expect((account["private_key"] as? String)?.hasPrefix("-----BEGIN PRIVATE KEY-----") == true)
        #expect(account["sub_account"] as? String == harmony["sub_account"] as? String)
    }

    @Test func anUnreadableFaultsFileIsRefusedWithItsName() throws {
        let process = ChildProcess()
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

/// Clients that vanish while `tuisong apns-mock` is still answering them: the mock's writes
/// then fail with EPIPE, which must not end the process (SIGPIPE's default action).
@Suite(.serialized) struct MockCommandHangUpTests {
    /// Sockets process `pid` holds open (its descriptors that link to `socket:[…]`).
    static func openSockets(of pid: Int32) -> Int {
        let directory = "/proc/\(pid)/fd"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.count { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(entry)"))?
                .hasPrefix("socket:") ?? false
        }
    }

    @Test func clientsKilledMidAnswerDoNotKillTheMock() async throws {
        guard FileManager.default.isExecutableFile(atPath: CrashRecoveryTests.binary) else {
            Issue.record("build the tuisong executable first (swift build)")
            return
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/h2load") else {
            Issue.record("h2load is missing: install nghttp2-client (make test-deps)")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appending(
            path: "tuisong-mock-hangup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let mock = try CrashRecoveryTests.Spawned(
            ["apns-mock", "--port", "0", "--setup", directory.appending(path: "mock.json").path, "--latency-ms", "5"],
            environment: [:])
        defer { mock.terminate() }
        let info = try await CrashRecoveryTests().firstJSONObject(in: mock, timeout: .seconds(20))
        let url = try #require(info["url"] as? String)
        let token = try #require(info["provider_token"] as? String)
        let payload = directory.appending(path: "payload.json")
        try Data(#"{"aps":{"alert":"hi"}}"#.utf8).write(to: payload)

        // 200 connections with 100 streams each, killed (SIGKILL: every socket closes at once,
        // unread answers and all) while the mock is answering; three times over. Before the mock
        // ignored SIGPIPE this ended it with status 141 in the first round or two (five rounds
        // spent ~10 s of the suite's CPU, issue #46).
        let pid = mock.process.processIdentifier
        let idleSockets = Self.openSockets(of: pid)
        #expect(idleSockets >= 1, "the mock's listening socket is counted")
        for _ in 0..<3 {
            let load = ChildProcess()
            load.executableURL = URL(fileURLWithPath: "/usr/bin/h2load")
            load.arguments = [
                "-n", "1000000", "-c", "200", "-m", "100", "-d", payload.path,
                "-H", "authorization: bearer \(token)", "-H", "apns-topic: tuisong.local",
                "\(url)/3/device/" + String(repeating: "ab", count: 32),
            ]
            load.standardOutput = FileHandle.nullDevice
            load.standardError = FileHandle.nullDevice
            try load.run()
            // Paces the load client: 0.7 s of unread answers, then it is killed mid-stream.
            try await Task.sleep(for: .milliseconds(700))
            sendSignal(load.processIdentifier, SIGKILL)
            await load.exited()
            // The mock has closed every killed connection (its writes to them failed or were
            // never made) once it holds no more sockets than before the load; SIGPIPE would have
            // ended it by then.
            #expect(
                await eventually(within: 20) {
                    !mock.process.isRunning || Self.openSockets(of: pid) <= idleSockets
                })
            #expect(mock.process.isRunning, "the mock exited with status \(mock.process.terminationStatus)")
            if !mock.process.isRunning { return }
        }
        // Still serving.
        let curl = ChildProcess()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = [
            "-s", "--http2", "--cacert", try #require(info["ca_file"] as? String), "-o", "/dev/null", "-w",
            "%{http_code}", "-H", "authorization: bearer \(token)", "-H", "apns-topic: tuisong.local",
            "--data", #"{"aps":{"alert":"hi"}}"#, "\(url)/3/device/" + String(repeating: "ab", count: 32),
        ]
        let pipe = Pipe()
        curl.standardOutput = pipe
        try curl.run()
        let status = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        #expect(status == "200")
    }
}
