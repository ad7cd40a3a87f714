import Foundation
import Testing
import TuisongCrypto
import TuisongLookAlikes
import TuisongPluginTestKit

/// Requests to the Android look-alikes through curl, the independent HTTP/2 client.
extension MockHarness {
    static let fcmToken = "fGcmToken0:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

    var fcmSendPath: String { "/v1/projects/\(setup.fcmServiceAccount.projectID)/messages:send" }
    var huaweiSendPath: String { "/v1/\(setup.huaweiClient.appID)/messages:send" }
    var honorSendPath: String { "/api/v1/\(setup.honorClient.appID)/sendMessage" }

    /// POSTs `body` (a file written for the purpose) to `path` with `headers`.
    func post(_ path: String, body: String, headers: [String] = []) throws -> CurlResponse {
        let file = try write(body, to: "body-\(UUID().uuidString)")
        return try curl(CurlRequest(path: path, headers: headers, bodyFile: file))
    }

    func postForm(_ path: String, _ fields: [(String, String)], headers: [String] = []) throws -> CurlResponse {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed)!)"
        }.joined(separator: "&")
        return try post(path, body: body, headers: ["content-type: application/x-www-form-urlencoded"] + headers)
    }

    /// A service-account assertion as google-auth libraries build it.
    func fcmAssertion(
        issuer: String? = nil, keyID: String? = nil, audience: String? = nil, issuedAt: Int? = nil,
        lifetime: Int = 3600, scope: String = "https://www.googleapis.com/auth/firebase.messaging",
        key: PrivateKey? = nil
    ) throws -> String {
        let now = issuedAt ?? Int(Date().timeIntervalSince1970)
        let header = #"{"alg":"RS256","typ":"JWT","kid":"\#(keyID ?? setup.fcmServiceAccount.keyID)"}"#
        let claims =
            #"{"iss":"\#(issuer ?? setup.fcmServiceAccount.clientEmail)","scope":"\#(scope)","aud":"\#(audience ?? baseURL + "/token")","iat":\#(now),"exp":\#(now + lifetime)}"#
        return try JWT.signRS256(
            header: header, claims: claims, key: key ?? PrivateKey(pem: setup.fcmPrivateKeyPEM))
    }

    func fcmTokenResponse(assertion: String) throws -> CurlResponse {
        try postForm(
            "/token", [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion)])
    }

    func fcmAccessToken() throws -> String {
        let response = try fcmTokenResponse(assertion: try fcmAssertion())
        return try #require(response.json?["access_token"] as? String)
    }

    func pushKitAccessToken(path: String, client: LookAlikeConfiguration.PushKitClient) throws -> String {
        let response = try postForm(
            path,
            [
                ("grant_type", "client_credentials"), ("client_id", client.clientID),
                ("client_secret", client.clientSecret),
            ])
        return try #require(response.json?["access_token"] as? String)
    }

    func fcmMessage(token: String = MockHarness.fcmToken, extra: String = "") -> String {
        #"{"message":{"token":"\#(token)","notification":{"title":"Hi","body":"there"},"data":{"k":"v"}\#(extra)}}"#
    }

    static func tokenArray(_ tokens: [String]) -> String {
        "[" + tokens.map { "\"\($0)\"" }.joined(separator: ",") + "]"
    }
}

extension CurlResponse {
    /// `error` object of an FCM answer.
    var fcmError: [String: Any]? { json?["error"] as? [String: Any] }
    var fcmStatus: String? { fcmError?["status"] as? String }
    var fcmErrorCode: String? {
        (fcmError?["details"] as? [[String: Any]])?.first { ($0["@type"] as? String)?.hasSuffix("FcmError") == true }?[
            "errorCode"] as? String
    }
    var fcmMessage: String? { fcmError?["message"] as? String }
    /// Huawei's string code or Honor's number, as text.
    var pushKitCode: String? {
        if let text = json?["code"] as? String { return text }
        return (json?["code"] as? NSNumber)?.stringValue
    }
}

@Suite("Android look-alikes: FCM")
struct MockFCMTests {
    @Test("a service-account assertion buys a Bearer token; FCM accepts it and records the message")
    func grantAndSend() throws {
        let harness = try MockHarness()
        let grant = try harness.fcmTokenResponse(assertion: try harness.fcmAssertion())
        #expect(grant.status == 200)
        #expect(grant.json?["token_type"] as? String == "Bearer")
        #expect((grant.json?["expires_in"] as? NSNumber)?.intValue == 3600)
        let token = try #require(grant.json?["access_token"] as? String)

        // google-auth-python puts Google's own endpoint in aud whatever token_uri says.
        let google = try harness.fcmTokenResponse(
            assertion: try harness.fcmAssertion(audience: "https://oauth2.googleapis.com/token"))
        #expect(google.status == 200)

        let body = harness.fcmMessage(extra: #","android":{"priority":"HIGH","ttl":"3600s","collapse_key":"c"}"#)
        let sent = try harness.post(harness.fcmSendPath, body: body, headers: ["authorization: Bearer \(token)"])
        #expect(sent.status == 200)
        let name = try #require(sent.json?["name"] as? String)
        #expect(name.hasPrefix("projects/tuisong-local/messages/0:"))

        let recorded = harness.server.receivedAndroidMessages()
        #expect(recorded.count == 1)
        #expect(recorded.first?.service == .fcm)
        #expect(recorded.first?.target == "tuisong-local")
        #expect(recorded.first?.tokens == [MockHarness.fcmToken])
        #expect(recorded.first?.principal == harness.setup.fcmServiceAccount.clientEmail)
        #expect(recorded.first?.body == Array(body.utf8))
        #expect(recorded.first?.messageID == name)
        let statistics = harness.server.androidStatistics.fcm
        #expect(statistics.tokenGrants == 2)
        #expect(statistics.sendRequests == 1)
        #expect(statistics.messagesDelivered == 1)
        #expect(harness.server.apnsStatistics.requests == 0)
    }

    @Test("bad signature, unknown account, wrong audience, too long a lifetime: invalid_grant")
    func assertionRefusals() throws {
        let harness = try MockHarness()
        let otherKey = try TestKeys.rsa(0)
        let cases: [(String, String)] = [
            (try harness.fcmAssertion(key: otherKey), "Invalid JWT Signature."),
            (try harness.fcmAssertion(keyID: "0000"), "Invalid JWT Signature."),
            (
                try harness.fcmAssertion(issuer: "nobody@elsewhere.iam.gserviceaccount.com"),
                "Invalid grant: account not found"
            ),
            (try harness.fcmAssertion(lifetime: 7200), "Invalid JWT: Token must be a short-lived token"),
            (
                try harness.fcmAssertion(issuedAt: Int(Date().timeIntervalSince1970) - 7200),
                "Invalid JWT: Token must be a short-lived token"
            ),
            (try harness.fcmAssertion(audience: "https://example.com/token"), "Invalid JWT: Failed audience check"),
        ]
        for (assertion, description) in cases {
            let response = try harness.fcmTokenResponse(assertion: assertion)
            #expect(response.status == 400)
            #expect(response.json?["error"] as? String == "invalid_grant")
            #expect((response.json?["error_description"] as? String)?.hasPrefix(description) == true, "\(description)")
        }
        let wrongGrant = try harness.postForm("/token", [("grant_type", "client_credentials")])
        #expect(wrongGrant.status == 400)
        #expect(wrongGrant.json?["error"] as? String == "unsupported_grant_type")
        #expect(harness.server.androidStatistics.fcm.tokenRefusals == cases.count + 1)
        #expect(harness.server.androidStatistics.fcm.tokenGrants == 0)
    }

    @Test("each token-prefix fault is answered as FCM does, after validation")
    func faults() throws {
        let harness = try MockHarness {
            $0.faults.androidTokenPrefixes = [
                "gone": .unregistered, "bad": .invalidArgument, "slow": .quotaExceeded(retryAfterSeconds: 17),
                "down": .unavailable, "boom": .internal,
            ]
        }
        let token = try harness.fcmAccessToken()
        let expected: [(String, Int, String, String)] = [
            ("gone", 404, "NOT_FOUND", "UNREGISTERED"), ("bad", 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT"),
            ("slow", 429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"), ("down", 503, "UNAVAILABLE", "UNAVAILABLE"),
            ("boom", 500, "INTERNAL", "INTERNAL"),
        ]
        for (prefix, status, canonical, errorCode) in expected {
            let response = try harness.post(
                harness.fcmSendPath, body: harness.fcmMessage(token: prefix + "-token:1"),
                headers: ["authorization: Bearer \(token)"])
            #expect(response.status == status, "\(prefix)")
            #expect(response.fcmStatus == canonical, "\(prefix)")
            #expect(response.fcmErrorCode == errorCode, "\(prefix)")
            #expect((response.fcmError?["code"] as? NSNumber)?.intValue == status)
            if prefix == "slow" { #expect(response.headers["retry-after"] == "17") }
            if prefix == "bad" {
                #expect(response.fcmMessage == "The registration token is not a valid FCM registration token")
            }
            if prefix == "gone" { #expect(response.fcmMessage == "Requested entity was not found.") }
        }
        #expect(harness.server.receivedAndroidMessages().isEmpty)
        #expect(harness.server.androidStatistics.fcm.requestsRefused == expected.count)

        // A validation error wins over the fault, as with APNs.
        let invalid = try harness.post(
            harness.fcmSendPath, body: #"{"message":{"token":"gone-1","bogus":1}}"#,
            headers: ["authorization: Bearer \(token)"])
        #expect(invalid.status == 400)
        #expect(invalid.fcmStatus == "INVALID_ARGUMENT")
    }

    @Test("missing, expired and revoked access tokens: 401 UNAUTHENTICATED; another project: 403")
    func accessTokenRefusals() throws {
        let expiring = try MockHarness { $0.accessTokenLifetimeSeconds = 0 }
        let stale = try expiring.fcmAccessToken()
        let expired = try expiring.post(
            expiring.fcmSendPath, body: expiring.fcmMessage(), headers: ["authorization: Bearer \(stale)"])
        #expect(expired.status == 401)
        #expect(expired.fcmStatus == "UNAUTHENTICATED")
        #expect(expired.headers["www-authenticate"]?.contains("invalid_token") == true)

        let harness = try MockHarness()
        let missing = try harness.post(harness.fcmSendPath, body: harness.fcmMessage())
        #expect(missing.status == 401)
        #expect(missing.fcmMessage?.hasPrefix("Request is missing required authentication credential") == true)

        let token = try harness.fcmAccessToken()
        let elsewhere = try harness.post(
            "/v1/projects/someone-else/messages:send", body: harness.fcmMessage(),
            headers: ["authorization: Bearer \(token)"])
        #expect(elsewhere.status == 403)
        #expect(elsewhere.fcmStatus == "PERMISSION_DENIED")

        #expect(
            try harness.post(
                harness.fcmSendPath, body: harness.fcmMessage(), headers: ["authorization: Bearer \(token)"]
            )
            .status == 200)
        harness.server.revokeAccessTokens()
        let revoked = try harness.post(
            harness.fcmSendPath, body: harness.fcmMessage(), headers: ["authorization: Bearer \(token)"])
        #expect(revoked.status == 401)
        #expect(revoked.fcmStatus == "UNAUTHENTICATED")
        // Refresh once: a new token works again.
        let fresh = try harness.fcmAccessToken()
        #expect(
            try harness.post(
                harness.fcmSendPath, body: harness.fcmMessage(), headers: ["authorization: Bearer \(fresh)"]
            )
            .status == 200)
        #expect(harness.server.androidStatistics.fcm.authenticationFailures == 3)
    }

    @Test("bodies are checked as FCM's proto JSON parsing does")
    func bodyValidation() throws {
        let harness = try MockHarness()
        let token = try harness.fcmAccessToken()
        let authorization = ["authorization: Bearer \(token)"]
        let refused: [(String, String)] = [
            (
                #"{"message":{"token":"t:1","tokens":["a"]}}"#,
                #"Unknown name "tokens" at 'message': Cannot find field."#
            ),
            (
                #"{"message":{"token":"t:1","data":{"a":"b","n":12}}}"#,
                "Invalid value at 'message.data[1].value' (TYPE_STRING), 12"
            ),
            (
                #"{"message":{"token":"t:1","android":{"priority":"URGENT"}}}"#,
                "Invalid value at 'message.android.priority'"
            ),
            (#"{"message":{"token":"t:1","android":{"ttl":"10"}}}"#, "Invalid value at 'message.android.ttl'"),
            (
                #"{"message":{"token":"t:1","android":{"notification":{"notification_count":"x"}}}}"#,
                "Invalid value at 'message.android.notification.notification_count' (TYPE_INT32)"
            ),
            (#"{"message":{"token":"t:1","topic":"news"}}"#, "Oneof field 'target' is already set"),
            (#"{"message":{"notification":{"title":"x"}}}"#, "Recipient of the message is not set."),
            (#"{"message":{"token":"has space"}}"#, "The registration token is not a valid FCM registration token"),
            (
                #"{"validate_only":false,"extra":1,"message":{"token":"t:1"}}"#,
                #"Unknown name "extra": Cannot find field."#
            ),
            ("not json", "Invalid JSON payload received."),
        ]
        for (body, message) in refused {
            let response = try harness.post(harness.fcmSendPath, body: body, headers: authorization)
            #expect(response.status == 400, "\(body)")
            #expect(response.fcmStatus == "INVALID_ARGUMENT", "\(body)")
            #expect(response.fcmMessage?.contains(message) == true, "\(body): \(response.fcmMessage ?? "")")
        }
        // What the Admin SDKs send is accepted: lowercase priority, camelCase names, numeric counts.
        let accepted = [
            harness.fcmMessage(extra: #","android":{"priority":"high","ttl":"0.500000000s"}"#),
            harness.fcmMessage(
                extra:
                    #","android":{"collapseKey":"c","notification":{"channelId":"ch","notificationCount":3,"bodyLocArgs":["a"],"clickAction":"OPEN"}}"#
            ),
        ]
        for body in accepted {
            #expect(try harness.post(harness.fcmSendPath, body: body, headers: authorization).status == 200, "\(body)")
        }
        let dryRun = try harness.post(
            harness.fcmSendPath, body: #"{"validate_only":true,"message":{"token":"t:1"}}"#, headers: authorization)
        #expect(dryRun.json?["name"] as? String == "projects/tuisong-local/messages/fake_message_id")
        #expect(harness.server.receivedAndroidMessages().count == accepted.count)
    }

    @Test("the service-account file is Google's shape and its key signs assertions the mock accepts")
    func serviceAccountFile() throws {
        let harness = try MockHarness()
        let json = harness.setup.fcmServiceAccountJSON(tokenURI: harness.baseURL + "/token")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: String])
        #expect(object["type"] == "service_account")
        #expect(object["project_id"] == "tuisong-local")
        #expect(object["client_email"] == "tuisong-local@tuisong-local.iam.gserviceaccount.com")
        #expect(object["token_uri"] == harness.baseURL + "/token")
        #expect(object["private_key_id"] == harness.setup.fcmServiceAccount.keyID)
        for key in ["client_id", "auth_uri", "auth_provider_x509_cert_url", "client_x509_cert_url", "universe_domain"] {
            #expect(object[key] != nil, "\(key)")
        }
        let key = try PrivateKey(pem: try #require(object["private_key"]))
        #expect(key.bits == 2048)
        let grant = try harness.fcmTokenResponse(assertion: try harness.fcmAssertion(key: key))
        #expect(grant.status == 200)
    }
}

@Suite("Android look-alikes: Huawei Push Kit")
struct MockHuaweiTests {
    @Test("client credentials buy a token; a wrong secret or an unknown client is refused with Huawei's error")
    func tokenGrant() throws {
        let harness = try MockHarness()
        let client = harness.setup.huaweiClient
        let token = try harness.pushKitAccessToken(path: "/oauth2/v3/token", client: client)
        #expect(!token.isEmpty)
        let wrong = try harness.postForm(
            "/oauth2/v3/token",
            [("grant_type", "client_credentials"), ("client_id", client.clientID), ("client_secret", "nope")])
        #expect(wrong.status == 400)
        #expect((wrong.json?["error"] as? NSNumber)?.intValue == 1101)
        #expect((wrong.json?["sub_error"] as? NSNumber)?.intValue == 12304)
        #expect(wrong.json?["error_description"] is String)
        let unknown = try harness.postForm(
            "/oauth2/v3/token", [("grant_type", "client_credentials"), ("client_id", "999"), ("client_secret", "x")])
        #expect((unknown.json?["sub_error"] as? NSNumber)?.intValue == 20003)
        #expect(harness.server.androidStatistics.huawei.tokenGrants == 1)
        #expect(harness.server.androidStatistics.huawei.tokenRefusals == 2)
    }

    @Test("a batch is sent and recorded; illegal tokens make it partial (80100000) or refused (80300007)")
    func sendAndPartialSuccess() throws {
        let harness = try MockHarness { $0.faults.androidTokenPrefixes = ["gone-": .unregistered] }
        let token = try harness.pushKitAccessToken(path: "/oauth2/v3/token", client: harness.setup.huaweiClient)
        let authorization = ["authorization: Bearer \(token)"]
        func batch(_ tokens: [String]) -> String {
            #"{"validate_only":false,"message":{"token":\#(MockHarness.tokenArray(tokens)),"data":"{\"k\":\"v\"}","android":{"urgency":"HIGH","ttl":"86400s","notification":{"title":"t","body":"b","click_action":{"type":3},"badge":{"add_num":1,"class":"a.B"}}}}}"#
        }
        let ok = try harness.post(harness.huaweiSendPath, body: batch(["tok1", "tok2"]), headers: authorization)
        #expect(ok.status == 200)
        #expect(ok.pushKitCode == "80000000")
        #expect(ok.json?["requestId"] is String)

        let partial = try harness.post(
            harness.huaweiSendPath, body: batch(["tok3", "gone-4", "bad token"]), headers: authorization)
        #expect(partial.status == 200)
        #expect(partial.pushKitCode == "80100000")
        let summary = try #require(partial.json?["msg"] as? String)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any])
        #expect(parsed["illegal_tokens"] as? [String] == ["gone-4", "bad token"])
        #expect((parsed["success"] as? NSNumber)?.intValue == 1)
        #expect((parsed["failure"] as? NSNumber)?.intValue == 2)

        let none = try harness.post(harness.huaweiSendPath, body: batch(["gone-5"]), headers: authorization)
        #expect(none.pushKitCode == "80300007")

        let recorded = harness.server.receivedAndroidMessages()
        #expect(recorded.map(\.tokens) == [["tok1", "tok2"], ["tok3"]])
        #expect(recorded.last?.refusedTokens == ["gone-4", "bad token"])
        #expect(recorded.first?.target == harness.setup.huaweiClient.appID)
        let statistics = harness.server.androidStatistics.huawei
        #expect(statistics.sendRequests == 3)
        #expect(statistics.messagesDelivered == 3)
        #expect(statistics.messagesRefused == 3)
    }

    @Test("more than 1000 tokens, bad fields and request-level faults are refused")
    func refusals() throws {
        let harness = try MockHarness {
            $0.faults.androidTokenPrefixes = ["slow-": .quotaExceeded(retryAfterSeconds: 5), "boom-": .internal]
        }
        let token = try harness.pushKitAccessToken(path: "/oauth2/v3/token", client: harness.setup.huaweiClient)
        let authorization = ["authorization: Bearer \(token)"]
        let many = (0...1000).map { "t\($0)" }
        let cases: [(String, Int, String)] = [
            (#"{"message":{"token":\#(MockHarness.tokenArray(many)),"data":"x"}}"#, 400, "80300010"),
            (#"{"message":{"token":[],"data":"x"}}"#, 400, "80300010"),
            (#"{"messager":{"token":["a"]}}"#, 400, "80300010"),
            (#"{"message":{"token":["a"],"android":{"urgency":"URGENT"}}}"#, 400, "80100001"),
            (#"{"message":{"token":["a"],"android":{"collapse_key":200}}}"#, 400, "80100013"),
            (
                #"{"message":{"token":["a"],"android":{"notification":{"title":"t","body":"b","badge":{"add_num":0}}}}}"#,
                400, "80100003"
            ),
            (#"{"message":{"token":["a"],"data":{"k":"v"}}}"#, 400, "80100003"),
            (#"{"message":{"token":["a","slow-1"],"data":"x"}}"#, 503, "81000001"),
            (#"{"message":{"token":["boom-1"],"data":"x"}}"#, 500, "81000001"),
        ]
        for (body, status, code) in cases {
            let response = try harness.post(harness.huaweiSendPath, body: body, headers: authorization)
            #expect(response.status == status, "\(body.prefix(80))")
            #expect(response.pushKitCode == code, "\(body.prefix(80))")
        }
        #expect(harness.server.receivedAndroidMessages().isEmpty)
    }

    @Test("expired and revoked tokens: HTTP 401 80200003; another app's token or none: 80200001")
    func accessTokenRefusals() throws {
        let expiring = try MockHarness { $0.accessTokenLifetimeSeconds = 0 }
        let stale = try expiring.pushKitAccessToken(path: "/oauth2/v3/token", client: expiring.setup.huaweiClient)
        let body = #"{"message":{"token":["a"],"data":"x"}}"#
        let expired = try expiring.post(
            expiring.huaweiSendPath, body: body, headers: ["authorization: Bearer \(stale)"])
        #expect(expired.status == 401)
        #expect(expired.pushKitCode == "80200003")

        let other = LookAlikeConfiguration.PushKitClient(clientID: "555", clientSecret: "s", appID: "555")
        let harness = try MockHarness { $0.huaweiClients.append(other) }
        let token = try harness.pushKitAccessToken(path: "/oauth2/v3/token", client: harness.setup.huaweiClient)
        let otherToken = try harness.pushKitAccessToken(path: "/oauth2/v3/token", client: other)
        let crossApp = try harness.post(
            harness.huaweiSendPath, body: body, headers: ["authorization: Bearer \(otherToken)"])
        #expect(crossApp.status == 401)
        #expect(crossApp.pushKitCode == "80200001")
        #expect(try harness.post(harness.huaweiSendPath, body: body).pushKitCode == "80200001")
        #expect(
            try harness.post(harness.huaweiSendPath, body: body, headers: ["authorization: Bearer \(token)"]).status
                == 200)
        harness.server.revokeAccessTokens()
        let revoked = try harness.post(harness.huaweiSendPath, body: body, headers: ["authorization: Bearer \(token)"])
        #expect(revoked.status == 401)
        #expect(revoked.pushKitCode == "80200003")
    }
}

@Suite("Android look-alikes: credentials")
struct MockAndroidCredentialTests {
    @Test("clients and service accounts trusted at run time get tokens from then on")
    func trustAtRunTime() throws {
        let harness = try MockHarness()
        let client = LookAlikeConfiguration.PushKitClient(clientID: "777", clientSecret: "late", appID: "777")
        let form = [("grant_type", "client_credentials"), ("client_id", "777"), ("client_secret", "late")]
        #expect(try harness.postForm("/oauth2/v3/token", form).status == 400)
        harness.server.trustHuaweiClient(client)
        #expect(try harness.postForm("/oauth2/v3/token", form).status == 200)
        #expect(try harness.postForm("/auth/token", form).status == 401)
        harness.server.trustHonorClient(client)
        #expect(try harness.postForm("/auth/token", form).status == 200)

        let key = try TestKeys.rsa(0)
        let account = LookAlikeConfiguration.FCMServiceAccount(
            clientEmail: "late@other.iam.gserviceaccount.com", keyID: "k1", publicKeyPEM: try key.publicKey.pem(),
            projectID: "other")
        let assertion = try harness.fcmAssertion(issuer: account.clientEmail, keyID: "k1", key: key)
        #expect(try harness.fcmTokenResponse(assertion: assertion).status == 400)
        try harness.server.trustFCMServiceAccount(account)
        #expect(try harness.fcmTokenResponse(assertion: assertion).status == 200)
    }

    @Test("the configuration's Android fields round-trip through JSON and are optional")
    func configurationCodable() throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.codable")
        var configuration = setup.configuration()
        configuration.accessTokenLifetimeSeconds = 5
        configuration.faults.androidTokenPrefixes = [
            "slow-": .quotaExceeded(retryAfterSeconds: 9), "gone-": .unregistered,
        ]
        let data = try JSONEncoder().encode(configuration)
        #expect(try JSONDecoder().decode(LookAlikeConfiguration.self, from: data) == configuration)

        let partial = try JSONDecoder().decode(
            LookAlikeConfiguration.self,
            from: Data(
                #"{"huaweiClients":[{"clientID":"1","clientSecret":"s","appID":"1"}],"faults":{"androidTokenPrefixes":{"x":{"kind":"internal"}}}}"#
                    .utf8))
        #expect(partial.huaweiClients == [.init(clientID: "1", clientSecret: "s", appID: "1")])
        #expect(partial.faults.androidTokenPrefixes == ["x": .internal])
        #expect(partial.accessTokenLifetimeSeconds == 3600)
        #expect(partial.fcmServiceAccounts.isEmpty)
    }

    @Test("a setup saved before the Android look-alikes gains Android credentials on load, and keeps them")
    func oldSetupFileGainsAndroidCredentials() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tuisong-setup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("setup.json").path
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.old")
        try setup.save(to: path)
        var saved = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        for key in ["fcmServiceAccount", "fcmPrivateKeyPEM", "fcmClientID", "huaweiClient", "honorClient"] {
            saved[key] = nil
        }
        try JSONSerialization.data(withJSONObject: saved).write(to: URL(fileURLWithPath: path))

        let loaded = try LookAlikeLocalSetup.loadOrGenerate(at: path, bundleID: "com.example.old")
        #expect(loaded.keyID == setup.keyID)
        #expect(loaded.fcmServiceAccount.projectID == "tuisong-local")
        let again = try LookAlikeLocalSetup.loadOrGenerate(at: path, bundleID: "com.example.old")
        #expect(again.huaweiClient == loaded.huaweiClient)
        #expect(again.fcmServiceAccount == loaded.fcmServiceAccount)
        #expect(again.fcmPrivateKeyPEM == loaded.fcmPrivateKeyPEM)
    }
}

@Suite("Android look-alikes: Honor Push")
struct MockHonorTests {
    @Test("token, send with per-token outcomes in failTokens and expireTokens, refusals")
    func grantSendAndRefusals() throws {
        let harness = try MockHarness {
            $0.faults.androidTokenPrefixes = ["gone-": .unregistered, "bad-": .invalidArgument]
        }
        let client = harness.setup.honorClient
        let wrong = try harness.postForm(
            "/auth/token",
            [("grant_type", "client_credentials"), ("client_id", client.clientID), ("client_secret", "x")])
        #expect(wrong.status == 401)
        #expect(wrong.json?["error"] as? String == "invalid_client")
        let token = try harness.pushKitAccessToken(path: "/auth/token", client: client)
        let headers = ["authorization: Bearer \(token)", "timestamp: 1563105451261"]
        func message(_ tokens: [String]) -> String {
            #"{"android":{"ttl":"86400s","notification":{"title":"t","body":"b","clickAction":{"type":3},"importance":"NORMAL","badge":{"addNum":1,"badgeClass":"a.B"}}},"data":"{}","token":\#(MockHarness.tokenArray(tokens))}"#
        }
        let ok = try harness.post(harness.honorSendPath, body: message(["h1", "gone-2", "bad-3"]), headers: headers)
        #expect(ok.status == 200)
        #expect(ok.pushKitCode == "200")
        let data = try #require(ok.json?["data"] as? [String: Any])
        #expect(data["sendResult"] as? Bool == true)
        #expect(data["requestId"] is String)
        #expect(data["expireTokens"] as? [String] == ["gone-2"])
        #expect(data["failTokens"] as? [String] == ["bad-3"])

        let none = try harness.post(harness.honorSendPath, body: message(["gone-9"]), headers: headers)
        #expect(none.pushKitCode == "80300007")
        #expect((none.json?["data"] as? [String: Any])?["sendResult"] as? Bool == false)

        let tooMany = try harness.post(
            harness.honorSendPath, body: message((0...1000).map { "t\($0)" }), headers: headers)
        #expect(tooMany.status == 400)
        #expect(tooMany.pushKitCode == "80300010")
        let badField = try harness.post(
            harness.honorSendPath, body: #"{"android":{"notification":{"importance":"HIGH"}},"token":["h"]}"#,
            headers: headers)
        #expect(badField.status == 400)
        #expect(badField.pushKitCode == "80100003")

        let recorded = harness.server.receivedAndroidMessages()
        #expect(recorded.count == 1)
        #expect(recorded.first?.service == .honor)
        #expect(recorded.first?.tokens == ["h1"])
        #expect(recorded.first?.refusedTokens == ["gone-2", "bad-3"])
        #expect(recorded.first?.timestampHeader == "1563105451261")

        harness.server.revokeAccessTokens()
        let revoked = try harness.post(harness.honorSendPath, body: message(["h1"]), headers: headers)
        #expect(revoked.status == 401)
        #expect(revoked.pushKitCode == "80200003")
        let statistics = harness.server.androidStatistics.honor
        #expect(statistics.tokenGrants == 1)
        #expect(statistics.tokenRefusals == 1)
        #expect(statistics.sendRequests == 5)
        #expect(statistics.messagesDelivered == 1)
    }
}

@Suite("Android look-alikes share the APNs port")
struct MockAndroidSharingTests {
    @Test("one HTTP/2 connection carries an FCM token grant, an APNs push and a Huawei grant; the log names each")
    func oneConnectionEveryService() throws {
        let lines = LogLines()
        let harness = try MockHarness(configure: { $0.logRequests = true }, requestLog: { lines.append($0) })
        let assertion = try harness.fcmAssertion()
        let fcmForm = try harness.write(
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)", to: "fcm.form")
        let client = harness.setup.huaweiClient
        let huaweiForm = try harness.write(
            "grant_type=client_credentials&client_id=\(client.clientID)&client_secret=\(client.clientSecret)",
            to: "huawei.form")
        let responses = try harness.curl([
            CurlRequest(path: "/token", headers: [], bodyFile: fcmForm),
            CurlRequest(headers: try harness.validHeaders(), bodyFile: harness.path("payload.json")),
            CurlRequest(path: "/oauth2/v3/token", headers: [], bodyFile: huaweiForm),
        ])
        #expect(responses.map(\.status) == [200, 200, 200])
        #expect(harness.server.statistics.connectionsAccepted == 1)
        #expect(harness.server.apnsStatistics.requests == 1)
        let logged = lines.all
        #expect(logged.count == 3)
        #expect(logged.first?.contains(#""service":"fcm""#) == true)
        #expect(logged.last?.contains(#""service":"huawei""#) == true)
        #expect(logged.last?.contains(#""principal":"\#(client.clientID)""#) == true)
    }
}

final class LogLines: @unchecked Sendable {
    // @unchecked Sendable: `lines` is only touched under `lock`.
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) {
        lock.lock()
        lines.append(line)
        lock.unlock()
    }

    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return lines
    }
}
