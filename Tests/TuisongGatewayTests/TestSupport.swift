import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongStore

@testable import TuisongGateway

/// The gateway these suites start: the config's default providers and the repository's
/// console, which the admin tests drive.
enum TestGateway {
    static func start(
        environment: [String: String] = [:], directory: URL? = nil, clock: any TuisongCore.Clock = SystemClock(),
        database: PluginStoreBackend = .sqlite, transports: TransportRegistry = .standard,
        lookAlikes: LookAlikeRegistry = .standard, adminPasswordIterations: Int = 1_000
    ) async throws -> RunningGateway {
        try await RunningGateway.start(
            environment: environment, directory: directory, webRoot: RunningGateway.repositoryWebRoot, name: "gw",
            clock: clock, database: database, transports: transports, lookAlikes: lookAlikes,
            adminPasswordIterations: adminPasswordIterations)
    }
}

extension RunningGateway {
    /// Creates an app directly in the store and returns (app id, API key).
    func createApp(bundleID: String = "com.example.test") async throws -> (Int64, String) {
        let key = APIKey.generate()
        let app = try await runtime.store.createApp(name: "test", bundleID: bundleID, apiKeyHash: APIKey.hash(key))
        return (app.id, key)
    }
}

/// The gateway's error dialect on any answer.
extension TestResponse {
    var errorCode: String? { (jsonObject["error"] as? [String: Any])?["code"] as? String }
    var errorMessage: String? { (jsonObject["error"] as? [String: Any])?["message"] as? String }
}

/// One request to a whole URL over a loopback socket, with an API key, a JSON or raw body.
func http(
    _ method: String, _ url: String, key: String? = nil, json: Any? = nil, body: Data? = nil,
    contentType: String? = nil, headers: [String: String] = [:]
) async throws -> TestResponse {
    var fields: [(String, String)] = []
    func set(_ name: String, _ value: String) {
        fields.removeAll { $0.0.lowercased() == name.lowercased() }
        fields.append((name, value))
    }
    if let key { set("Authorization", "Bearer \(key)") }
    var payload = Data()
    if let json {
        payload = try JSONSerialization.data(withJSONObject: json)
        set("Content-Type", "application/json")
    }
    if let body { payload = body }
    if let contentType { set("Content-Type", contentType) }
    for (name, value) in headers.sorted(by: { $0.key < $1.key }) { set(name, value) }
    return try await TestClient.execute(method, url: url, headers: fields, body: Array(payload))
}

/// A valid 64-hex-digit token distinct per `n`.
func token(_ n: Int, prefix: String = "ab") -> String { testToken(n, prefix: prefix) }
