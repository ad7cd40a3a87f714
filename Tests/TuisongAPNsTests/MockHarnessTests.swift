import Foundation
import Testing
import TuisongCrypto
import TuisongLookAlikes
import TuisongPluginTestKit

/// A running mock plus the files and tokens a command-line HTTP/2 client needs to talk to it.
/// Each test builds its own (fresh keys, fresh port, fresh temporary directory).
final class MockHarness {
    static let bundleID = "com.example.mock"
    static let deviceToken = String(repeating: "ab", count: 32)
    static let payload = #"{"aps":{"alert":"hello"}}"#

    let setup: LookAlikeLocalSetup
    let server: LookAlikeServer
    let directory: URL
    let tokenKey: PrivateKey

    init(
        setup: LookAlikeLocalSetup? = nil, lookAlikes: LookAlikeRegistry = .standard,
        configure: (inout LookAlikeConfiguration) throws -> Void = { _ in },
        requestLog: (@Sendable (String) -> Void)? = nil
    ) throws {
        let setup = try setup ?? LookAlikeLocalSetup.generate(bundleID: Self.bundleID)
        self.setup = setup
        var configuration = setup.configuration()
        try configure(&configuration)
        server = try LookAlikeServer(
            lookAlikes: lookAlikes, configuration: configuration, certificate: setup.serverCertificate,
            key: setup.serverKey, requestLog: requestLog)
        tokenKey = try PrivateKey(pem: setup.tokenKeyPEM)
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tuisong-mock-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try setup.writeCAFile(to: path("ca.pem"))
        try write(setup.clientCertificatePEM, to: "client.pem")
        try write(setup.clientKeyPEM, to: "client-key.pem")
        try write(Self.payload, to: "payload.json")
        try server.start()
    }

    deinit {
        server.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }

    var baseURL: String { "https://127.0.0.1:\(server.port)" }
    var deviceURL: String { "\(baseURL)/3/device/\(Self.deviceToken)" }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    @discardableResult
    func write(_ text: String, to name: String) throws -> String {
        try Data(text.utf8).write(to: directory.appendingPathComponent(name))
        return path(name)
    }

    /// A provider token for this setup's key, or for other ids to provoke rejections.
    func jwt(
        issuedAt: Date = Date(), keyID: String? = nil, teamID: String? = nil, key: PrivateKey? = nil
    ) throws -> String {
        try JWT.es256Token(
            keyID: keyID ?? setup.keyID, issuer: teamID ?? setup.teamID, issuedAt: issuedAt, key: key ?? tokenKey)
    }

    func bearer(_ token: String) -> String { "authorization: bearer \(token)" }

    /// The usual headers of a valid token-auth alert push.
    func validHeaders() throws -> [String] {
        [bearer(try jwt()), "apns-topic: \(Self.bundleID)", "apns-push-type: alert"]
    }

    /// One or more requests with curl over one HTTP/2 connection (`--next` between them).
    func curl(_ requests: [CurlRequest], extraArguments: [String] = []) throws -> [CurlResponse] {
        var arguments: [String] = []
        for (index, request) in requests.enumerated() {
            if index > 0 { arguments.append("--next") }
            arguments += ["-s", "--http2", "--cacert", path("ca.pem"), "-i", "-X", request.method]
            arguments += extraArguments
            for header in request.headers { arguments += ["-H", header] }
            if let bodyFile = request.bodyFile {
                arguments += ["--data-binary", "@\(bodyFile)"]
            } else if request.method == "POST" {
                arguments += ["--data-binary", ""]
            }
            arguments += ["-w", "\n--END--\n", baseURL + request.path]
        }
        let result = try Command.run("curl", arguments)
        return result.stdout.components(separatedBy: "\n--END--\n").dropLast().map(CurlResponse.init)
    }

    /// `nghttp -v -n` (verbose frames, discard bodies) POSTing the payload with `headers`.
    func nghttp(
        headers: [String], path: String = "/3/device/\(MockHarness.deviceToken)", extraArguments: [String] = []
    ) throws -> Command.Result {
        var arguments = ["-v", "-n", "--no-dep", "-t", "20", "-d", self.path("payload.json")]
        for header in headers { arguments += ["-H", header] }
        return try Command.run("nghttp", arguments + extraArguments + [baseURL + path])
    }

    /// A bounded h2load run POSTing the payload; returns h2load's counters.
    func h2load(
        requests: Int, connections: Int, streams: Int, headers: [String],
        path: String = "/3/device/\(MockHarness.deviceToken)"
    ) throws -> H2LoadResult {
        var arguments = [
            "-n", String(requests), "-c", String(connections), "-m", String(streams), "-T", "20", "-N", "20",
            "--data=\(self.path("payload.json"))",
        ]
        for header in headers { arguments += ["-H", header] }
        let result = try Command.run("h2load", arguments + [baseURL + path], timeout: 120)
        return H2LoadResult(result.stdout)
    }

    func curl(_ request: CurlRequest, extraArguments: [String] = []) throws -> CurlResponse {
        let responses = try curl([request], extraArguments: extraArguments)
        guard let response = responses.first else {
            throw HarnessError("curl gave no response")
        }
        return response
    }
}

struct CurlRequest {
    var method = "POST"
    var path: String
    var headers: [String]
    var bodyFile: String?

    init(
        method: String = "POST", path: String = "/3/device/\(MockHarness.deviceToken)", headers: [String],
        bodyFile: String?
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.bodyFile = bodyFile
    }
}

/// An `-i` response: status line, headers, blank line, body.
struct CurlResponse {
    var status = 0
    var headers: [String: String] = [:]
    var body = ""

    init(_ text: String) {
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n")
        let parts = normalized.components(separatedBy: "\n\n")
        let head = parts.first ?? ""
        body = parts.dropFirst().joined(separator: "\n\n")
        for (index, line) in head.split(separator: "\n").enumerated() {
            if index == 0 {
                status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            } else if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
        }
    }

    /// `reason` of a JSON error body.
    var reason: String? { json?["reason"] as? String }

    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
    }
}

/// h2load's summary lines: `finished in 1.23s, 45678.90 req/s, …` and
/// `requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout`.
struct H2LoadResult {
    var requestsPerSecond = 0.0
    var counts: [String: Int] = [:]
    var statusCodes: [String: Int] = [:]
    var output: String

    init(_ output: String) {
        self.output = output
        for line in output.split(separator: "\n") {
            if line.hasPrefix("finished in") {
                let parts = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                if parts.count > 1, let rate = Double(parts[1].split(separator: " ")[0]) { requestsPerSecond = rate }
            } else if line.hasPrefix("requests:") || line.hasPrefix("status codes:") {
                let isStatus = line.hasPrefix("status codes:")
                let values = line.split(separator: ":", maxSplits: 1)[1].split(separator: ",")
                for value in values {
                    let words = value.split(separator: " ")
                    guard words.count == 2, let count = Int(words[0]) else { continue }
                    if isStatus { statusCodes[String(words[1])] = count } else { counts[String(words[1])] = count }
                }
            }
        }
    }

    var succeeded: Int { counts["succeeded"] ?? -1 }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum Command {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs a tool from PATH to completion, killing it after `timeout` seconds.
    static func run(_ tool: String, _ arguments: [String], timeout: TimeInterval = 60) throws -> Result {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Read both pipes while the process runs so a chatty tool cannot block on a full pipe.
        let output = OutputCollector()
        let group = DispatchGroup()
        for (pipe, isError) in [(stdout, false), (stderr, true)] {
            group.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                output.set(data, isError: isError)
                group.leave()
            }
        }
        let deadline = DispatchTime.now() + timeout
        if group.wait(timeout: deadline) == .timedOut {
            process.terminate()
            group.wait()
            process.waitUntilExit()
            throw HarnessError("\(tool) timed out after \(timeout)s")
        }
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: output.stdout, stderr: output.stderr)
    }

    private final class OutputCollector: @unchecked Sendable {
        // @unchecked Sendable: both fields are written under `lock` and read after the group wait.
        private let lock = NSLock()
        private var out = Data()
        private var err = Data()

        func set(_ data: Data, isError: Bool) {
            lock.lock()
            defer { lock.unlock() }
            if isError { err = data } else { out = data }
        }

        var stdout: String {
            lock.lock()
            defer { lock.unlock() }
            return String(decoding: out, as: UTF8.self)
        }
        var stderr: String {
            lock.lock()
            defer { lock.unlock() }
            return String(decoding: err, as: UTF8.self)
        }
    }
}

@Suite("APNs mock harness")
struct MockHarnessTests {
    @Test("the local setup's server certificate is trusted by curl through the written CA file")
    func curlTrustsTheLocalCA() throws {
        let harness = try MockHarness()
        let response = try harness.curl(
            CurlRequest(headers: try harness.validHeaders(), bodyFile: harness.path("payload.json")))
        #expect(response.status == 200)
    }
}
