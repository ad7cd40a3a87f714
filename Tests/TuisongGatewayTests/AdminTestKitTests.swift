import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import TuisongGateway

/// The console's view of the admin API: its own cookie (no shared cookie storage between
/// tests), the CSRF token, and a transcript of every answer for the no-secret checks.
final class AdminTestClient: @unchecked Sendable {
    // @unchecked: each test drives its client from one task at a time; the mutable fields
    // are never touched concurrently.
    let baseURL: String
    var cookie: String?
    var csrf: String?
    var transcript: [String] = []

    static let password = "correct horse battery 马"

    init(baseURL: String) {
        self.baseURL = baseURL
    }

    static func start(
        environment: [String: String] = [:], clock: any TuisongCore.Clock = SystemClock(),
        transports: TransportRegistry = .standard, adminPasswordIterations: Int = 1_000
    ) async throws -> (RunningGateway, AdminTestClient) {
        var env = ["TUISONG_ADMIN_PASSWORD": password]
        env.merge(environment) { _, new in new }
        let gateway = try await TestGateway.start(
            environment: env, clock: clock, transports: transports, adminPasswordIterations: adminPasswordIterations)
        return (gateway, AdminTestClient(baseURL: gateway.baseURL))
    }

    @discardableResult
    func login(_ password: String = AdminTestClient.password) async throws -> TestResponse {
        let result = try await call("POST", "/login", json: ["password": password], csrf: false)
        if result.status == 200 {
            csrf = result.jsonObject["csrf_token"] as? String
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
    ) async throws -> TestResponse {
        var fields: [(String, String)] = []
        var payload = Data()
        if let json {
            payload = try JSONSerialization.data(withJSONObject: json)
            fields.append(("Content-Type", "application/json"))
        }
        if let rawBody { payload = rawBody }
        if let contentType {
            fields.removeAll { $0.0 == "Content-Type" }
            fields.append(("Content-Type", contentType))
        }
        if let value = overrideCookie ?? cookie { fields.append(("Cookie", value)) }
        if method != "GET", csrf, let token = csrfValue ?? self.csrf { fields.append(("X-CSRF-Token", token)) }
        let result = try await TestClient(baseURL: baseURL).execute(
            method, "/admin/api" + path, headers: fields, body: Array(payload))
        transcript.append(result.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n") + "\n" + result.text)
        return result
    }

    /// Whether `secret` appears in any answer (headers or body) this client has received.
    func everReceived(_ secret: String) -> Bool {
        transcript.contains { $0.contains(secret) }
    }
}

extension TestResponse {
    func list(_ key: String) -> [[String: Any]] { jsonObject[key] as? [[String: Any]] ?? [] }
    var errorField: String? { (jsonObject["error"] as? [String: Any])?["field"] as? String }
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
