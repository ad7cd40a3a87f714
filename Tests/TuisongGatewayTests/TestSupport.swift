import Foundation
import Logging
import Testing
import TuisongCore
import TuisongStore

@testable import TuisongGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A gateway on loopback with its own temporary directory (database, master key, password
/// file), torn down by `stop()`.
final class TestGateway: Sendable {
    let runtime: GatewayRuntime
    let directory: URL
    let baseURL: String

    static func start(
        environment: [String: String] = [:], configure: (inout [String: String]) -> Void = { _ in }
    ) async throws -> TestGateway {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-gw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var env: [String: String] = [
            "TUISONG_LISTEN_PORT": "0",
            "TUISONG_DATABASE_PATH": directory.appending(path: "tuisong.db").path,
            "TUISONG_SECURITY_MASTER_KEY_FILE": directory.appending(path: "master.key").path,
            "TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE": directory.appending(path: "admin-password").path,
            "TUISONG_WEB_ROOT": repositoryRoot().appending(path: "web").path,
            "TUISONG_LOG_LEVEL": "warning",
        ]
        env.merge(environment) { _, new in new }
        configure(&env)
        let config = try GatewayConfig.load(fileContents: nil, environment: env)
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let runtime = try await GatewayRuntime.start(config: config, environment: env, logger: logger)
        return TestGateway(runtime: runtime, directory: directory)
    }

    private init(runtime: GatewayRuntime, directory: URL) {
        self.runtime = runtime
        self.directory = directory
        self.baseURL = "http://127.0.0.1:\(runtime.port)"
    }

    func stop() async {
        await runtime.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Creates an app directly in the store and returns (app id, API key).
    func createApp(bundleID: String = "com.example.test") async throws -> (Int64, String) {
        let key = APIKey.generate()
        let app = try await runtime.store.createApp(name: "test", bundleID: bundleID, apiKeyHash: APIKey.hash(key))
        return (app.id, key)
    }
}

struct HTTPResult: Sendable {
    var status: Int
    var headers: [String: String]
    var body: Data

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
    }

    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
}

/// A small HTTP client over URLSession (libcurl underneath on Linux).
func http(
    _ method: String, _ url: String, key: String? = nil, json: Any? = nil, body: Data? = nil,
    contentType: String? = nil, headers: [String: String] = [:]
) async throws -> HTTPResult {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    request.timeoutInterval = 30
    if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
    if let json {
        request.httpBody = try JSONSerialization.data(withJSONObject: json)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    if let body { request.httpBody = body }
    if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    let httpResponse = response as! HTTPURLResponse
    var headerMap: [String: String] = [:]
    for (name, value) in httpResponse.allHeaderFields {
        headerMap[String(describing: name).lowercased()] = String(describing: value)
    }
    return HTTPResult(status: httpResponse.statusCode, headers: headerMap, body: data)
}

/// A valid 64-hex-digit token distinct per `n`.
func token(_ n: Int, prefix: String = "ab") -> String {
    let hex = String(n, radix: 16)
    return prefix + String(repeating: "0", count: 64 - prefix.count - hex.count) + hex
}
