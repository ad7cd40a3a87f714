import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongStore

@testable import TuisongGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The gateway these suites start: the config's default providers and the repository's
/// console, which the admin tests drive.
enum TestGateway {
    static func start(
        environment: [String: String] = [:], directory: URL? = nil, clock: any TuisongCore.Clock = SystemClock()
    ) async throws -> RunningGateway {
        try await RunningGateway.start(
            environment: environment, directory: directory, webRoot: RunningGateway.repositoryWebRoot, name: "gw",
            clock: clock)
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
