import Foundation
import Testing
import TuisongCrypto
import TuisongLookAlikes

/// One request that APNs refuses, and the refusal it must get.
struct RejectionCase: Sendable, CustomTestStringConvertible {
    enum Authorization: Sendable {
        case valid, absent, expired, unknownKeyID, otherTeam, otherSigningKey, notBearer, garbage
    }

    var name: String
    var method = "POST"
    var path = "/3/device/\(MockHarness.deviceToken)"
    var authorization = Authorization.valid
    /// Replaces the default topic/push-type headers when set.
    var headers: [String]? = nil
    var extraHeaders: [String] = []
    var body: String? = MockHarness.payload
    var status: Int
    var reason: String

    var testDescription: String { "\(name) → \(status) \(reason)" }

    static let all: [RejectionCase] = [
        RejectionCase(name: "GET", method: "GET", body: nil, status: 405, reason: "MethodNotAllowed"),
        RejectionCase(name: "PUT", method: "PUT", status: 405, reason: "MethodNotAllowed"),
        RejectionCase(name: "wrong path", path: "/3/devices/abcd", status: 404, reason: "BadPath"),
        RejectionCase(name: "API version 2", path: "/2/device/abcd", status: 404, reason: "BadPath"),
        RejectionCase(name: "empty token", path: "/3/device/", status: 400, reason: "MissingDeviceToken"),
        RejectionCase(name: "non-hex token", path: "/3/device/xyz123", status: 400, reason: "BadDeviceToken"),
        RejectionCase(name: "odd-length token", path: "/3/device/abc", status: 400, reason: "BadDeviceToken"),
        RejectionCase(
            name: "topic twice", extraHeaders: ["apns-topic: \(MockHarness.bundleID)"], status: 400,
            reason: "DuplicateHeaders"),
        RejectionCase(name: "no authorization", authorization: .absent, status: 403, reason: "MissingProviderToken"),
        RejectionCase(name: "token too old", authorization: .expired, status: 403, reason: "ExpiredProviderToken"),
        RejectionCase(name: "unknown kid", authorization: .unknownKeyID, status: 403, reason: "InvalidProviderToken"),
        RejectionCase(
            name: "iss of another team", authorization: .otherTeam, status: 403, reason: "InvalidProviderToken"),
        RejectionCase(
            name: "signed by another key", authorization: .otherSigningKey, status: 403,
            reason: "InvalidProviderToken"),
        RejectionCase(name: "basic scheme", authorization: .notBearer, status: 403, reason: "InvalidProviderToken"),
        RejectionCase(name: "not a JWT", authorization: .garbage, status: 403, reason: "InvalidProviderToken"),
        RejectionCase(name: "no topic", headers: ["apns-push-type: alert"], status: 400, reason: "MissingTopic"),
        RejectionCase(
            name: "unknown push type", headers: ["apns-topic: \(MockHarness.bundleID)", "apns-push-type: banner"],
            status: 400, reason: "InvalidPushType"),
        RejectionCase(name: "priority 7", extraHeaders: ["apns-priority: 7"], status: 400, reason: "BadPriority"),
        RejectionCase(
            name: "background at priority 10",
            headers: ["apns-topic: \(MockHarness.bundleID)", "apns-push-type: background", "apns-priority: 10"],
            status: 400, reason: "BadPriority"),
        RejectionCase(
            name: "expiration not a number", extraHeaders: ["apns-expiration: tomorrow"], status: 400,
            reason: "BadExpirationDate"),
        RejectionCase(
            name: "negative expiration", extraHeaders: ["apns-expiration: -5"], status: 400,
            reason: "BadExpirationDate"),
        RejectionCase(
            name: "collapse id of 65 bytes", extraHeaders: ["apns-collapse-id: \(String(repeating: "c", count: 65))"],
            status: 400, reason: "BadCollapseId"),
        RejectionCase(
            name: "upper-case apns-id", extraHeaders: ["apns-id: 123E4567-E89B-12D3-A456-426614174000"], status: 400,
            reason: "BadMessageId"),
        RejectionCase(name: "apns-id not a UUID", extraHeaders: ["apns-id: 42"], status: 400, reason: "BadMessageId"),
        RejectionCase(name: "empty payload", body: "", status: 400, reason: "PayloadEmpty"),
        RejectionCase(
            name: "4097-byte alert payload", body: RejectionCase.jsonPayload(bytes: 4097), status: 413,
            reason: "PayloadTooLarge"),
        RejectionCase(
            name: "5121-byte VoIP payload",
            headers: ["apns-topic: \(MockHarness.bundleID).voip", "apns-push-type: voip"],
            body: RejectionCase.jsonPayload(bytes: 5121), status: 413, reason: "PayloadTooLarge"),
        RejectionCase(name: "payload not JSON", body: "hello", status: 400, reason: "BadPayload"),
        RejectionCase(name: "payload a JSON array", body: "[1,2]", status: 400, reason: "BadPayload"),
        RejectionCase(
            name: "payload truncated JSON", body: #"{"aps":{"alert":"hi"}"#, status: 400, reason: "BadPayload"),
    ]

    /// `{"aps":{"alert":"xxx…"}}` of exactly `bytes` bytes.
    static func jsonPayload(bytes: Int) -> String {
        let frame = #"{"aps":{"alert":""}}"#
        return #"{"aps":{"alert":""# + String(repeating: "x", count: bytes - frame.utf8.count) + #""}}"#
    }

    func authorizationHeader(_ harness: MockHarness) throws -> String? {
        switch authorization {
        case .valid: return harness.bearer(try harness.jwt())
        case .absent: return nil
        case .expired: return harness.bearer(try harness.jwt(issuedAt: Date().addingTimeInterval(-3700)))
        case .unknownKeyID: return harness.bearer(try harness.jwt(keyID: "ZZZZZZZZZZ"))
        case .otherTeam: return harness.bearer(try harness.jwt(teamID: "ZZZZZZZZZZ"))
        case .otherSigningKey: return harness.bearer(try harness.jwt(key: try PrivateKey.generateP256()))
        case .notBearer: return "authorization: basic \(try harness.jwt())"
        case .garbage: return "authorization: bearer not.a.jwt"
        }
    }
}

@Suite("APNs mock validates like Apple")
struct MockValidationTests {
    @Test("a valid token-auth push is answered 200 with an apns-id and recorded")
    func validPush() throws {
        let harness = try MockHarness()
        let apnsID = "7f3c2a1e-0b4d-4c6e-8f90-123456789abc"
        let response = try harness.curl(
            CurlRequest(
                headers: try harness.validHeaders() + [
                    "apns-id: \(apnsID)", "apns-priority: 10", "apns-expiration: 0", "apns-collapse-id: news",
                ],
                bodyFile: harness.path("payload.json")))
        #expect(response.status == 200)
        #expect(response.headers["apns-id"] == apnsID)
        #expect(response.body.isEmpty)

        let received = harness.server.receivedNotifications()
        #expect(received.count == 1)
        let notification = try #require(received.first)
        #expect(notification.deviceToken == MockHarness.deviceToken)
        #expect(notification.topic == MockHarness.bundleID)
        #expect(notification.pushType == "alert")
        #expect(notification.priority == "10")
        #expect(notification.expiration == "0")
        #expect(notification.collapseID == "news")
        #expect(notification.apnsID == apnsID)
        #expect(notification.payload == Array(MockHarness.payload.utf8))
        #expect(notification.teamID == harness.setup.teamID)
        #expect(notification.keyID == harness.setup.keyID)
        #expect(notification.status == 200)
        #expect(notification.reason == nil)

        let statistics = harness.server.statistics
        let apns = harness.server.apnsStatistics
        #expect(apns.requests == 1)
        #expect(apns.responsesByStatus == [200: 1])
        #expect(apns.providerTokensAccepted == 1)
        #expect(statistics.connectionsAccepted == 1)
    }

    @Test("without apns-id the mock generates a lower-case UUID and answers with it")
    func generatedAPNsID() throws {
        let harness = try MockHarness()
        let response = try harness.curl(
            CurlRequest(headers: try harness.validHeaders(), bodyFile: harness.path("payload.json")))
        let apnsID = try #require(response.headers["apns-id"])
        #expect(apnsID.count == 36)
        #expect(apnsID == apnsID.lowercased())
        #expect(UUID(uuidString: apnsID) != nil)
        #expect(harness.server.receivedNotifications().first?.apnsID == apnsID)
    }

    @Test("a VoIP payload may be 5120 bytes")
    func voipPayloadLimit() throws {
        let harness = try MockHarness()
        let body = try harness.write(RejectionCase.jsonPayload(bytes: 5120), to: "voip.json")
        let response = try harness.curl(
            CurlRequest(
                headers: [
                    harness.bearer(try harness.jwt()), "apns-topic: \(MockHarness.bundleID).voip",
                    "apns-push-type: voip",
                ], bodyFile: body))
        #expect(response.status == 200)
        #expect(harness.server.receivedNotifications().first?.payload.count == 5120)
    }

    @Test("invalid requests get Apple's status and reason", arguments: RejectionCase.all)
    func rejection(_ rejection: RejectionCase) throws {
        let harness = try MockHarness()
        var headers = rejection.headers ?? ["apns-topic: \(MockHarness.bundleID)", "apns-push-type: alert"]
        headers += rejection.extraHeaders
        if let authorization = try rejection.authorizationHeader(harness) { headers.append(authorization) }
        let bodyFile = try rejection.body.map { try harness.write($0, to: "body.json") }
        let response = try harness.curl(
            CurlRequest(method: rejection.method, path: rejection.path, headers: headers, bodyFile: bodyFile))
        #expect(response.status == rejection.status)
        #expect(response.reason == rejection.reason)
        // Only 410 answers carry a timestamp.
        #expect(response.json?["timestamp"] == nil)
        #expect(response.headers["apns-id"] != nil)

        let notification = try #require(harness.server.receivedNotifications().first)
        #expect(notification.status == rejection.status)
        #expect(notification.reason == rejection.reason)
        #expect(harness.server.apnsStatistics.responsesByReason == [rejection.reason: 1])
    }

    @Test("one connection carrying tokens of two teams is refused the second team")
    func twoTeamsOnOneConnection() throws {
        let otherTeamKey = try PrivateKey.generateP256()
        let harness = try MockHarness { configuration in
            configuration.tokenKeys.append(
                .init(keyID: "OTHERKEY01", teamID: "OTHERTEAM1", publicKeyPEM: try otherTeamKey.publicKey.pem()))
        }
        let topic = "apns-topic: \(MockHarness.bundleID)"
        let payload = harness.path("payload.json")
        let otherTeamToken = try harness.jwt(keyID: "OTHERKEY01", teamID: "OTHERTEAM1", key: otherTeamKey)
        let responses = try harness.curl([
            CurlRequest(headers: [harness.bearer(try harness.jwt()), topic], bodyFile: payload),
            CurlRequest(headers: [harness.bearer(otherTeamToken), topic], bodyFile: payload),
        ])
        #expect(responses.map(\.status) == [200, 403])
        #expect(responses.last?.reason == "InvalidProviderToken")
        #expect(harness.server.statistics.connectionsAccepted == 1)

        // The other team's token is fine on a connection of its own.
        let alone = try harness.curl(CurlRequest(headers: [harness.bearer(otherTeamToken), topic], bodyFile: payload))
        #expect(alone.status == 200)
        #expect(harness.server.receivedNotifications().last?.teamID == "OTHERTEAM1")
    }
}
