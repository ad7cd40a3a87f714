import Foundation
import Testing
import TuisongCore
import TuisongHTTP
import TuisongPlugin
import TuisongPluginTestKit
import TuisongStore

@testable import TuisongGateway

@Suite(.serialized) struct AdminAuthTests {
    @Test func everyAdminPathWithoutASessionIs401() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        let app = try await gw.runtime.store.createApp(name: "a", bundleID: "com.example.a", apiKeyHash: "h")
        let probes: [(String, String)] = [
            ("GET", "/session"), ("GET", "/apps"), ("POST", "/apps"), ("GET", "/apps/\(app.id)"),
            ("PUT", "/apps/\(app.id)"), ("DELETE", "/apps/\(app.id)"), ("POST", "/apps/\(app.id)/api-key"),
            ("GET", "/apps/\(app.id)/templates"), ("GET", "/apps/\(app.id)/devices"), ("GET", "/monitor"),
            ("GET", "/messages"), ("POST", "/logout"), ("GET", "/vendors"),
            // Unknown paths and wrong methods too: the API's shape is not visible before login.
            ("GET", "/no-such-thing"), ("PATCH", "/apps"), ("GET", "/login"),
            // The router's own OPTIONS answer would list the methods of paths that exist.
            ("OPTIONS", "/apps"), ("OPTIONS", "/apps/\(app.id)"), ("OPTIONS", "/login"), ("OPTIONS", "/no-such-thing"),
        ]
        for (method, path) in probes {
            let result = try await client.call(method, path, json: method == "GET" ? nil : [:])
            #expect(result.status == 401, "\(method) \(path) answered \(result.status)")
            #expect(result.errorCode == "unauthorized", "\(method) \(path)")
            #expect(result.headers["cache-control"] == "no-store")
            // Issue #40 item 11: a wrong method's 401 does not list the path's methods either.
            #expect(result.headers["allow"] == nil, "\(method) \(path) sent Allow")
        }
        // A made-up cookie of the right shape is no session either.
        let forged = try await client.call(
            "GET", "/apps", cookie: "tuisong_session=" + String(repeating: "A", count: 43))
        #expect(forged.status == 401)
        #expect(try await gw.runtime.store.app(id: app.id) != nil, "nothing was deleted without a session")
    }

    /// The front door's refusals come before authentication: the login and every other admin
    /// path answer a request framed two ways with the same 400 as any path of the gateway.
    @Test func frontDoorRefusalsComeBeforeTheLogin() async throws {
        let (gw, _) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        for path in ["/admin/api/login", "/admin/api/apps", "/admin/api/no-such-thing", "/api/v1/push"] {
            let response = try await offPool {
                let client = try RawHTTPClient(port: gw.port, receiveTimeout: 5)
                try client.send(
                    "POST \(path) HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                )
                return try client.readResponse()
            }
            #expect(response.status == 400, "\(path): \(response.text)")
            #expect(response.errorCode == "bad_request", "\(path): \(response.text)")
        }
    }

    @Test func loginSetsAStrictHttpOnlyCookieAndACSRFToken() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        let wrong = try await client.login("not the password")
        #expect(wrong.status == 401)
        #expect(wrong.errorCode == "invalid_password")
        #expect(wrong.headers["set-cookie"] == nil)

        let ok = try await client.login()
        #expect(ok.status == 200)
        let cookie = try #require(ok.headers["set-cookie"])
        #expect(cookie.hasPrefix("tuisong_session="))
        #expect(cookie.contains("; HttpOnly"))
        #expect(cookie.contains("; SameSite=Strict"))
        #expect(cookie.contains("; Path=/admin/api"))
        #expect(!cookie.contains("Secure"), "plain HTTP without an https public URL: no Secure flag")
        let csrf = try #require(ok.jsonObject["csrf_token"] as? String)
        #expect(csrf.count >= 40)
        #expect(!cookie.contains(csrf), "the CSRF token is not the cookie")

        let session = try await client.call("GET", "/session")
        #expect(session.status == 200)
        #expect(session.jsonObject["csrf_token"] as? String == csrf)
        // The console's Android services are the gateway's transport list (#30 item 12).
        let features = try #require(session.jsonObject["features"] as? [String: Any])
        #expect(features["android_channels"] as? [String] == PushChannel.android.map(\.rawValue))
        // With a session, OPTIONS says what a path allows.
        let options = try await client.call("OPTIONS", "/apps")
        #expect(options.status == 204)
        #expect(options.headers["allow"]?.contains("POST") == true)
    }

    @Test func cookieIsSecureWhenTheConsoleIsServedOverHTTPS() async throws {
        let (gw, client) = try await AdminTestClient.start(environment: [
            "TUISONG_WEB_PUBLIC_URL": "https://push.example.com/"
        ])
        defer { Task { await gw.stop() } }
        let ok = try await client.login()
        #expect(ok.status == 200)
        #expect(ok.headers["set-cookie"]?.contains("; Secure") == true)
    }

    @Test func mutationsNeedTheSessionsCSRFToken() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let body: [String: Any] = ["name": "Demo", "bundle_id": "com.example.demo"]

        let missing = try await client.call("POST", "/apps", json: body, csrf: false)
        #expect(missing.status == 403)
        #expect(missing.errorCode == "csrf_failed")
        let wrong = try await client.call("POST", "/apps", json: body, csrfValue: String(repeating: "x", count: 43))
        #expect(wrong.status == 403)
        // Another session's token does not work with this cookie.
        let other = AdminTestClient(baseURL: gw.baseURL)
        try await other.login()
        let crossed = try await client.call("POST", "/apps", json: body, csrfValue: other.csrf)
        #expect(crossed.status == 403)
        #expect(try await gw.runtime.store.apps().isEmpty, "no refused request created anything")

        let created = try await client.call("POST", "/apps", json: body)
        #expect(created.status == 201)
        // Reads need no token.
        let list = try await client.call("GET", "/apps", csrf: false)
        #expect(list.status == 200)
        // Logout is a mutation too.
        #expect(try await client.call("POST", "/logout", csrf: false).status == 403)
    }

    @Test func logoutEndsTheSession() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let out = try await client.call("POST", "/logout")
        #expect(out.status == 204)
        #expect(out.headers["set-cookie"]?.contains("Max-Age=0") == true)
        let after = try await client.call("GET", "/apps")
        #expect(after.status == 401)
    }

    @Test func repeatedFailuresGetGrowingDelays() async throws {
        let clock = ManualClock(Date())
        let (gw, client) = try await AdminTestClient.start(clock: clock)
        defer { Task { await gw.stop() } }
        for attempt in 1...3 {
            let result = try await client.login("wrong \(attempt)")
            #expect(result.status == 401)
            #expect(result.headers["retry-after"] == nil, "the first failures are free")
        }
        let fourth = try await client.login("wrong 4")
        #expect(fourth.status == 401)
        #expect(fourth.headers["retry-after"] == "1")
        // Locked now: even the right password waits.
        let locked = try await client.login()
        #expect(locked.status == 429)
        #expect(locked.errorCode == "too_many_attempts")
        #expect(locked.headers["retry-after"] == "1")
        clock.advance(by: 1.1)
        let ok = try await client.login()
        #expect(ok.status == 200, "the lock ends and a success clears the record")
        let fresh = try await client.login("wrong again")
        #expect(fresh.headers["retry-after"] == nil)
    }

    @Test func throttleDoublesUpToTheCapAndForgetsAfterSuccess() {
        let clock = ManualClock()
        let throttle = LoginThrottle(clock: clock, freeFailures: 2, maxDelay: 8)
        #expect(throttle.recordFailure(for: "a") == 0)
        #expect(throttle.recordFailure(for: "a") == 0)
        #expect(throttle.waitTime(for: "a") == nil)
        var delays: [TimeInterval] = []
        for _ in 0..<6 {
            delays.append(throttle.recordFailure(for: "a"))
            clock.advance(by: 10)
        }
        #expect(delays == [1, 2, 4, 8, 8, 8])
        #expect(throttle.waitTime(for: "b") == nil, "addresses are counted apart")
        throttle.recordFailure(for: "a")
        #expect(throttle.waitTime(for: "a") == 8)
        clock.advance(by: 3)
        #expect(throttle.waitTime(for: "a") == 5)
        throttle.recordSuccess(for: "a")
        #expect(throttle.waitTime(for: "a") == nil)
        #expect(throttle.recordFailure(for: "a") == 0)
        // An hour of quiet starts the count again.
        throttle.recordFailure(for: "a")
        clock.advance(by: 3700)
        #expect(throttle.recordFailure(for: "a") == 0)
    }

    /// A SQLite store in a temporary directory, removed after `body`.
    private func withSessionStore<T>(_ body: (SQLiteStore) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-sessions-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appending(path: "tuisong.db").path)
        defer { try? store.close() }
        return try await body(store)
    }

    @Test func sessionsExpireWhenIdleAndAfterTheirLifetime() async throws {
        try await withSessionStore { store in
            let clock = ManualClock()
            let sessions = AdminSessions(store: store, clock: clock, idleTimeout: 60, absoluteTimeout: 300)
            let (cookie, _) = try await sessions.create()
            let request = try Request(
                method: .GET, target: "/admin/api/apps", headers: ["Cookie": "a=b; tuisong_session=\(cookie)"])
            #expect(try await sessions.session(for: request) != nil)
            clock.advance(by: 50)
            #expect(try await sessions.session(for: request) != nil, "a request refreshes the idle timer")
            clock.advance(by: 50)
            #expect(try await sessions.session(for: request) != nil)
            clock.advance(by: 61)
            #expect(try await sessions.session(for: request) == nil, "idle too long")
            #expect(!sessions.knownSession(for: request))

            let (second, _) = try await sessions.create()
            let again = try Request(method: .GET, target: "/", headers: ["Cookie": "tuisong_session=\(second)"])
            for _ in 0..<6 {
                clock.advance(by: 55)
                _ = try await sessions.session(for: again)
            }
            #expect(try await sessions.session(for: again) == nil, "past the absolute lifetime even when active")
            #expect(try await sessions.count() == 0, "expired sessions are deleted")
        }
    }

    @Test func sessionsAreSharedByNodesAndSurviveARestart() async throws {
        try await withSessionStore { store in
            let clock = ManualClock()
            let nodeA = AdminSessions(store: store, clock: clock)
            let nodeB = AdminSessions(store: store, clock: clock)
            let (cookie, created) = try await nodeA.create()
            let request = try Request(
                method: .GET, target: "/admin/api/apps", headers: ["Cookie": "tuisong_session=\(cookie)"])
            #expect(!nodeB.knownSession(for: request), "node B has not looked it up yet")
            let onB = try #require(try await nodeB.session(for: request))
            #expect(onB.csrfToken == created.csrfToken)
            #expect(nodeB.knownSession(for: request))

            let restarted = AdminSessions(store: store, clock: clock)
            #expect(
                try await restarted.session(for: request)?.csrfToken == created.csrfToken, "a restart logs nobody out")

            // Logging out on one node ends the session on every node.
            try await nodeB.end(for: request)
            #expect(try await nodeA.session(for: request) == nil)
            #expect(!nodeA.knownSession(for: request))

            // The password changed: every session ends.
            let (first, _) = try await nodeA.create()
            let (second, _) = try await nodeB.create()
            try await restarted.endAll()
            for value in [first, second] {
                let probe = try Request(method: .GET, target: "/", headers: ["Cookie": "tuisong_session=\(value)"])
                #expect(try await nodeA.session(for: probe) == nil)
            }
        }
    }

    @Test func theCookieIsNeverStored() async throws {
        try await withSessionStore { store in
            let sessions = AdminSessions(store: store, clock: ManualClock())
            let (cookie, _) = try await sessions.create()
            let keys = try await store.sharedDatabase.read { db in
                try db.query("SELECT key FROM console_sessions").compactMap(\.values.first?.string)
            }
            #expect(keys.count == 1)
            #expect(keys[0] != cookie && keys[0].count == 64, "the SHA-256 of the cookie, in hex")
        }
    }
}
