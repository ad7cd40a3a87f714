import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongEcho
import TuisongGateway
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

@Suite struct AdminCredentialUploadParsingTests {
    private func parse(_ object: [String: Any]) throws -> AdminCredentialUpload {
        try AdminCredentialsAPI.upload(
            appID: 7, AdminBody(object: object), form: TransportRegistry.standard.uploadedFiles?.uploadedCredentialForm)
    }

    private func field(_ object: [String: Any]) -> String? {
        do {
            _ = try parse(object)
            return nil
        } catch let error as AdminError {
            return error.field
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test func p8NeedsKeyAndTeamIdsAndDropsAnyPassword() throws {
        let file = Data("-----BEGIN PRIVATE KEY-----\nMIG...\n-----END PRIVATE KEY-----\n".utf8).base64EncodedString()
        let upload = try parse([
            "kind": "p8", "environment": "sandbox", "file": file, "key_id": " abc123defg ", "team_id": "TEAM123456",
            "password": "ignored",
        ])
        #expect(upload.appID == 7)
        #expect(upload.kind == .p8)
        #expect(upload.environment == .sandbox)
        // The declared form's fields of the kind, by name: a .p8 takes no password.
        #expect(upload.values == ["key_id": "abc123defg", "team_id": "TEAM123456"])
        #expect(String(decoding: upload.file, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----"))

        #expect(field(["kind": "p8", "environment": "sandbox", "file": file, "team_id": "TEAM123456"]) == "key_id")
        // Each by its declared rule (exactly 10 identifier characters); Apple's own alphabet is
        // the transport's check of the file (`invalid_team_id`, CredentialUploadTests).
        #expect(
            field([
                "kind": "p8", "environment": "sandbox", "file": file, "key_id": "ABC123DEFG", "team_id": "TEAM12345",
            ]) == "team_id")
        #expect(field(["kind": "p9", "environment": "sandbox", "file": file]) == "kind")
    }

    @Test func p12KeepsItsPasswordEvenWhenEmpty() throws {
        let file = Data([0x30, 0x82, 0x01, 0x00]).base64EncodedString()
        #expect(
            try parse(["kind": "p12", "environment": "production", "file": file, "password": "p w"]).values
                == ["password": "p w"])
        #expect(try parse(["kind": "p12", "environment": "production", "file": file]).values.isEmpty)
    }

    /// What the admin API read is handed to the service as its declared form makes an upload
    /// (`UploadedCredentialForm.upload`): a key's ids, a certificate's password or none; a text
    /// kind given binary bytes is refused as the wrong kind.
    @Test func theUploadIsMadeAsTheDeclaredFormMakesIt() throws {
        let pem = Data("-----BEGIN PRIVATE KEY-----\nMIG...\n-----END PRIVATE KEY-----\n".utf8).base64EncodedString()
        let binary = Data([0x30, 0x82, 0xFF, 0xFE]).base64EncodedString()
        let p8 = try parse([
            "kind": "p8", "environment": "sandbox", "file": pem, "key_id": "abc123defg", "team_id": "TEAM123456",
        ])
        guard case .p8(let text, let keyID, let teamID) = try GatewayCredentialBackend.credentialUpload(p8) else {
            Issue.record("a .p8 upload is a .p8")
            return
        }
        #expect(text.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        // As given: APNs's check of the key reads Apple's ids in capitals (CredentialUploadTests).
        #expect(keyID == "abc123defg")
        #expect(teamID == "TEAM123456")
        let p12 = try parse(["kind": "p12", "environment": "production", "file": binary])
        guard case .p12(let der, let password) = try GatewayCredentialBackend.credentialUpload(p12) else {
            Issue.record("a .p12 upload is a .p12")
            return
        }
        #expect(der == [0x30, 0x82, 0xFF, 0xFE])
        #expect(password == "")
        let plain = try parse(["kind": "pem", "environment": "production", "file": pem])
        guard case .pem(_, let none) = try GatewayCredentialBackend.credentialUpload(plain) else {
            Issue.record("a PEM upload is a PEM")
            return
        }
        #expect(none == nil)
        for kind in ["p8", "pem"] {
            let upload = try parse([
                "kind": kind, "environment": "sandbox", "file": binary, "key_id": "ABC123DEFG", "team_id": "TEAM123456",
            ])
            #expect(throws: CredentialError.self, "\(kind)") { try GatewayCredentialBackend.credentialUpload(upload) }
            do {
                _ = try GatewayCredentialBackend.credentialUpload(upload)
            } catch let error as CredentialError {
                #expect(error.code == .wrongKind)
            }
        }
    }

    @Test func refusesWhatIsNotACredentialUpload() {
        let file = Data("x".utf8).base64EncodedString()
        #expect(field(["kind": "jks", "environment": "sandbox", "file": file]) == "kind")
        #expect(field(["kind": "p12", "environment": "staging", "file": file]) == "environment")
        #expect(field(["kind": "p12", "environment": "sandbox"]) == "file")
        #expect(field(["kind": "p12", "environment": "sandbox", "file": "!!!"]) == "file")
        let huge = Data(repeating: 0x41, count: AdminCredentialsAPI.maxFileBytes + 1).base64EncodedString()
        #expect(field(["kind": "p12", "environment": "sandbox", "file": huge]) == "file")
    }
}

/// Uploads through the admin API of a real gateway in local mode: CredentialService checks
/// each file, the bundled APNs mock answers "test connection".
@Suite(.serialized) struct AdminCredentialsTests {
    struct PushCertificate {
        let certificate: Certificate
        let key: PrivateKey
    }

    static func pushCertificate(days: Double, bundleID: String = "com.example.creds") throws -> PushCertificate {
        let key = try TestKeys.rsa(0)
        let now = Date()
        let certificate = try Certificate.issue(
            subjectCommonName: "Apple Push Services: \(bundleID)", subjectUID: bundleID, subjectAltNames: [],
            publicKey: key.publicKey, issuer: nil, signingKey: key, isCA: false,
            notBefore: now.addingTimeInterval(-86400 * 400), notAfter: now.addingTimeInterval(86400 * days))
        return PushCertificate(certificate: certificate, key: key)
    }

    private func upload(_ client: AdminTestClient, _ appID: Int64, _ body: [String: Any]) async throws -> TestResponse {
        try await client.call("POST", "/apps/\(appID)/credentials", json: body)
    }

    /// The console's upload form is the uploaded-files transport's declaration as the session
    /// serves it (#44): each file kind with the fields it needs and may be given with, each
    /// field's label, hint and longest value; a gateway without such a transport serves none.
    @Test func theSessionServesTheDeclaredUploadFormTheConsoleRenders() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let session = try await client.call("GET", "/session")
        let features = try #require(session.jsonObject["features"] as? [String: Any])
        let form = try #require(features["uploaded_files"] as? [String: Any])
        let declared = try #require(TransportRegistry.standard.uploadedFiles?.uploadedCredentialForm)
        #expect(form["channel"] as? String == TransportRegistry.standard.uploadedFilesChannel?.rawValue)
        let files = try #require(form["files"] as? [[String: Any]])
        #expect(files.compactMap { $0["name"] as? String } == declared.files.map(\.name))
        #expect(files.compactMap { $0["kind"] as? String } == ["file", "file", "file"])
        for (file, name) in zip(files, declared.files.map(\.name)) {
            #expect(file["needs"] as? [String] == declared.needs[name] ?? [], "\(name)")
            #expect(file["optional"] as? [String] == declared.optional[name] ?? [], "\(name)")
            let hint = try #require(file["hint_text"] as? [String: String])
            #expect(hint["en"] == declared.consoleHints[name]?.en, "a file's hint is the console's, not the CLI's help")
            #expect((file["label"] as? [String: String])?["zh"]?.isEmpty == false)
        }
        let fields = try #require(form["fields"] as? [[String: Any]])
        #expect(fields.compactMap { $0["name"] as? String } == declared.fields.map(\.name))
        #expect(fields.compactMap { $0["kind"] as? String } == declared.fields.map(\.kind.rawValue))
        #expect(fields.compactMap { $0["max_length"] as? Int } == declared.fields.map(\.rule.length.upperBound))
        #expect(fields.compactMap { ($0["hint_text"] as? [String: String])?["en"] } == declared.fields.map(\.help))
        let environmentHint = try #require(form["environment_hint_text"] as? [String: String])
        #expect(environmentHint["zh"] == declared.consoleHints["environment"]?.zh)
        #expect(TransportRegistry([EchoTransport.declaration]).uploadedFormObject == nil)
    }

    @Test func uploadsAreCheckedWithAClearCodeForEachFailure() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let app = try await gw.runtime.store.createApp(name: "c", bundleID: "com.example.creds", apiKeyHash: "h")
        let good = try Self.pushCertificate(days: 20)
        let p12 = try PKCS12.make(certificate: good.certificate, key: good.key, password: "right horse")
        let p12Base64 = Data(p12).base64EncodedString()

        let wrongPassword = try await upload(
            client, app.id, ["kind": "p12", "environment": "production", "file": p12Base64, "password": "wrong"])
        #expect(wrongPassword.status == 422)
        #expect(wrongPassword.errorCode == "wrong_password")
        #expect(wrongPassword.errorField == "password")

        let accepted = try await upload(
            client, app.id, ["kind": "p12", "environment": "production", "file": p12Base64, "password": "right horse"])
        #expect(accepted.status == 201, "\(String(decoding: accepted.body, as: UTF8.self))")
        #expect(accepted.jsonObject["kind"] as? String == "p12")
        #expect((accepted.jsonObject["subject"] as? String)?.contains("com.example.creds") == true)
        #expect(accepted.jsonObject["expiring_soon"] as? Bool == true)
        #expect(accepted.jsonObject["days_left"] as? Int == 19)

        let expired = try Self.pushCertificate(days: -1)
        let expiredP12 = try PKCS12.make(certificate: expired.certificate, key: expired.key, password: "p")
        let refusedExpired = try await upload(
            client, app.id,
            [
                "kind": "p12", "environment": "production", "file": Data(expiredP12).base64EncodedString(),
                "password": "p",
            ])
        #expect(refusedExpired.errorCode == "expired")

        let otherKey = try TestKeys.rsa(1)
        let mismatched = good.certificate.pem() + (try otherKey.pkcs8PEM())
        let refusedMismatch = try await upload(
            client, app.id,
            ["kind": "pem", "environment": "production", "file": Data(mismatched.utf8).base64EncodedString()])
        #expect(refusedMismatch.errorCode == "key_mismatch")

        let asP8 = try await upload(
            client, app.id,
            [
                "kind": "p8", "environment": "sandbox", "file": p12Base64, "key_id": "ABC123DEFG",
                "team_id": "TEAM123456",
            ])
        #expect(asP8.errorCode == "wrong_kind")
        let certAsP8 = try await upload(
            client, app.id,
            [
                "kind": "p8", "environment": "sandbox", "file": Data(good.certificate.pem().utf8).base64EncodedString(),
                "key_id": "ABC123DEFG", "team_id": "TEAM123456",
            ])
        #expect(certAsP8.errorCode == "wrong_kind")
        let rsaAsP8 = try await upload(
            client, app.id,
            [
                "kind": "p8", "environment": "sandbox",
                "file": Data(try otherKey.pkcs8PEM().utf8).base64EncodedString(),
                "key_id": "ABC123DEFG", "team_id": "TEAM123456",
            ])
        #expect(rsaAsP8.errorCode == "wrong_kind", "an APNs key is P-256")
        let garbage = try await upload(
            client, app.id,
            ["kind": "p12", "environment": "sandbox", "file": Data("not a certificate".utf8).base64EncodedString()])
        #expect(garbage.errorCode == "corrupt_file")

        let list = try await client.call("GET", "/apps/\(app.id)/credentials")
        #expect(list.list("credentials").count == 1, "only the good file was stored")
        #expect(!client.everReceived("right horse"))
        #expect(!client.everReceived(p12Base64.prefix(60).description))
    }

    @Test func p8KeyTestsItsConnectionAndIsDeleted() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let app = try await gw.runtime.store.createApp(name: "c", bundleID: "com.example.creds", apiKeyHash: "h")
        let other = try await gw.runtime.store.createApp(name: "d", bundleID: "com.example.d", apiKeyHash: "h2")
        let pem = try PrivateKey.generateP256().pkcs8PEM()
        let created = try await upload(
            client, app.id,
            [
                "kind": "p8", "environment": "sandbox", "file": Data(pem.utf8).base64EncodedString(),
                "key_id": "abc123defg",
                "team_id": "TEAM123456",
            ])
        #expect(created.status == 201)
        let id = try #require(created.jsonObject["id"] as? Int)
        #expect(created.jsonObject["key_id"] as? String == "ABC123DEFG")
        #expect(created.jsonObject["expires_at"] is NSNull)

        let stored = try #require(try await gw.runtime.store.credential(id: Int64(id)))
        let keyLine = String(pem.split(separator: "\n")[1])
        #expect(!String(decoding: stored.encryptedSecret, as: UTF8.self).contains(keyLine), "sealed at rest")
        #expect(!client.everReceived(keyLine))

        let tested = try await client.call("POST", "/apps/\(app.id)/credentials/\(id)/test")
        #expect(tested.status == 200)
        #expect(tested.jsonObject["ok"] as? Bool == true, "\(tested.jsonObject)")
        #expect((tested.jsonObject["endpoint"] as? String)?.contains("127.0.0.1") == true)
        #expect((tested.jsonObject["detail"] as? String)?.contains("ALPN h2") == true)

        #expect(try await client.call("POST", "/apps/\(other.id)/credentials/\(id)/test").status == 404)
        #expect(try await client.call("DELETE", "/apps/\(other.id)/credentials/\(id)").status == 404)
        // One table holds every channel's credentials: the form credentials' routes neither list
        // nor delete an uploaded key.
        #expect(try await client.call("GET", "/apps/\(app.id)/channel-credentials").list("credentials").isEmpty)
        #expect(try await client.call("DELETE", "/apps/\(app.id)/channel-credentials/\(id)").status == 404)
        #expect(try await client.call("DELETE", "/apps/\(app.id)/credentials/\(id)").status == 204)
        #expect(try await client.call("DELETE", "/apps/\(app.id)/credentials/\(id)").status == 404)
        #expect(try await client.call("GET", "/apps/\(app.id)/credentials").list("credentials").isEmpty)
    }
}

/// Android credentials through the admin API: an FCM service account and a Huawei client are
/// checked, stored sealed, listed without their secrets and deleted; a file whose key does not
/// load is refused with the reason.
@Suite(.serialized) struct AdminChannelCredentialsTests {
    static func serviceAccount(
        privateKey: String, projectID: String = "console-project", clientEmail: String? = nil,
        tokenURI: String = "https://oauth2.googleapis.com/token"
    ) throws -> String {
        let object: [String: String] = [
            "type": "service_account", "project_id": projectID, "private_key_id": "k1",
            "private_key": privateKey, "client_email": clientEmail ?? "push@\(projectID).iam.gserviceaccount.com",
            "token_uri": tokenURI,
        ]
        return try JSONSerialization.data(withJSONObject: object).base64EncodedString()
    }

    /// The fields of a credential are checked against the shapes the services give them (issue
    /// #33's probe had them all accepted): they end up in URLs, signed assertions and the
    /// console, and `token_uri` is where a signed assertion goes.
    @Test func fieldsOutsideTheServicesShapesAreRefusedInOneSentence() async throws {
        let (gw, client) = try await AdminTestClient.start(environment: ["TUISONG_APNS_LOCAL_MOCK": "false"])
        defer { Task { await gw.stop() } }
        try await client.login()
        let app = try await gw.runtime.store.createApp(name: "c", bundleID: "com.example.android", apiKeyHash: "h")
        let path = "/apps/\(app.id)/channel-credentials"
        let keyPEM = try TestKeys.rsa(0).pkcs8PEM()
        func refusal(_ body: [String: Any]) async throws -> (code: String?, field: String?, message: String) {
            let answer = try await client.call("POST", path, json: body)
            #expect(answer.status == 422, "\(body): \(answer.text)")
            let error = answer.jsonObject["error"] as? [String: Any]
            let message = error?["message"] as? String ?? ""
            #expect(!message.isEmpty && !message.contains("\n"))
            // The same detail in Chinese, for the console in Chinese (#41 item 10).
            let text = error?["text"] as? [String: String]
            #expect(text?["en"] == message, "\(body): \(answer.text)")
            let chinese = text?["zh"]?.unicodeScalars.contains { (0x4E00...0x9FFF).contains($0.value) } ?? false
            #expect(chinese, "\(body): \(answer.text)")
            return (answer.errorCode, answer.errorField, message)
        }
        for projectID in [
            "../../x", "push\u{202E}tcejorp", String(repeating: "a", count: 4096), "Console-Project", "short",
        ] {
            let answer = try await refusal(
                ["channel": "fcm", "file": try Self.serviceAccount(privateKey: keyPEM, projectID: projectID)])
            #expect(answer.code == "invalid_service_account" && answer.field == "file")
            #expect(answer.message.contains("project_id"), "\(answer.message)")
        }
        for email in ["not an email", "push@", "@example.com", "push@localhost", "a\u{202E}b@example.com"] {
            let answer = try await refusal(
                ["channel": "fcm", "file": try Self.serviceAccount(privateKey: keyPEM, clientEmail: email)])
            #expect(answer.message.contains("client_email"), "\(email): \(answer.message)")
        }
        for uri in [
            "http://127.0.0.1:1/", "https://127.0.0.1:1/token", "http://oauth2.googleapis.com/token",
            "https://evil.example/token",
        ] {
            let answer = try await refusal(
                ["channel": "fcm", "file": try Self.serviceAccount(privateKey: keyPEM, tokenURI: uri)])
            #expect(answer.message.contains("token_uri"), "\(uri): \(answer.message)")
        }
        for (channel, appID) in [("huawei", "0"), ("huawei", "12345678901234567890"), ("honor", "007"), ("vivo", "-5")]
        {
            let answer = try await refusal([
                "channel": channel, "vendor_app_id": appID, "client_id": "c", "client_secret": "s",
            ])
            #expect(answer.code == "invalid_vendor_app_id" && answer.field == "vendor_app_id", "\(channel) \(appID)")
        }
        // What Google's console and the developer consoles hand out is accepted.
        let accepted = try await client.call(
            "POST", path,
            json: ["channel": "fcm", "file": try Self.serviceAccount(privateKey: keyPEM, projectID: "my-app-1a2b3")])
        #expect(accepted.status == 201, "\(accepted.text)")
        let huawei = try await client.call(
            "POST", path,
            json: ["channel": "huawei", "vendor_app_id": "104432144", "client_id": "104432144", "client_secret": "s"])
        #expect(huawei.status == 201, "\(huawei.text)")
    }

    /// A test's or local mode's look-alike: a token_uri on a host the operator's config names.
    @Test func aLookAlikeTokenHostIsAllowedWhereTheConfigNamesIt() throws {
        func hosts(_ environment: [String: String]) throws -> Set<String> {
            ChannelCredentialService.testTokenHosts(try GatewayConfig.load(fileContents: nil, environment: environment))
        }
        // Local mode (the default): every token request goes to the bundled look-alike.
        #expect(try hosts([:]).contains("127.0.0.1"))
        #expect(try hosts(["TUISONG_APNS_LOCAL_MOCK": "false"]).isEmpty, "Google's endpoints only")
        #expect(
            try hosts([
                "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_TRANSPORTS_FCM_URL": "https://fcm-lookalike.test:8443",
            ])
                == ["fcm-lookalike.test"])
    }

    @Test func fcmAndHuaweiAreAddedListedRefusedAndDeleted() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let app = try await gw.runtime.store.createApp(name: "c", bundleID: "com.example.android", apiKeyHash: "h")
        let other = try await gw.runtime.store.createApp(name: "d", bundleID: "com.example.other", apiKeyHash: "h2")
        let path = "/apps/\(app.id)/channel-credentials"
        let keyPEM = try TestKeys.rsa(0).pkcs8PEM()
        let keyLine = String(keyPEM.split(separator: "\n")[1])

        let fcm = try await client.call(
            "POST", path, json: ["channel": "fcm", "file": try Self.serviceAccount(privateKey: keyPEM)])
        #expect(fcm.status == 201, "\(String(decoding: fcm.body, as: UTF8.self))")
        #expect(fcm.jsonObject["channel"] as? String == "fcm")
        #expect(fcm.jsonObject["vendor_app_id"] as? String == "console-project")
        #expect(fcm.jsonObject["client_id"] as? String == "push@console-project.iam.gserviceaccount.com")
        #expect(fcm.jsonObject["status"] as? String == "ok")
        #expect(fcm.jsonObject["selector"] is NSNull)

        let garbage = try await client.call(
            "POST", path, json: ["channel": "fcm", "file": try Self.serviceAccount(privateKey: "not a key")])
        #expect(garbage.status == 422)
        #expect(garbage.errorCode == "corrupt_file")
        #expect(garbage.errorField == "file")
        let reason = (garbage.jsonObject["error"] as? [String: Any])?["message"] as? String ?? ""
        #expect(reason.contains("private_key"), "the refusal says what is wrong: \(reason)")

        let huawei = try await client.call(
            "POST", path,
            json: [
                "channel": "huawei", "vendor_app_id": "10086", "client_id": "10086", "client_secret": "hw-secret-4Rk",
                "badge_class": "com.example.MainActivity", "selector": "cn",
            ])
        #expect(huawei.status == 201, "\(String(decoding: huawei.body, as: UTF8.self))")
        #expect(huawei.jsonObject["badge_class"] as? String == "com.example.MainActivity")
        #expect(huawei.jsonObject["selector"] as? String == "cn")
        let huaweiID = try #require(huawei.jsonObject["id"] as? Int)

        let badAppID = try await client.call(
            "POST", path, json: ["channel": "honor", "vendor_app_id": "abc", "client_id": "c", "client_secret": "s"])
        #expect(badAppID.status == 422)
        #expect(badAppID.errorCode == "invalid_vendor_app_id")
        #expect(badAppID.errorField == "vendor_app_id")
        let noSecret = try await client.call(
            "POST", path, json: ["channel": "honor", "vendor_app_id": "1", "client_id": "c", "client_secret": ""])
        #expect(noSecret.status == 400)
        #expect(noSecret.errorField == "client_secret")
        let badBadge = try await client.call(
            "POST", path,
            json: [
                "channel": "honor", "vendor_app_id": "1", "client_id": "c", "client_secret": "s",
                "badge_class": "not a class",
            ])
        #expect(badBadge.errorCode == "invalid_badge_class")
        #expect(badBadge.errorField == "badge_class")
        #expect(try await client.call("POST", path, json: ["channel": "apns"]).errorField == "channel")

        let list = try await client.call("GET", path)
        #expect(list.status == 200)
        #expect(Set(list.list("credentials").compactMap { $0["channel"] as? String }) == ["fcm", "huawei"])
        #expect(list.list("credentials").allSatisfy { $0["encrypted_secret"] == nil && $0["client_secret"] == nil })
        #expect(!client.everReceived("hw-secret-4Rk"))
        #expect(!client.everReceived(keyLine))
        #expect(try await client.call("GET", "/apps/\(other.id)/channel-credentials").list("credentials").isEmpty)

        #expect(try await client.call("DELETE", "/apps/\(other.id)/channel-credentials/\(huaweiID)").status == 404)
        // Nor do the uploaded credentials' routes a form's.
        #expect(try await client.call("GET", "/apps/\(app.id)/credentials").list("credentials").isEmpty)
        #expect(try await client.call("DELETE", "/apps/\(app.id)/credentials/\(huaweiID)").status == 404)
        #expect(try await client.call("DELETE", "\(path)/\(huaweiID)").status == 204)
        #expect(try await client.call("DELETE", "\(path)/\(huaweiID)").status == 404)
        #expect(try await client.call("GET", path).list("credentials").map { $0["channel"] as? String } == ["fcm"])
    }
}
