import Foundation
import Testing
import TuisongPluginTestKit

/// `tuisong serve` with `log.format: json`, as a log shipper sees it: every line it writes is
/// one JSON object, and the request id a response carries is in the log.
@Suite(.serialized) struct JSONLogTests {
    /// Collects a child process's stdout and stderr separately.
    final class Child: @unchecked Sendable {
        // @unchecked: the buffers are only touched under `lock` (readability handlers append).
        let process = ChildProcess()
        let lock = NSLock()
        var stdout = Data()
        var stderr = Data()

        init(_ arguments: [String], environment: [String: String]) throws {
            process.executableURL = URL(fileURLWithPath: CrashRecoveryTests.binary)
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            out.fileHandleForReading.readabilityHandler = { [self] handle in
                let data = handle.availableData
                lock.withLock { stdout.append(data) }
            }
            err.fileHandleForReading.readabilityHandler = { [self] handle in
                let data = handle.availableData
                lock.withLock { stderr.append(data) }
            }
            try process.run()
        }

        var output: (stdout: String, stderr: String) {
            lock.withLock { (String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self)) }
        }

        func stop() {
            if process.isRunning {
                process.terminate()  // SIGTERM: a clean shutdown, logged too
                process.waitUntilExit()
            }
        }
    }

    /// Every complete line of `text` as a JSON object with the fields every line must have.
    func logLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            let object = try #require(
                try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
            #expect(object["time"] is String && object["level"] is String, "\(line)")
            #expect(object["label"] is String && object["message"] is String, "\(line)")
            if let metadata = object["metadata"] { #expect(metadata is [String: Any], "\(line)") }
            let time = object["time"] as? String ?? ""
            #expect(time.count == 24 && time.hasSuffix("Z"), "time \(time)")
            return object
        }
    }

    @Test func everyLineIsJSONAndCarriesTheRequestIDOfTheResponse() async throws {
        guard FileManager.default.isExecutableFile(atPath: CrashRecoveryTests.binary) else {
            Issue.record("build the tuisong executable first (swift build)")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-jsonlog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let child = try Child(
            ["serve"],
            environment: [
                "TUISONG_LOG_FORMAT": "json", "TUISONG_LOG_LEVEL": "debug", "TUISONG_LISTEN_PORT": "0",
                "TUISONG_DATABASE_PATH": directory.appending(path: "tuisong.db").path,
                "TUISONG_SECURITY_MASTER_KEY_FILE": directory.appending(path: "master.key").path,
                "TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE": directory.appending(path: "admin-password").path,
                "TUISONG_WEB_ROOT": repositoryRoot().appending(path: "web").path,
            ])
        defer { child.stop() }

        // The start banner is a log line too; its metadata says where the gateway listens.
        let baseURL = await firstValue(within: .seconds(30)) { () -> String? in
            let complete = child.output.stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            return complete.lazy.compactMap { line in
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                return (object?["metadata"] as? [String: Any])?["url"] as? String
            }.first
        }
        let base = try #require(baseURL, "no start line: \(child.output)")

        let chosen = try await http("GET", "\(base)healthz", headers: ["X-Request-Id": "lb-7f3a.42:trace"])
        #expect(chosen.status == 200)
        #expect(chosen.headers["x-request-id"] == "lb-7f3a.42:trace")
        let generated = try await http("GET", "\(base)api/v1/devices/\(token(1))")
        #expect(generated.status == 401)
        let generatedID = try #require(generated.headers["x-request-id"])
        // An id that could break a log line or a header is replaced by one of ours.
        let refused = try await http("GET", "\(base)healthz", headers: ["X-Request-Id": "a b\"c"])
        let replacedID = try #require(refused.headers["x-request-id"])
        #expect(replacedID != "a b\"c")
        #expect(replacedID != generatedID)

        // The access lines are written after the answers: wait for them, then stop cleanly.
        #expect(await eventually { child.output.stderr.contains(replacedID) }, "no access line for \(replacedID)")
        child.stop()
        #expect(child.process.terminationStatus == 0)

        let (stdout, stderr) = child.output
        #expect(stdout.isEmpty || stdout.hasSuffix("\n"))
        #expect(stderr.hasSuffix("\n"))
        let lines = try logLines(stdout) + logLines(stderr)
        func accessLine(_ id: String) -> [String: Any]? {
            lines.first { $0["request_id"] as? String == id }
        }
        let chosenLine = try #require(accessLine("lb-7f3a.42:trace"), "\(stderr)")
        #expect((chosenLine["metadata"] as? [String: Any])?["path"] as? String == "/healthz")
        #expect((chosenLine["metadata"] as? [String: Any])?["status"] as? String == "200")
        let generatedLine = try #require(accessLine(generatedID))
        #expect((generatedLine["metadata"] as? [String: Any])?["status"] as? String == "401")
        #expect((generatedLine["metadata"] as? [String: Any])?["group"] as? String == "native")
        #expect(accessLine(replacedID) != nil)
        #expect(lines.contains { ($0["message"] as? String)?.contains("stopped cleanly") == true })
        // Only lines written while answering these requests carry a request id, and only theirs.
        let ids = Set(lines.compactMap { $0["request_id"] as? String })
        #expect(ids == ["lb-7f3a.42:trace", generatedID, replacedID])
        #expect(
            !lines.contains { ($0["message"] as? String)?.contains("listening") == true && $0["request_id"] != nil })
    }
}
