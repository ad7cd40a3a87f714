import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongGateway
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import EasemobProvider

/// Easemob's answer, picked apart.
extension TestResponse {
    var error: String? { jsonObject["error"] as? String }
    var data: [String: Any] { jsonObject["data"] as? [String: Any] ?? [:] }
    var entities: [[String: Any]] { jsonObject["entities"] as? [[String: Any]] ?? [] }
}

/// A real `tuisong serve` (GatewayRuntime) with the Easemob provider mounted from config, the
/// bundled APNs mock, and one app configured for `/acme/chat`.
struct EasemobGateway: Sendable {
    static let clientID = "YXA6i-Ak8Ol4Eei2l11ZjV-EAg"
    static let clientSecret = "YXA6VunqiNxoB7IwXHInk1cGiXOOJfc"
    /// The app's native API key (to read messages through `/api/v1/messages`).
    static let apiKey = "tsk_easemob-e2e-native-key"

    let running: RunningGateway
    let app: App
    var runtime: GatewayRuntime { running.runtime }
    var baseURL: String { running.baseURL }
    var base: String { "\(baseURL)/acme/chat" }
    var mock: LookAlikeServer { running.mock }

    /// - Parameter environment: more `TUISONG_*` variables (a database to open instead of the
    ///   directory's SQLite file).
    static func with(
        timeZone: String? = nil, in existing: URL? = nil, keep: Bool = false,
        clock: any TuisongCore.Clock = SystemClock(), environment: [String: String] = [:],
        _ body: (EasemobGateway) async throws -> Void
    ) async throws {
        let running = try await RunningGateway.start(
            providers: ["easemob"], environment: environment, directory: existing, logLevel: .critical,
            name: "easemob-e2e", clock: clock)
        let runtime = running.runtime
        do {
            var app: App
            if let first = try await runtime.store.apps().first {
                app = first
            } else {
                app = try await runtime.store.createApp(
                    name: "chat", bundleID: "com.example.chat", apiKeyHash: APIKey.hash(apiKey))
                let settings = EasemobAppSettings(
                    org: "acme", appName: "chat", clientID: clientID, clientSecret: clientSecret,
                    timeZone: TimeZone(secondsFromGMT: 0)!)
                app.vendorSettings["easemob"] = try settings.stored(
                    appID: app.id, sealer: MasterKeySealer(masterKey: runtime.masterKey), timeZoneText: timeZone)
                try await runtime.store.updateApp(app)
            }
            let gateway = EasemobGateway(running: running, app: app)
            try await gateway.waitUntilServed()
            try await body(gateway)
        } catch {
            await running.stop()
            throw error
        }
        await running.stop(keepingDirectory: keep)
    }

    /// The provider learns of newly configured pairs within about a second.
    func waitUntilServed() async throws {
        let served = try await eventually(within: 10, every: .milliseconds(100)) {
            try await call("POST", "/token", ["grant_type": "client_credentials"]).status != 404
        }
        if !served { Issue.record("/acme/chat was never served") }
    }

    /// A call as Easemob's clients make it: JSON content type on every method, body or not.
    func call(
        _ method: String, _ path: String, _ body: Any? = nil, token: String? = nil, raw: Data? = nil,
        headers: [String: String] = [:]
    ) async throws -> TestResponse {
        var fields = [("Content-Type", "application/json"), ("Accept", "application/json")]
        if let token { fields.append(("Authorization", "Bearer \(token)")) }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            fields.removeAll { $0.0.lowercased() == name.lowercased() }
            fields.append((name, value))
        }
        let payload = try raw ?? body.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data()
        return try await TestClient(baseURL: baseURL).execute(
            method, "/acme/chat" + path, headers: fields, body: Array(payload))
    }

    /// A message as the native API shows it (`/api/v1/messages/{id}`), by its Easemob msg id.
    func nativeMessage(msgID: String) async throws -> [String: Any] {
        let record = try #require(try await runtime.store.message(appID: app.id, vendorMessageID: msgID))
        return try await TestClient(baseURL: baseURL).execute(
            "GET", "/api/v1/messages/\(record.id)", headers: [("Authorization", "Bearer \(Self.apiKey)")]
        ).jsonObject
    }

    /// The app's Easemob settings replaced as `tuisong app set-easemob` replaces them.
    func setEasemob(clientID: String, clientSecret: String) async throws {
        var app = try #require(try await runtime.store.app(id: app.id))
        let others = try await runtime.store.apps().filter { $0.id != app.id }
        try VendorSettingsUpdate.replace(
            vendor: "easemob",
            with: ["org": "acme", "app_name": "chat", "client_id": clientID, "client_secret": clientSecret],
            in: &app, sealer: MasterKeySealer(masterKey: runtime.masterKey), otherApps: others)
        try await runtime.store.updateApp(app)
        try await publishAppChange(app.id)
    }

    /// Tells the running gateway that the app changed, as the CLI does (it forgets the app it
    /// kept opened), and waits until it has: on PostgreSQL the change comes back through NOTIFY a
    /// moment after the publish returns, and a request sent at once could still meet the old app.
    func publishAppChange(_ id: Int64) async throws {
        let taken = Mutex(false)
        runtime.engine.apps.onChange { changed in if changed == id { taken.withLock { $0 = true } } }
        await runtime.store.publish(.app(id))
        try await waitUntil("the gateway took app \(id)'s change") { taken.withLock { $0 } }
    }

    func appToken(ttl: Int? = nil) async throws -> String {
        var body: [String: Any] = [
            "grant_type": "client_credentials", "client_id": Self.clientID, "client_secret": Self.clientSecret,
        ]
        if let ttl { body["ttl"] = ttl }
        let answer = try await call("POST", "/token", body)
        #expect(answer.status == 200, "\(answer.text)")
        return try #require(answer.jsonObject["access_token"] as? String)
    }

    func register(_ token: String, _ users: [[String: Any]]) async throws {
        let answer = try await call("POST", "/users", users, token: token)
        #expect(answer.status == 200, "\(answer.text)")
    }

    func bind(_ token: String, user: String, device: String, apnsToken: String, notifier: String = "")
        async throws -> TestResponse
    {
        try await call(
            "PUT", "/users/\(user)/push/binding",
            ["device_id": device, "device_token": apnsToken, "notifier_name": notifier], token: token)
    }

    /// Waits until the Tuisong message of this Easemob msg id has an outcome for every device.
    func completed(msgID: String) async throws -> (status: MessageStatus, deliveries: [DeliveryRecord]) {
        // The message is durable before the API answers, so it exists by now.
        guard let record = try await runtime.store.message(appID: app.id, vendorMessageID: msgID) else {
            throw EasemobE2EError("no message \(msgID)")
        }
        let status = try await running.completed(messageID: record.id)
        let deliveries = try await runtime.store.deliveries(messageID: record.id, state: nil, cursor: nil, limit: 1000)
        return (status, deliveries.items)
    }

    /// The payloads the mock received for this msg id, by device token.
    func received(msgID: String) -> [String: [String: Any]] {
        var result: [String: [String: Any]] = [:]
        for notification in mock.receivedNotifications() {
            guard let json = (try? JSONSerialization.jsonObject(with: Data(notification.payload))) as? [String: Any],
                json["m"] as? String == msgID
            else { continue }
            result[notification.deviceToken] = json
        }
        return result
    }
}

struct EasemobE2EError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A distinct APNs device token.
func apnsToken(_ n: Int) -> String {
    String(repeating: "e", count: 48) + String(format: "%016x", n)
}

extension [String: Any] {
    var aps: [String: Any] { self["aps"] as? [String: Any] ?? [:] }
    var alert: [String: Any] { aps["alert"] as? [String: Any] ?? [:] }
    var body: String? { alert["body"] as? String }
    var badge: Int? { aps["badge"] as? Int }
}
