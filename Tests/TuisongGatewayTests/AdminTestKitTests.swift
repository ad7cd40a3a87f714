import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import TuisongGateway

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The console's view of the admin API: its own cookie (no shared cookie storage between
/// tests), the CSRF token, and a transcript of every answer for the no-secret checks.
final class AdminTestClient: @unchecked Sendable {
    // @unchecked: each test drives its client from one task at a time; the mutable fields
    // are never touched concurrently.
    let baseURL: String
    var cookie: String?
    var csrf: String?
    var transcript: [String] = []
    private let session: URLSession

    static let password = "correct horse battery 马"

    init(baseURL: String) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.timeoutIntervalForRequest = 30
        session = URLSession(configuration: configuration)
    }

    static func start(
        environment: [String: String] = [:], clock: any TuisongCore.Clock = SystemClock()
    ) async throws -> (RunningGateway, AdminTestClient) {
        var env = ["TUISONG_ADMIN_PASSWORD": password]
        env.merge(environment) { _, new in new }
        let gateway = try await TestGateway.start(environment: env, clock: clock)
        return (gateway, AdminTestClient(baseURL: gateway.baseURL))
    }

    @discardableResult
    func login(_ password: String = AdminTestClient.password) async throws -> HTTPResult {
        let result = try await call("POST", "/login", json: ["password": password], csrf: false)
        if result.status == 200 {
            csrf = result.json["csrf_token"] as? String
            if let setCookie = result.headers["set-cookie"], let pair = setCookie.split(separator: ";").first {
                cookie = String(pair)
            }
        }
        return result
    }

    /// An admin API call (`path` after `/admin/api`) with the session cookie, and the CSRF
    /// token on mutations unless `csrf` is false or `csrfValue` overrides it.
    func call(
        _ method: String, _ path: String, json: Any? = nil, csrf: Bool = true, csrfValue: String? = nil,
        cookie overrideCookie: String? = nil, rawBody: Data? = nil, contentType: String? = nil
    ) async throws -> HTTPResult {
        var request = URLRequest(url: URL(string: baseURL + "/admin/api" + path)!)
        request.httpMethod = method
        if let json {
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let rawBody { request.httpBody = rawBody }
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        if let value = overrideCookie ?? cookie { request.setValue(value, forHTTPHeaderField: "Cookie") }
        if method != "GET", csrf, let token = csrfValue ?? self.csrf {
            request.setValue(token, forHTTPHeaderField: "X-CSRF-Token")
        }
        let (data, response) = try await session.data(for: request)
        let httpResponse = response as! HTTPURLResponse
        var headers: [String: String] = [:]
        for (name, value) in httpResponse.allHeaderFields {
            headers[String(describing: name).lowercased()] = String(describing: value)
        }
        let result = HTTPResult(status: httpResponse.statusCode, headers: headers, body: data)
        transcript.append(
            headers.map { "\($0): \($1)" }.joined(separator: "\n") + "\n" + String(decoding: data, as: UTF8.self))
        return result
    }

    /// Whether `secret` appears in any answer (headers or body) this client has received.
    func everReceived(_ secret: String) -> Bool {
        transcript.contains { $0.contains(secret) }
    }
}

extension HTTPResult {
    func list(_ key: String) -> [[String: Any]] { json[key] as? [[String: Any]] ?? [] }
    var errorField: String? { (json["error"] as? [String: Any])?["field"] as? String }
}

@Suite struct AdminTestKitTests {
    @Test func manualClockMovesOnlyWhenAdvanced() {
        let clock = ManualClock()
        let start = clock.now
        #expect(start == ManualClock.defaultStart)
        clock.advance(by: 5)
        #expect(clock.now.timeIntervalSince(start) == 5)
        clock.advance(by: .milliseconds(1500))
        #expect(clock.now.timeIntervalSince(start) == 6.5)
        let later = Date(timeIntervalSince1970: 1_800_000_000)
        clock.set(later)
        #expect(clock.now == later)
    }
}
