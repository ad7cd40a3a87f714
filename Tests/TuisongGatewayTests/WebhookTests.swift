import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongHTTP
import TuisongHTTPClient
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Standard Webhooks verification written apart from the sender: Python's own hmac, hashlib and
/// base64, as the specification's reference libraries do it. Reads (secret, id, timestamp,
/// signature header, body) and prints "ok" when one of the header's `v1` signatures matches.
enum IndependentVerifier {
    static let script = #"""
        import sys, hmac, hashlib, base64, json
        cases = json.load(sys.stdin)
        out = []
        for c in cases:
            secret = c["secret"]
            if secret.startswith("whsec_"):
                secret = secret[len("whsec_"):]
            key = base64.b64decode(secret)
            signed = (c["id"] + "." + c["timestamp"] + ".").encode() + base64.b64decode(c["body_b64"])
            expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
            ok = False
            for part in c["signature"].split(" "):
                version, _, value = part.partition(",")
                if version == "v1" and hmac.compare_digest(value, expected):
                    ok = True
            out.append("ok" if ok else "bad")
        sys.stdout.write(" ".join(out))
        """#

    struct Case {
        var secret: String
        var id: String
        var timestamp: String
        var signature: String
        var body: [UInt8]
    }

    /// "ok" or "bad" for each case, in order.
    static func verify(_ cases: [Case]) throws -> [String] {
        let input: [[String: String]] = cases.map {
            [
                "secret": $0.secret, "id": $0.id, "timestamp": $0.timestamp, "signature": $0.signature,
                "body_b64": Data($0.body).base64EncodedString(),
            ]
        }
        let run = try Python3.run(script, input: Array(try JSONSerialization.data(withJSONObject: input)))
        guard run.status == 0 else { throw PythonCoprocessError(description: "python3 failed: \(run.errors)") }
        return String(decoding: run.output, as: UTF8.self).split(separator: " ").map(String.init)
    }
}

/// An app server on loopback: records every request and answers what `answer` says.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var id: String
        var timestamp: String
        var signature: String
        var contentType: String
        var body: [UInt8]
        var json: JSONValue? { try? JSONValue(parsing: body) }
    }

    private final class Record: Sendable {
        let received = Mutex<[Received]>([])
        let status = Mutex<[Int]>([])
        let delay = Mutex<Duration>(.zero)
    }

    let server: HTTPServer
    private let record = Record()

    init() throws {
        let router = Router()
        server = HTTPServer(configuration: HTTPServer.Configuration(host: "127.0.0.1", port: 0), router: router)
        let record = self.record
        router.add(.POST, "/hook") { request in
            let delay = record.delay.withLock { $0 }
            if delay > .zero { try? await Task.sleep(for: delay) }
            record.received.withLock {
                $0.append(
                    Received(
                        id: request.headers["webhook-id"] ?? "", timestamp: request.headers["webhook-timestamp"] ?? "",
                        signature: request.headers["webhook-signature"] ?? "",
                        contentType: request.headers["content-type"] ?? "", body: request.body))
            }
            let code = record.status.withLock { $0.isEmpty ? 204 : $0.removeFirst() }
            return code == 204 ? .empty(status: 204) : .json(object: ["error": "try later"], status: code)
        }
        try server.start()
    }

    var url: String { "http://127.0.0.1:\(server.port)/hook" }
    var all: [Received] { record.received.withLock { $0 } }

    /// The next answers, in order (204 after them).
    func answer(_ codes: [Int]) { record.status.withLock { $0 = codes } }

    /// How long each answer takes (a slow app server).
    func slow(_ delay: Duration) { record.delay.withLock { $0 = delay } }

    /// Waits until `predicate` holds for what was received.
    func wait(timeout: Duration = .seconds(30), until predicate: ([Received]) -> Bool) async throws -> [Received] {
        try await waitUntil("the webhook receiver's condition (\(all.count) requests)", within: timeout) {
            predicate(all)
        }
        return all
    }

    func stop() async { await server.shutdown() }
}

@Suite struct WebhookSignatureTests {
    /// The specification's published vector (standard-webhooks, libraries/*/webhook tests).
    static let vector = (
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
        timestamp: Int64(1_614_265_330), body: #"{"test": 2432232314}"#,
        signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    )

    @Test func theSignerMatchesThePublishedVector() throws {
        let v = Self.vector
        let key = try #require(WebhookSignature.key(of: v.secret))
        #expect(
            WebhookSignature.sign(id: v.id, timestamp: v.timestamp, body: Array(v.body.utf8), key: key) == v.signature)
    }

    @Test func theIndependentVerifierAcceptsTheVectorAndRefusesChanges() throws {
        let v = Self.vector
        let good = IndependentVerifier.Case(
            secret: v.secret, id: v.id, timestamp: String(v.timestamp), signature: v.signature, body: Array(v.body.utf8)
        )
        var otherBody = good
        otherBody.body = Array(#"{"test": 2432232315}"#.utf8)
        var otherID = good
        otherID.id = "msg_other"
        var rotation = good
        rotation.signature = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= " + v.signature
        #expect(try IndependentVerifier.verify([good, otherBody, otherID, rotation]) == ["ok", "bad", "bad", "ok"])
    }

    @Test func aRotationSignsWithBothSecrets() throws {
        let old = WebhookSignature.newSecret()
        let new = WebhookSignature.newSecret()
        #expect(new.hasPrefix("whsec_") && new != old)
        let body = Array(#"{"type":"webhook.test"}"#.utf8)
        let header = WebhookSignature.header(
            id: "msg_1", timestamp: 1_700_000_000, body: body,
            keys: [try #require(WebhookSignature.key(of: new)), try #require(WebhookSignature.key(of: old))])
        #expect(header.split(separator: " ").count == 2)
        let cases = [new, old, WebhookSignature.newSecret()].map {
            IndependentVerifier.Case(secret: $0, id: "msg_1", timestamp: "1700000000", signature: header, body: body)
        }
        #expect(try IndependentVerifier.verify(cases) == ["ok", "ok", "bad"])
    }
}

@Suite struct WebhookAddressRulesTests {
    static func address(_ text: String) -> ConnectAddress {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: v4) { ConnectAddress(bytes: Array($0), port: 443) }
        }
        var v6 = in6_addr()
        precondition(inet_pton(AF_INET6, text, &v6) == 1, text)
        return withUnsafeBytes(of: v6) { ConnectAddress(bytes: Array($0), port: 443) }
    }

    @Test func privateAndMetadataAddressesAreRefused() {
        let refused = [
            "127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
            "100.64.0.1", "0.0.0.0", "255.255.255.255", "224.0.0.1", "::1", "::", "fd00::1", "fd00:ec2::254",
            "fc00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "ff02::1",
        ]
        for text in refused { #expect(!WebhookAddressRules.isPublic(Self.address(text)), "\(text)") }
        for text in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            #expect(WebhookAddressRules.isPublic(Self.address(text)), "\(text)")
        }
    }
}

@Suite struct WebhookRetryTests {
    static let endpoint = WebhookEndpoint(
        id: 1, appID: 1, url: "https://a.example/", description: "", events: [], encryptedSecret: [], createdAt: Date(),
        updatedAt: Date())

    @Test func answersDecideWhatFollows() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        func decide(_ status: Int, headers: [(String, String)] = [], before: Int = 0, failingSince: Date? = nil)
            -> WebhookSender.Outcome
        {
            var endpoint = Self.endpoint
            endpoint.failingSince = failingSince
            return WebhookSender.decide(
                .success(HTTPClientResponse(status: status, headers: headers)), attemptsBefore: before,
                endpoint: endpoint, now: now, jitter: 1)
        }
        #expect(decide(200).next == .delivered && decide(299).next == .delivered)
        #expect(decide(410).next == .failed && decide(410).disable != nil)
        #expect(decide(500).next == .retry(at: now.addingTimeInterval(5)))
        for (attempt, delay) in WebhookSender.retrySchedule.enumerated() {
            #expect(decide(500, before: attempt).next == .retry(at: now.addingTimeInterval(delay)))
        }
        #expect(WebhookSender.retrySchedule == [5, 300, 1800, 7200, 18_000, 36_000, 50_400, 72_000, 86_400])
        #expect(decide(500, before: 9).next == .failed, "the schedule ran out")
        #expect(decide(429, headers: [("retry-after", "120")]).next == .retry(at: now.addingTimeInterval(120)))
        #expect(decide(503, headers: [("retry-after", "1")]).next == .retry(at: now.addingTimeInterval(5)))
        #expect(decide(500, headers: [("retry-after", "120")]).next == .retry(at: now.addingTimeInterval(5)))
        let fiveDays = decide(500, before: 3, failingSince: now.addingTimeInterval(-5 * 86_400))
        #expect(fiveDays.next == .failed && fiveDays.disable == "the endpoint failed every attempt for 5 days")
        #expect(decide(302).next == .retry(at: now.addingTimeInterval(5)), "a redirect is not followed")
        let refused = WebhookSender.decide(
            .failure(HTTPClientError(code: "AddressRefused", detail: "x")), attemptsBefore: 0, endpoint: Self.endpoint,
            now: now, jitter: 1)
        #expect(refused.metric == "refused" && refused.status == nil)
    }
}

@Suite(.serialized) struct WebhookEndToEndTests {
    static func create(_ gw: RunningGateway, _ key: String, _ body: [String: Any]) async throws -> TestResponse {
        try await http("POST", "\(gw.baseURL)/api/v1/webhooks", key: key, json: body)
    }

    @Test func eventsReachTheAppServerSignedOnce() async throws {
        let receiver = try WebhookReceiver()
        let gw = try await TestGateway.start()
        let (_, key) = try await gw.createApp()
        let created = try await Self.create(
            gw, key,
            [
                "url": receiver.url, "events": ["message.completed", "device.invalidated", "delivery.failed"],
                "description": "ops",
            ])
        #expect(created.status == 201)
        let secret = try #require(created.jsonObject["secret"] as? String)
        #expect(secret.hasPrefix("whsec_"))
        let id = try #require(created.jsonObject["id"] as? Int)
        let listed = try await http("GET", "\(gw.baseURL)/api/v1/webhooks", key: key)
        #expect(
            (listed.jsonObject["webhooks"] as? [[String: Any]])?.first?["secret"] == nil, "the secret is shown once")

        // A push with a dead token: the message completes, the device is invalidated, its delivery fails.
        let dead = token(1, prefix: "410")
        for t in [dead, token(2)] {
            _ = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(t)", key: key, json: ["environment": "production"])
        }
        try #require(gw.runtime.localMock).setFaults(LookAlikeConfiguration.Faults.magicTokenPrefixes)
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "x"]])
        let messageID = try #require(push.jsonObject["message_id"] as? Int)
        let got = try await receiver.wait { $0.count >= 3 }
        #expect(
            Set(got.compactMap { $0.json?["type"]?.stringValue }) == [
                "message.completed", "device.invalidated", "delivery.failed",
            ])
        #expect(got.allSatisfy { $0.contentType == "application/json" && $0.id.hasPrefix("msg_") })
        #expect(Set(got.map(\.id)).count == 3, "one id per event")
        let completed = try #require(got.first { $0.json?["type"] == "message.completed" }?.json)
        #expect(completed["data"]?["message_id"] == .int(Int64(messageID)))
        #expect(completed["data"]?["counts"]?["delivered"] == 1 && completed["data"]?["counts"]?["failed"] == 1)
        let invalidated = try #require(got.first { $0.json?["type"] == "device.invalidated" }?.json)
        #expect(invalidated["data"]?["token"] == .string(dead) && invalidated["data"]?["channel"] == "apns")
        let verdicts = try IndependentVerifier.verify(
            got.map {
                .init(secret: secret, id: $0.id, timestamp: $0.timestamp, signature: $0.signature, body: $0.body)
            })
        #expect(verdicts == ["ok", "ok", "ok"])
        let now = Int64(Date().timeIntervalSince1970)
        #expect(got.allSatisfy { abs((Int64($0.timestamp) ?? 0) - now) < 60 })

        // The attempts are listed with the endpoint (recorded in batches after the answers, so
        // waited for); a rotation signs with both secrets.
        try await waitUntil("the three attempts listed") {
            let shown = try await http("GET", "\(gw.baseURL)/api/v1/webhooks/\(id)", key: key)
            return (shown.jsonObject["attempts"] as? [[String: Any]])?.count == 3
        }
        let rotated = try await http("POST", "\(gw.baseURL)/api/v1/webhooks/\(id)/rotate-secret", key: key)
        let newSecret = try #require(rotated.jsonObject["secret"] as? String)
        let test = try await http("POST", "\(gw.baseURL)/api/v1/webhooks/\(id)/test", key: key)
        #expect(test.status == 202)
        let testID = try #require(test.jsonObject["event_id"] as? String)
        let all = try await receiver.wait { $0.contains { $0.id == testID } }
        let sent = try #require(all.first { $0.id == testID })
        #expect(sent.json?["type"] == "webhook.test")
        #expect(
            try IndependentVerifier.verify(
                [secret, newSecret].map {
                    .init(
                        secret: $0, id: sent.id, timestamp: sent.timestamp, signature: sent.signature, body: sent.body)
                }) == ["ok", "ok"])

        // Another app sees none of it.
        let (_, otherKey) = try await gw.createApp(bundleID: "com.example.other")
        let foreign = try await http("GET", "\(gw.baseURL)/api/v1/webhooks/\(id)", key: otherKey)
        #expect(foreign.status == 404 && foreign.errorCode == "webhook_not_found")
        #expect(
            (try await http("GET", "\(gw.baseURL)/api/v1/webhooks", key: otherKey).jsonObject["webhooks"] as? [Any])?
                .isEmpty == true)
        let deleted = try await http("DELETE", "\(gw.baseURL)/api/v1/webhooks/\(id)", key: key)
        #expect(deleted.status == 204)
        await gw.stop()
        await receiver.stop()
    }

    @Test func aFailedAttemptIsRetriedWithTheSameID() async throws {
        let receiver = try WebhookReceiver()
        receiver.answer([503])
        // The gateway's time is the test's: the retry comes due when the test moves the clock.
        let clock = ManualClock(Date())
        let gw = try await TestGateway.start(clock: clock)
        let (_, key) = try await gw.createApp()
        let created = try await Self.create(gw, key, ["url": receiver.url])
        let id = try #require(created.jsonObject["id"] as? Int)
        let test = try await http("POST", "\(gw.baseURL)/api/v1/webhooks/\(id)/test", key: key)
        let eventID = try #require(test.jsonObject["event_id"] as? String)
        _ = try await receiver.wait { $0.count >= 1 }
        let answered = clock.now
        // 503 then, after the first retry's 5 s ± 10 % on the gateway's clock, 204: the clock is
        // moved a second at a time until the retry comes.
        try await clock.advance(by: .seconds(1), until: "the retry") { receiver.all.count >= 2 }
        #expect(clock.now.timeIntervalSince(answered) >= 4.5, "not before it was due")
        let got = receiver.all
        #expect(got.map(\.id) == [eventID, eventID])
        #expect(got[0].body == got[1].body)
        await gw.stop()
        await receiver.stop()
    }

    @Test func privateAddressesAreRefusedWhenNotAllowed() async throws {
        let receiver = try WebhookReceiver()
        let gw = try await TestGateway.start(environment: ["TUISONG_WEBHOOKS_ALLOW_PRIVATE_NETWORKS": "false"])
        let (appID, key) = try await gw.createApp()
        for (url, code) in [
            (receiver.url, "invalid_url"), ("https://127.0.0.1/hook", "address_not_allowed"),
            ("https://169.254.169.254/latest/meta-data", "address_not_allowed"),
            ("https://[::1]/hook", "address_not_allowed"), ("https://10.0.0.7/hook", "address_not_allowed"),
            ("https://localhost/hook", "address_not_allowed"), ("ftp://example.com/", "invalid_url"),
        ] {
            let refused = try await Self.create(gw, key, ["url": url])
            #expect(refused.status == 400 && refused.errorCode == code, "\(url)")
        }
        let badEvents = try await Self.create(gw, key, ["url": "https://example.com/", "events": ["message.sent"]])
        #expect(badEvents.errorCode == "invalid_events")

        // An endpoint already stored (or a name that resolves elsewhere later) is refused at the
        // connection: the attempt is recorded and nothing reaches the receiver.
        let https = "https://127.0.0.1:\(receiver.server.port)/hook"
        let stored = try await gw.runtime.store.createWebhookEndpoint(
            NewWebhookEndpoint(
                appID: appID, url: https, description: "", events: [.messageCompleted],
                encryptedSecret: try gw.runtime.masterKey.box.seal(
                    Array(WebhookSignature.newSecret().utf8), associatedData: WebhookEndpoints.associatedData(appID))))
        _ = try await gw.runtime.webhooks.sendTest(stored.id, appID: appID)
        var attempts: [WebhookAttempt] = []
        try await waitUntil("the refused attempt is recorded") {
            attempts = try await gw.runtime.store.webhookAttempts(endpointID: stored.id, limit: 5)
            return !attempts.isEmpty
        }
        let attempt = try #require(attempts.first)
        #expect(attempt.status == nil && attempt.response.hasPrefix("AddressRefused"))
        #expect(receiver.all.isEmpty)
        await gw.stop()
        await receiver.stop()
    }
}
