import Foundation
import Logging
import Testing
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTPClient
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongHarmony

/// HarmonyOS NEXT (Push Kit v3) against the bundled look-alike over TLS + HTTP/2: the PS256
/// JWT it verifies, the push-type and body it validates, and every answer it gives mapped.
@Suite(.serialized) struct HarmonyTransportTests {
    @Test func aThousandTokenBatchInvalidatesExactlyTheRefusedTokens() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let account = try harness.trustedHarmonyAccount()
        let transport = harness.harmony(credential: harness.harmonyCredential(account))
        // 1,000 tokens in one request: every 97th unknown to the project, one malformed.
        var tokens = (0..<1000).map { $0 % 97 == 5 ? "unregistered-\($0)" : "MAMzLgBAAAA-\($0)" }
        tokens[500] = "bad token 500"
        let outcomes = await transport.outcomes(of: harness.batch(tokens))
        let refused = Set(tokens.filter { $0.hasPrefix("unregistered-") || $0.contains(" ") })
        #expect(refused.count == 12)
        for (token, outcome) in zip(tokens, outcomes) {
            if refused.contains(token) {
                let why = token.contains(" ") ? "tokenFormatError" : "noRight"
                #expect(outcome == .invalidate(.service(why), since: nil), "\(token)")
            } else {
                #expect(outcome.isDelivered, "\(token): \(outcome)")
            }
        }
        // One request, one JWT for it.
        #expect(harness.server.androidStatistics.harmony.sendRequests == 1)
        #expect(transport.tokens.fetchCount == 1)
        let received = try #require(harness.server.receivedAndroidMessages().first { $0.service == .harmony })
        #expect(received.harmonyPushType == 0)
        #expect(received.principal == account.subAccount)
        #expect(received.tokens.count == 988 && Set(received.refusedTokens) == refused)
        let notification = try #require(try JSONValue(parsing: received.body)["payload"]?["notification"])
        #expect(notification["title"] == "Hi" && notification["body"] == "Hello")
        #expect(notification["category"] == "IM")
        #expect(notification["clickAction"] == ["actionType": 0, "data": ["order": 42]])
        // The JWT is reused for its hour: a second push asks for none.
        #expect(await transport.outcomes(of: harness.batch(["MAMzLgBAAAA-x"])).allSatisfy(\.isDelivered))
        #expect(transport.tokens.fetchCount == 1)
    }

    /// Huawei: a test message carries at most 10 tokens (docs/reference/harmony.md §3). The
    /// transport sends 25 in three requests; without the flag the same 25 go in one.
    @Test func aTestMessageGoesTenTokensARequest() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.harmony(credential: harness.harmonyCredential(try harness.trustedHarmonyAccount()))
        let tokens = (0..<25).map { "MAMzLgTest-\($0)" }
        var batch = harness.batch(tokens)
        for index in batch.pushes.indices {
            batch.pushes[index].headers.services["harmony"] = HarmonyOptions(testMessage: true).entry
        }
        #expect(await transport.outcomes(of: batch).allSatisfy(\.isDelivered))
        let tested = harness.server.receivedAndroidMessages().filter { $0.service == .harmony }
        #expect(tested.map(\.tokens.count).sorted() == [5, 10, 10])
        #expect(tested.allSatisfy { $0.harmonyTestMessage })
        #expect(await transport.outcomes(of: harness.batch(tokens)).allSatisfy(\.isDelivered))
        let all = harness.server.receivedAndroidMessages().filter { $0.service == .harmony }
        #expect(all.count == 4 && all.last?.tokens.count == 25 && all.last?.harmonyTestMessage == false)
    }

    @Test func aBackgroundPushIsPushType6WithTheDataAsExtraData() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.harmony(credential: harness.harmonyCredential(try harness.trustedHarmonyAccount()))
        let background = PushContent(data: ["sync": "inbox", "n": 2], background: true)
        #expect(await transport.outcomes(of: harness.batch(["MAMz-1"], content: background)).allSatisfy(\.isDelivered))
        // A badge-only push is the badge refresh message: push-type 0 without a notification.
        #expect(
            await transport.outcomes(of: harness.batch(["MAMz-2"], content: PushContent(badge: 4))).allSatisfy(
                \.isDelivered))
        let received = harness.server.receivedAndroidMessages().filter { $0.service == .harmony }
        #expect(received.map(\.harmonyPushType) == [6, 0])
        let payload = try #require(try JSONValue(parsing: received[0].body)["payload"])
        #expect(payload == ["extraData": .string(#"{"n":2,"sync":"inbox"}"#)])
        #expect(try JSONValue(parsing: received[1].body)["payload"] == ["badge": ["setNum": 4]])
    }

    @Test func aKeyTheServiceDoesNotKnowIsReSignedOnceThenHeld() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let trusted = try harness.trustedHarmonyAccount()
        // The same key id and sub-account, another key: the signature does not verify.
        var stranger = trusted
        stranger.privateKeyPEM = try TestKeys.rsa(1).pkcs8PEM()
        let transport = harness.harmony(credential: harness.harmonyCredential(stranger))
        let outcomes = await transport.outcomes(of: harness.batch(["MAMz-1", "MAMz-2"]))
        #expect(outcomes == Array(repeating: .held(.service("80200001")), count: 2))
        #expect(harness.store.status(of: 1) == "failing")
        // Signed twice, refused twice, nothing delivered.
        #expect(transport.tokens.fetchCount == 2)
        #expect(harness.server.androidStatistics.harmony.authenticationFailures == 2)
        #expect(harness.server.receivedAndroidMessages().isEmpty)
    }

    @Test func anExpiredJWTIsReSignedOnceThenHeld() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let account = try harness.trustedHarmonyAccount()
        // The gateway's clock two hours behind: every JWT it signs has expired on arrival.
        let clock = ManualClock(Date().addingTimeInterval(-7200))
        let transport = harness.harmony(credential: harness.harmonyCredential(account), clock: clock)
        let outcomes = await transport.outcomes(of: harness.batch(["MAMz-1"]))
        #expect(outcomes == [.held(.service("80200005"))])
        #expect(transport.tokens.fetchCount == 2)
        #expect(harness.store.status(of: 1) == "failing")
    }

    @Test func theLookAlikeRefusesAnotherKeyAnExpiredJWTAndAWrongAudience() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let account = try harness.trustedHarmonyAccount()
        let client = try harness.client()
        defer { client.shutdown() }
        let url = harness.baseURL + "/v3/" + account.projectID + "/messages:send"
        let body = Array(
            #"{"payload":{"notification":{"category":"IM","title":"t","body":"b","clickAction":{"actionType":0}}},"target":{"token":["MAMz-1"]}}"#
                .utf8)
        func send(_ jwt: String, pushType: String? = "0", body: [UInt8] = body) async throws -> (Int, String) {
            var headers = [
                (name: "authorization", value: "Bearer " + jwt), (name: "content-type", value: "application/json"),
            ]
            if let pushType { headers.append((name: "push-type", value: pushType)) }
            let response = try await client.execute(HTTPClientRequest(url: url, headers: headers, body: body)).get()
            return (response.status, try JSONValue(parsing: response.body)["code"]?.stringValue ?? "")
        }
        let key = try PrivateKey(pem: account.privateKeyPEM)
        func jwt(
            key signing: PrivateKey? = nil, iss: String? = nil, aud: String = HarmonyServiceAccount.audience,
            iat: Int64, exp: Int64
        )
            throws -> String
        {
            try JWT.signPS256(
                header: #"{"kid":"\#(account.keyID)","typ":"JWT","alg":"PS256"}"#,
                claims: #"{"iss":"\#(iss ?? account.subAccount)","aud":"\#(aud)","iat":\#(iat),"exp":\#(exp)}"#,
                key: signing ?? key)
        }
        let now = Int64(Date().timeIntervalSince1970)
        #expect(try await send(jwt(iat: now, exp: now + 3600)) == (200, "80000000"))
        #expect(
            try await send(jwt(key: TestKeys.rsa(1), iat: now, exp: now + 3600)) == (401, "80200001")
        )
        #expect(try await send(jwt(iat: now - 7200, exp: now - 3600)) == (401, "80200005"))
        #expect(try await send(jwt(aud: "https://example.com/token", iat: now, exp: now + 3600)) == (401, "80200001"))
        // A test message of 10 tokens is taken, of 11 refused (Huawei's limit; the code assumed).
        func testMessage(tokens count: Int) -> [UInt8] {
            let tokens = (0..<count).map { #""MAMz-t\#($0)""# }.joined(separator: ",")
            return Array(
                #"{"payload":{"notification":{"category":"IM","title":"t","body":"b","clickAction":{"actionType":0}}},"pushOptions":{"testMessage":true},"target":{"token":[\#(tokens)]}}"#
                    .utf8)
        }
        #expect(try await send(jwt(iat: now, exp: now + 3600), body: testMessage(tokens: 10)) == (200, "80000000"))
        #expect(try await send(jwt(iat: now, exp: now + 3600), body: testMessage(tokens: 11)) == (400, "80300010"))
        #expect(try await send(jwt(iss: "someone-else", iat: now, exp: now + 3600)) == (401, "80200001"))
        // An RS256 token of the right key is not a PS256 one.
        let rs256 = try JWT.signRS256(
            header: #"{"kid":"\#(account.keyID)","typ":"JWT","alg":"RS256"}"#,
            claims:
                #"{"iss":"\#(account.subAccount)","aud":"\#(HarmonyServiceAccount.audience)","iat":\#(now),"exp":\#(now + 60)}"#,
            key: key)
        #expect(try await send(rs256) == (401, "80200001"))
        // The body as strictly as Huawei: the push-type header, the notification's required fields.
        let good = try jwt(iat: now, exp: now + 3600)
        #expect(try await send(good, pushType: nil) == (400, "80100001"))
        #expect(try await send(good, pushType: "3") == (400, "80100001"))
        #expect(try await send(good, pushType: "6") == (400, "80100001"))
        let noCategory = Array(
            #"{"payload":{"notification":{"title":"t","body":"b","clickAction":{"actionType":0}}},"target":{"token":["a"]}}"#
                .utf8)
        #expect(try await send(good, body: noCategory) == (400, "80100001"))
        let noClick = Array(
            #"{"payload":{"notification":{"category":"IM","title":"t","body":"b"}},"target":{"token":["a"]}}"#.utf8)
        #expect(try await send(good, body: noClick) == (400, "80100001"))
        let badBadge = Array(
            #"{"payload":{"badge":{"addNum":100}},"target":{"token":["a"]}}"#.utf8)
        #expect(try await send(good, body: badBadge) == (400, "80100003"))
        let tooMany = Array(
            (#"{"payload":{"badge":{"setNum":1}},"target":{"token":"#
                + JSONValue.serializedArray((0...1000).map { "t\($0)" }) + "}}").utf8)
        #expect(try await send(good, body: tooMany) == (400, "80300010"))
        // notifyId: an Integer (32 bits), -1 for "one per message" (docs/reference/harmony.md §3).
        func notifyID(_ id: String) -> [UInt8] {
            Array(
                #"{"payload":{"notification":{"category":"IM","title":"t","body":"b","clickAction":{"actionType":0},"notifyId":\#(id)}},"target":{"token":["a"]}}"#
                    .utf8)
        }
        for id in ["7", "-1", "0", "2147483647"] {
            #expect(try await send(good, body: notifyID(id)) == (200, "80000000"), "\(id)")
        }
        for id in [#""7""#, "7.5", "true"] {
            #expect(try await send(good, body: notifyID(id)) == (400, "80100003"), "\(id)")
        }
        for id in ["-2", "2147483648"] {
            #expect(try await send(good, body: notifyID(id)) == (400, "80100001"), "\(id)")
        }
        let background = Array(#"{"payload":{"extraData":"{\"a\":1}"},"target":{"token":["a"]}}"#.utf8)
        #expect(try await send(good, pushType: "6", body: background) == (200, "80000000"))
    }

    @Test func everyAnswerIsMapped() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.harmony(credential: harness.harmonyCredential(try harness.trustedHarmonyAccount()))
        // Throttled: 503 with Retry-After; a server error: retried.
        #expect(
            await transport.outcomes(of: harness.batch(["quota-1", "MAMz-2"]))
                == Array(repeating: .retry(.service("80300011"), after: .seconds(30)), count: 2))
        #expect(
            await transport.outcomes(of: harness.batch(["internal-1"])) == [.retry(.service("81000001"), after: nil)])
        // Every token refused: 80300007, each invalidated.
        #expect(
            await transport.outcomes(of: harness.batch(["invalid-1", "unregistered-2"]))
                == Array(repeating: .invalidate(.service("noRight"), since: nil), count: 2))

        // What the look-alike does not say, Huawei's page does.
        let now = Date()
        func read(_ status: Int, _ body: String, retryAfter: String? = nil) -> TokenBatchAnswer {
            HarmonyAnswer.read(
                status: status, body: Array(body.utf8), tokens: ["a", "b"], retryAfter: retryAfter, now: now)
        }
        #expect(read(401, #"{"code":"80200003","msg":"x"}"#) == .refreshAuth(.service("80200003")))
        #expect(read(403, #"{"code":"80300002","msg":"No permission"}"#) == .credentialRefused(.service("80300002")))
        #expect(
            read(400, #"{"code":"80300008","msg":"too large"}"#)
                == .outcomes([.failed(.service("80300008")), .failed(.service("80300008"))]))
        #expect(
            read(502, "<html>")
                == .outcomes([.retry(.service("HTTP502"), after: nil), .retry(.service("HTTP502"), after: nil)]))
        // A partial success whose refusal is the app's entitlement, not the device: failed, kept.
        let partial =
            #"{"code":"80100000","msg":"{\"illegalTokens\":{\"noPushTypeRight\":[\"b\"]},\"success\":1,\"failure\":1}","requestId":"r1"}"#
        #expect(
            read(200, partial) == .outcomes([.delivered(serviceMessageID: "r1"), .failed(.service("noPushTypeRight"))]))
        let appInfo =
            #"{"code":"80100000","msg":"{\"illegalTokens\":{\"appinfoError\":[\"a\"]},\"success\":1,\"failure\":1}"}"#
        #expect(
            read(200, appInfo)
                == .outcomes([.retry(.service("appinfoError"), after: nil), .delivered(serviceMessageID: nil)]))
    }

    /// Local mode: the setup's own account (saved and read back) is trusted by the look-alike
    /// it configures, and its key file is what the transport loads.
    @Test func theLocalSetupsAccountSendsThroughTheLookAlike() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let saved = try JSONDecoder().decode(LookAlikeLocalSetup.self, from: JSONEncoder().encode(harness.setup))
        #expect(saved.harmonyServiceAccount == harness.setup.harmonyServiceAccount)
        #expect(saved.harmonyPrivateKeyPEM == harness.setup.harmonyPrivateKeyPEM)
        let account = try HarmonyServiceAccount(json: saved.harmonyServiceAccountJSON())
        #expect(account.projectID == harness.setup.harmonyServiceAccount.projectID)
        let transport = harness.harmony(credential: harness.harmonyCredential(account))
        #expect(await transport.outcomes(of: harness.batch(["MAMz-1"])).allSatisfy(\.isDelivered))
    }

    @Test func theServiceAccountFileIsCheckedAndSignsWhatHuaweiAsks() throws {
        let key = try TestKeys.rsa(0)
        let json = Array(
            JSONValue.object([
                "project_id": "101", "key_id": "k1", "private_key": .string(try key.pkcs8PEM()), "sub_account": "2001",
                "token_uri": "https://oauth-login.cloud.huawei.com/oauth2/v3/token",
            ]).serialized())
        let account = try HarmonyServiceAccount(json: json)
        let token = try account.jwt(issuedAt: Date(timeIntervalSince1970: 1_800_000_000))
        let (header, claims) = try JWT.verifyPS256(token, publicKey: key.publicKey)
        #expect(try JSONValue(parsing: header) == ["kid": "k1", "typ": "JWT", "alg": "PS256"])
        #expect(
            try JSONValue(parsing: claims)
                == [
                    "iss": "2001", "aud": "https://oauth-login.cloud.huawei.com/oauth2/v3/token", "iat": 1_800_000_000,
                    "exp": 1_800_003_600,
                ])
        // The key never appears in the refusal.
        #expect(throws: HarmonyServiceAccount.Invalid.self) {
            try HarmonyServiceAccount(
                json: Array(#"{"project_id":"1","key_id":"k","private_key":"x","sub_account":"s"}"#.utf8))
        }
        #expect(throws: HarmonyServiceAccount.Invalid.self) {
            try HarmonyServiceAccount(json: Array(#"{"project_id":"1","key_id":"k","sub_account":"s"}"#.utf8))
        }
    }
}

extension Harness {
    /// The channel HarmonyOS credentials are stored under.
    static let harmonyChannel: PushChannel = .harmony

    /// A fresh service account the look-alike trusts.
    func trustedHarmonyAccount() throws -> HarmonyServiceAccount {
        let key = try TestKeys.rsa(0)
        let account = HarmonyServiceAccount(
            projectID: "10" + String(UInt32.random(in: 1_000_000...9_999_999)), keyID: UUID().uuidString,
            privateKeyPEM: try key.pkcs8PEM(), subAccount: String(UInt32.random(in: 1_000_000...9_999_999)))
        try server.trustHarmonyServiceAccount(
            .init(
                projectID: account.projectID, keyID: account.keyID, subAccount: account.subAccount,
                publicKeyPEM: try key.publicKey.pem()))
        return account
    }

    func harmonyCredential(_ account: HarmonyServiceAccount) -> ChannelCredentialRecord {
        ChannelCredentialRecord(
            id: 1, appID: app.id, channel: Self.harmonyChannel, selector: nil, vendorAppID: account.projectID,
            clientID: account.subAccount, encryptedSecret: account.json, options: ["category": "IM"], status: "ok",
            statusReason: nil, createdAt: Date())
    }

    func harmony(credential: ChannelCredentialRecord, clock: (any TuisongCore.Clock)? = nil) -> HarmonyTransport {
        HarmonyTransport(
            service: HarmonyService(baseURL: baseURL), client: try! client(),
            resolver: resolver(Self.harmonyChannel, credential), requestTimeout: .seconds(10), tokensPerRequest: 1000,
            clock: clock ?? self.clock, logger: Logger(label: "test"))
    }
}
