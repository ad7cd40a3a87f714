import Foundation
import TuisongHTTP

/// Sends requests through a `Router` in-process, as the server would route them (route
/// groups, error dialects, body limits), without a socket: `TestClient(router:)` with a
/// vendor test's conveniences (a query dictionary, a header dictionary, `Data` bodies).
///
///     let router = TestRouter()
///     provider.register(on: router.router)
///     let response = try await router.send(.POST, "/rest/3.0/push/all", body: Data(form.utf8))
public struct TestRouter: Sendable {
    public let router: Router

    public init(_ router: Router = Router()) {
        self.router = router
    }

    /// `query` is percent-encoded onto `path` (which may carry a query of its own).
    public func send(
        _ method: HTTPMethod, _ path: String, query: [String: String] = [:], headers: [String: String] = [:],
        body: Data = Data()
    ) async throws -> TestResponse {
        var target = path
        if !query.isEmpty {
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            let encoded = query.sorted { $0.key < $1.key }.map { name, value in
                name.addingPercentEncoding(withAllowedCharacters: allowed)! + "="
                    + value.addingPercentEncoding(withAllowedCharacters: allowed)!
            }
            target += (path.contains("?") ? "&" : "?") + encoded.joined(separator: "&")
        }
        let fields = headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return try await TestClient(router: router).execute(method.rawValue, target, headers: fields, body: Array(body))
    }

    /// A JSON body (`Content-Type: application/json`).
    public func send(
        _ method: HTTPMethod, _ path: String, json: Any, headers: [String: String] = [:]
    ) async throws -> TestResponse {
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? "application/json"
        return try await send(method, path, headers: headers, body: try JSONSerialization.data(withJSONObject: json))
    }
}
