import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import TuisongGateway

/// `POST /api/v1/push` with an `Idempotency-Key`, through a running gateway: a client that
/// retries a send it saw fail gets the first message back instead of a second push.
@Suite(.serialized) struct IdempotencyKeyEndToEndTests {
    static var push: [String: Any] {
        [
            "audience": ["tokens": [token(1)]], "notification": ["alert": "hi"], "environment": "production",
        ]
    }

    func send(_ gw: RunningGateway, _ key: String, idempotencyKey: String?, json: Any = push) async throws
        -> TestResponse
    {
        try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key, json: json,
            headers: idempotencyKey.map { ["Idempotency-Key": $0] } ?? [:])
    }

    @Test(arguments: PluginStoreBackend.allCases) func aRepeatAnswersTheFirstMessageID(
        _ backend: PluginStoreBackend
    ) async throws {
        let gw = try await TestGateway.start(database: backend)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp()
        let (_, otherKey) = try await gw.createApp(bundleID: "com.example.other")

        let first = try await send(gw, key, idempotencyKey: "order-1")
        #expect(first.status == 202)
        let id = try #require(first.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))

        // Same status and shape, the first id; the body does not matter, even one that would
        // be refused on its own.
        for body: Any in [Self.push, ["audience": ["tag": "other"], "notification": ["alert": "bye"]], ["x": 1]] {
            let again = try await send(gw, key, idempotencyKey: "order-1", json: body)
            #expect(again.status == 202)
            #expect(again.jsonObject["message_id"] as? Int == id)
            #expect(again.jsonObject["state"] as? String == "completed")
        }
        #expect(try await gw.runtime.store.messages(appID: appID, limit: 10).map(\.id) == [Int64(id)])
        #expect(gw.runtime.localMock?.receivedNotifications().count == 1)

        // Another key, no key, or the same key in another app: new messages.
        let other = try await send(gw, key, idempotencyKey: "order-2")
        #expect(other.status == 202 && other.jsonObject["message_id"] as? Int != id)
        let plain = try await send(gw, key, idempotencyKey: nil)
        #expect(plain.status == 202 && plain.jsonObject["message_id"] as? Int != id)
        let elsewhere = try await send(gw, otherKey, idempotencyKey: "order-1")
        #expect(elsewhere.status == 202 && elsewhere.jsonObject["message_id"] as? Int != id)

        // A refused first request leaves no key behind: the next one with that key is new.
        let refused = try await send(gw, key, idempotencyKey: "order-3", json: ["x": 1])
        #expect(refused.status == 400)
        let accepted = try await send(gw, key, idempotencyKey: "order-3")
        #expect(accepted.status == 202)
    }

    /// Issue #40 item 11: whitespace after the key is not part of it (RFC 9110 §5.5), and a
    /// repeat answers the first message without warnings computed from its own body.
    @Test func trailingWhitespaceIsNotPartOfTheKeyAndARepeatCarriesNoNewWarnings() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp()
        let first = try await send(gw, key, idempotencyKey: "k")
        let id = try #require(first.jsonObject["message_id"] as? Int)
        for spelled in ["k  ", "k\t"] {
            let again = try await send(gw, key, idempotencyKey: spelled)
            #expect(again.status == 202)
            #expect(again.jsonObject["message_id"] as? Int == id)
        }
        // The repeat's own body names a tag no device has: the first message is answered, with
        // no `audience_empty` warning about a send that never happens.
        let repeated = try await send(
            gw, key, idempotencyKey: "k", json: ["audience": ["tag": "nobody"], "notification": ["alert": "x"]])
        #expect(repeated.jsonObject["message_id"] as? Int == id)
        #expect(repeated.jsonObject["warnings"] == nil)
        let fresh = try await send(
            gw, key, idempotencyKey: "k2", json: ["audience": ["tag": "nobody"], "notification": ["alert": "x"]])
        #expect(fresh.jsonObject["warnings"] as? [String] == ["audience_empty"])
        #expect(try await gw.runtime.store.messages(appID: appID, limit: 10).count == 2)
    }

    @Test func aBadKeyIsRefused() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp()
        for bad in [String(repeating: "k", count: 256), "clé"] {
            let response = try await send(gw, key, idempotencyKey: bad)
            #expect(response.status == 400)
            #expect(response.errorCode == "invalid_request")
        }
        let longest = try await send(gw, key, idempotencyKey: String(repeating: "k", count: 255))
        #expect(longest.status == 202)
        #expect(try await gw.runtime.store.messages(appID: appID, limit: 10).count == 1)
    }

    /// The case the key exists for: the message was committed, the client saw the connection
    /// drop (here: the gateway went away) and retries against the restarted gateway.
    @Test func aRetryAfterARestartAnswersTheCommittedMessage() async throws {
        let first = try await TestGateway.start()
        let (appID, key) = try await first.createApp()
        let sent = try await send(first, key, idempotencyKey: "before-the-crash")
        #expect(sent.status == 202)
        let id = try #require(sent.jsonObject["message_id"] as? Int)
        await first.stop(keepingDirectory: true)

        let again = try await TestGateway.start(directory: first.directory)
        defer { Task { await again.stop() } }
        let retried = try await send(again, key, idempotencyKey: "before-the-crash")
        #expect(retried.status == 202)
        #expect(retried.jsonObject["message_id"] as? Int == id)
        #expect(try await again.runtime.store.messages(appID: appID, limit: 10).map(\.id) == [Int64(id)])
    }

    @Test func theKeyIsOneHeader() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let body = try JSONSerialization.data(withJSONObject: Self.push)
        let response = try await TestClient.execute(
            "POST", url: "\(gw.baseURL)/api/v1/push",
            headers: [
                ("Authorization", "Bearer \(key)"), ("Content-Type", "application/json"), ("Idempotency-Key", "a"),
                ("Idempotency-Key", "b"),
            ], body: Array(body))
        #expect(response.status == 400)
        #expect(response.errorCode == "invalid_request")
    }
}
