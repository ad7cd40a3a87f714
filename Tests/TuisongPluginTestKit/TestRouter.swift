import Foundation
import TuisongHTTP

/// Sends requests through a `Router` in-process, as the server would route them (route
/// groups, error dialects, body limits), without a socket.
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
    ) async throws -> Response {
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
        var fields = headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        if !fields.contains(where: { $0.0.lowercased() == "host" }) { fields.append(("Host", "localhost")) }
        let request = try Request(
            method: method, target: target, headers: HTTPHeaders(fields), body: Array(body),
            remoteAddress: "127.0.0.1")
        return await router.respond(to: request)
    }

    /// A JSON body (`Content-Type: application/json`).
    public func send(
        _ method: HTTPMethod, _ path: String, json: Any, headers: [String: String] = [:]
    ) async throws -> Response {
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? "application/json"
        return try await send(method, path, headers: headers, body: try JSONSerialization.data(withJSONObject: json))
    }
}

extension Response {
    /// The body as a JSON object (empty when it is not one).
    public var jsonObject: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
}
