import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongHTTP
import TuisongPlugin
import TuisongPluginTestKit

@testable import EasemobProvider

/// The provider through a router without sockets, on a temporary store and a manual clock:
/// rate limits and token lifetimes, where time has to move.
@Suite struct RouterTests {
    struct Fixture {
        let temporary: TemporaryStore
        let clock: ManualClock
        let router: TestRouter

        init(configuration: JSONValue? = nil, compute: ComputePool? = nil) async throws {
            clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
            temporary = try TemporaryStore(providers: [EasemobProvider.self], clock: clock)
            let sealer = try TestSealer()
            var app = try await temporary.store.createApp(
                name: "chat", bundleID: "com.example.chat", apiKeyHash: UUID().uuidString)
            app.vendorSettings["easemob"] = try EasemobAppSettings(
                org: "acme", appName: "chat", clientID: "id", clientSecret: "secret",
                timeZone: TimeZone(secondsFromGMT: 0)!
            ).stored(appID: app.id, sealer: sealer)
            try await temporary.store.updateApp(app)
            let provider = try EasemobProvider(
                context: temporary.context(
                    gateway: RecordingGateway(store: temporary.store, clock: clock), secrets: sealer,
                    configuration: configuration, compute: compute))
            router = TestRouter()
            provider.register(on: router.router)
        }

        func token(ttl: Int? = nil) async throws -> TestResponse {
            var body: [String: Any] = [
                "grant_type": "client_credentials", "client_id": "id", "client_secret": "secret",
            ]
            if let ttl { body["ttl"] = ttl }
            return try await router.send(.POST, "/acme/chat/token", json: body)
        }

        func users(_ token: String) async throws -> TestResponse {
            try await router.send(
                .GET, "/acme/chat/users",
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"])
        }
    }

    @Test func callsOverTheRateAnswer429UntilTheBucketRefills() async throws {
        let f = try await Fixture(configuration: ["requests_per_second": 1, "burst": 2])
        defer { f.temporary.remove() }
        let token = try #require(try await f.token().jsonObject["access_token"] as? String)
        #expect(try await f.users(token).status == 200)
        #expect(try await f.users(token).status == 200)
        let limited = try await f.users(token)
        #expect(limited.status == 429 && limited.jsonObject["error"] as? String == "reach_limit")
        f.clock.advance(by: 1)
        #expect(try await f.users(token).status == 200)
        // Token grants have their own bucket (one used above, one refilled since), taken before
        // the secret is checked.
        #expect(try await f.token().status == 200)
        #expect(try await f.token().status == 200)
        #expect(try await f.token().status == 429)
    }

    /// Password hashing waits for the gateway's compute pool (never the request's thread or the
    /// cooperative pool); when the pool's queue is full, Easemob's 503 with `Retry-After`.
    @Test func passwordHashingGoesToTheComputePoolAndAFullQueueIs503() async throws {
        let compute = ComputePool(threads: 1, queueLimit: 0)
        let f = try await Fixture(compute: compute)
        defer { f.temporary.remove() }
        let token = try #require(try await f.token().jsonObject["access_token"] as? String)
        let headers = ["Authorization": "Bearer \(token)"]
        // The pool's only thread held, no room to wait.
        let gate = DispatchSemaphore(value: 0)
        let entered = Mutex(false)
        let holding = Task {
            try await compute.run {
                entered.withLock { $0 = true }
                gate.wait()
            }
        }
        while !entered.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
        let users = [["username": "bob", "password": "pw"]]
        let busy = try await f.router.send(.POST, "/acme/chat/users", json: users, headers: headers)
        #expect(busy.status == 503, "\(busy.text)")
        #expect(busy.jsonObject["error"] as? String == "service_unavailable")
        #expect(busy.headers["retry-after"] == "1")
        let login = try await f.router.send(
            .POST, "/acme/chat/token", json: ["grant_type": "password", "username": "bob", "password": "pw"])
        #expect(login.status == 503)
        gate.signal()
        try await holding.value
        // Once the thread is back for more (a moment after its job ended), the batch goes through.
        let registered = try await eventually(within: 10, every: .milliseconds(20)) {
            try await f.router.send(.POST, "/acme/chat/users", json: users, headers: headers).status == 200
        }
        #expect(registered)
    }

    @Test func aTokenLivesItsTTLOnTheGatewaysClock() async throws {
        let f = try await Fixture()
        defer { f.temporary.remove() }
        let granted = try await f.token(ttl: 30).jsonObject
        #expect(granted["expires_in"] as? Int == 30)
        let token = try #require(granted["access_token"] as? String)
        f.clock.advance(by: 29)
        #expect(try await f.users(token).status == 200)
        f.clock.advance(by: 1)
        let expired = try await f.users(token)
        #expect(expired.status == 401 && expired.jsonObject["error"] as? String == "unauthorized")
        // ttl 0: never expires (and says so with a long, non-zero expires_in).
        let forever = try await f.token(ttl: 0).jsonObject
        #expect((forever["expires_in"] as? Int ?? 0) > 300_000_000)
        f.clock.advance(by: 400_000_000)
        #expect(try await f.users(try #require(forever["access_token"] as? String)).status == 200)
    }

    @Test func badConfigurationNamesTheKey() throws {
        #expect(throws: ProviderConfigError.self) { try EasemobConfiguration(["burst": 0]) }
        #expect(throws: ProviderConfigError.self) { try EasemobConfiguration(["unknown": 1]) }
        #expect(throws: ProviderConfigError.self) { try EasemobConfiguration("x") }
        let parsed = try EasemobConfiguration(["requests_per_second": 5, "burst": 10])
        #expect(parsed.requestsPerSecond == 5 && parsed.burst == 10)
    }

    @Test func theGatewaysOwnPathsKeepTheirDialect() async throws {
        let f = try await Fixture()
        defer { f.temporary.remove() }
        f.router.router.add(.GET, "/api/v1/messages/{id}") { _ in .json(object: ["ok": true]) }
        // A wrong method on a native path: the native 405, not Easemob's.
        let native = try await f.router.send(.DELETE, "/api/v1/messages/7")
        #expect(native.status == 405 && native.jsonObject["error"] is [String: Any])
        // An unconfigured org/app on an Easemob resource: Easemob's 404.
        let wrongApp = try await f.router.send(.GET, "/acme/other/users")
        #expect(
            wrongApp.status == 404 && wrongApp.jsonObject["error"] as? String == "organization_application_not_found")
        // A configured pair, an unknown resource: Easemob's 404 too.
        let unknown = try await f.router.send(.GET, "/acme/chat/nothing/here")
        #expect(unknown.status == 404 && unknown.jsonObject["error"] as? String == "service_resource_not_found")
    }
}
