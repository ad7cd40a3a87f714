import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongHarmony
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

/// Issue #40 item 9: every credential field keeps to the alphabet and length its service
/// issues, checked in one place (`CredentialForm.validate`) for the CLI, the admin API and the
/// console; a selector is text of a sane alphabet. Issue #41 item 3: local mode claims no
/// sign-in, and HarmonyOS and Xiaomi credentials are asked about with the service.
@Suite struct CredentialFieldRuleTests {
    /// Values no service issues, each of them given to every text and secret field.
    static let hostile = [
        "key=abc\r\nX-Injected: yes", "abc\ndef", "abc\rdef", "abc\u{0}def", "abc\u{202E}def", "abc\u{200B}def",
        "abc\u{1B}[31m", "abc\u{7F}", "abc😀", "<script>alert(1)</script>", "a b",
    ]

    func refusal(_ form: CredentialForm, _ input: CredentialFormInput) -> CredentialFormError? {
        do {
            _ = try form.validate(input, CredentialFormContext(testTokenHosts: []))
            return nil
        } catch {
            return error
        }
    }

    /// Real-looking values of each app-client service (as their consoles show them).
    static let real: [PushChannel: [String: String]] = [
        .huawei: [
            "vendor_app_id": "104523871", "client_id": "104523871",
            "client_secret": "3b1f0c8e9a7d4f2b6c5e8a1d0f9b7c3e2a4d6f8b0c1e3a5d7f9b2c4e6a8d0f1b",
            "badge_class": "com.example.chat.MainActivity", "receipt_id": "RCP78C959D4",
        ],
        .honor: [
            "vendor_app_id": "104400001", "client_id": "8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
            "client_secret": "Zx9-Qw8_Er7.Ty6+Ui5/Op4=", "badge_class": "com.example.Main$Launcher",
            "receipts": "on",
        ],
        .xiaomi: [
            "vendor_app_id": "com.example.chat_app2", "client_id": "2882303761517000000",
            "client_secret": "Fq3Kz8wQm1+Yp2/Lx7Vb9A==",
        ],
        .oppo: [
            "vendor_app_id": "30012345", "client_id": "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
            "client_secret": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        ],
        .vivo: [
            "vendor_app_id": "105123456", "client_id": "0d3e7a52-6b8c-4d1e-9f2a-3b4c5d6e7f80",
            "client_secret": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "receipt_id": "10086",
        ],
    ]

    @Test func realValuesPassAndValuesNoServiceIssuesAreRefusedPerField() throws {
        TransportRegistry.install()
        for (channel, values) in Self.real {
            let form = try #require(TransportRegistry.standard.declaration(of: channel)?.credentialForm)
            let valid = try form.validate(
                CredentialFormInput(values: values), CredentialFormContext(testTokenHosts: []))
            #expect(valid.clientID == values["client_id"], "\(channel)")
            // vivo's and Huawei's receipt ids and Honor's receipt switch are kept as the
            // credential's options (docs/receipts.md).
            #expect(valid.options["receipt_id"] == values["receipt_id"], "\(channel)")
            #expect(valid.options["receipts"] == values["receipts"], "\(channel)")
            for field in form.fields where values[field.name] != nil {
                // Markup is printable ASCII: a secret may hold it (it is never shown), no id may.
                for bad in Self.hostile where field.kind != .secret || !bad.hasPrefix("<") {
                    var input = values
                    input[field.name] = bad
                    let error = refusal(form, CredentialFormInput(values: input))
                    #expect(
                        error?.code == "invalid_\(field.name)", "\(channel) \(field.name) took \(bad.debugDescription)")
                    #expect(error?.field == field.name)
                    let message = error?.message ?? ""
                    #expect(message.range(of: bad) == nil, "the value is never quoted back: \(message)")
                }
                var long = values
                long[field.name] = String(repeating: "1", count: 1025)
                #expect(
                    refusal(form, CredentialFormInput(values: long))?.field == field.name, "\(channel) \(field.name)")
            }
        }
    }

    @Test func xiaomiPackageNamesAreJavaPackageNames() throws {
        let form = try #require(TransportRegistry.standard.declaration(of: .xiaomi)?.credentialForm)
        let values = try #require(Self.real[.xiaomi])
        for bad in ["com..x", ".com.x", "com.x.", "com", "1com.x", "com.1x", "com.ex-ample", "com.x$y"] {
            var input = values
            input["vendor_app_id"] = bad
            #expect(refusal(form, CredentialFormInput(values: input))?.code == "invalid_vendor_app_id", "\(bad)")
        }
        for good in ["com.example.chat", "cn.x_y.App2", "a.b"] {
            var input = values
            input["vendor_app_id"] = good
            #expect(refusal(form, CredentialFormInput(values: input)) == nil, "\(good)")
        }
    }

    @Test func harmonyKeyIDAndSubAccountAreIDs() throws {
        let form = try #require(HarmonyService.declaration.credentialForm)
        let pem = try TestKeys.rsa(0).pkcs8PEM()
        func file(keyID: String, sub: String) -> [UInt8] {
            JSONValue.object([
                "project_id": "101888", "key_id": .string(keyID), "sub_account": .string(sub),
                "private_key": .string(pem),
            ]).serialized()
        }
        #expect(
            refusal(
                form,
                CredentialFormInput(files: [
                    "file": file(keyID: "7f3c9a2e-1b4d-4e8f-a6c5-0d9e8f7a6b5c", sub: "1234567890")
                ])) == nil)
        for bad in ["ab\u{0}cd", "ab\u{200F}cd", "ab\u{202E}cd", "ab cd", "ab\"cd", ""] {
            #expect(
                refusal(form, CredentialFormInput(files: ["file": file(keyID: bad, sub: "2001")]))?.code
                    == "invalid_service_account", "\(bad.debugDescription)")
            #expect(
                refusal(form, CredentialFormInput(files: ["file": file(keyID: "0123abcd", sub: bad)]))?.code
                    == "invalid_service_account", "\(bad.debugDescription)")
        }
        var category = CredentialFormInput(
            values: ["category": "IM\u{202E}"], files: ["file": file(keyID: "k1", sub: "2001")])
        #expect(refusal(form, category)?.code == "invalid_category")
        category.values["category"] = "IM"
        #expect(refusal(form, category) == nil)
        // The receipt id of the project's receipt configuration (`pushOptions.receiptId`).
        var receipt = CredentialFormInput(
            values: ["receipt_id": "RCP1234"], files: ["file": file(keyID: "k1", sub: "2001")])
        #expect(
            try form.validate(receipt, CredentialFormContext(testTokenHosts: [])).options["receipt_id"] == "RCP1234")
        receipt.values["receipt_id"] = "RCP 1"
        #expect(refusal(form, receipt)?.code == "invalid_receipt_id")
    }

    /// Honor's receipt switch is on or off; off (or empty) keeps no option.
    @Test func honorsReceiptSwitchIsOnOrOff() throws {
        TransportRegistry.install()
        let form = try #require(TransportRegistry.standard.declaration(of: .honor)?.credentialForm)
        var values = try #require(Self.real[.honor])
        values["receipts"] = "off"
        #expect(
            try form.validate(CredentialFormInput(values: values), CredentialFormContext(testTokenHosts: []))
                .options["receipts"] == nil)
        values["receipts"] = "yes"
        #expect(refusal(form, CredentialFormInput(values: values))?.code == "invalid_receipts")
    }

    @Test func aSelectorIsTextOfASaneAlphabet() throws {
        for good in ["1001", "ios-prod", "com.example.app", "证书_1", "team@x/y+z=#~:"] {
            #expect(try CredentialSelector.validated(good) == good)
        }
        for bad in [
            "a\u{202E}b", "a\u{200B}b", "a\u{1B}b", "a\u{7F}b", "a😀b", "<b>", "a b", "a\"b", "a\r\nb", "a\u{0}b",
        ] {
            #expect(throws: CredentialError.self, "\(bad.debugDescription)") { try CredentialSelector.validated(bad) }
        }
        // The admin API: text or a whole number (a busiId); a boolean, an object, an array or a
        // fraction is refused, never taken as "no selector".
        #expect(try AdminCredentialsAPI.selector(AdminBody(object: ["selector": 1001])) == "1001")
        #expect(try AdminCredentialsAPI.selector(AdminBody(object: ["selector": " x-1 "])) == "x-1")
        #expect(try AdminCredentialsAPI.selector(AdminBody(object: [:])) == nil)
        for bad: Any in [true, ["a": 1], [1], 1.5, -3, "a\u{202E}"] {
            do {
                _ = try AdminCredentialsAPI.selector(AdminBody(object: ["selector": bad]))
                Issue.record("took \(bad)")
            } catch let error as AdminError {
                #expect(error.code == "invalid_selector" && error.field == "selector")
            }
        }
    }

    /// Through a running gateway's admin API: the Xiaomi secret with CR/LF of the issue is
    /// refused before anything is stored; a client id with U+202E, a boolean selector too.
    @Test func theAdminAPIRefusesWhatNoServiceIssuesAndLocalModeClaimsNoSignIn() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let (appID, _) = try await gw.createApp(bundleID: "com.example.rules")
        let path = "/apps/\(appID)/channel-credentials"
        let xiaomi: [String: Any] = [
            "channel": "xiaomi", "vendor_app_id": "com.example.rules", "client_id": "2882303761517000000",
            "client_secret": "Fq3Kz8wQm1+Yp2/Lx7Vb9A==",
        ]
        func add(_ changes: [String: Any]) async throws -> TestResponse {
            try await client.call("POST", path, json: xiaomi.merging(changes) { $1 })
        }
        let injected = try await add(["client_secret": "abc\r\nX-Injected: yes"])
        #expect(injected.status == 422 && injected.errorCode == "invalid_client_secret", "\(injected.text)")
        #expect(!injected.text.contains("X-Injected"), "the secret is never echoed")
        let rtl = try await add(["client_id": "2882\u{202E}303"])
        #expect(rtl.status == 422 && rtl.errorCode == "invalid_client_id", "\(rtl.text)")
        let package = try await add(["vendor_app_id": "com..x"])
        #expect(package.status == 422 && package.errorCode == "invalid_vendor_app_id", "\(package.text)")
        let selector = try await add(["selector": true])
        #expect(selector.status == 400 && selector.errorCode == "invalid_selector", "\(selector.text)")
        #expect(try await gw.runtime.store.channelCredentials(appID: appID).isEmpty, "nothing stored")

        // Local mode: the look-alike takes what is added; nothing is said to be signed in.
        let added = try await add([:])
        #expect(added.status == 201, "\(added.text)")
        let check = try #require(added.jsonObject["check"] as? [String: Any])
        #expect(check["result"] as? String == "not_checked")
        #expect((check["reason"] as? String ?? "").hasPrefix("local mode: not checked"))
    }
}

/// The CLI goes through the same form: the same values are refused with the same words, and
/// in local mode the credential it adds is "not checked", never "signed in".
@Suite struct CredentialFieldRuleCommandTests {
    @Test func theCLIRefusesTheSameValuesAndClaimsNoSignInInLocalMode() throws {
        guard FileManager.default.isExecutableFile(atPath: CrashRecoveryTests.binary) else {
            Issue.record("build the tuisong executable first (swift build)")
            return
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-cli-rules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = ["TUISONG_APNS_LOCAL_MOCK": "true"]
        func tuisong(_ arguments: [String]) throws -> CommandRun {
            try TuisongCommand.run(arguments, in: directory, environment: environment)
        }
        #expect(try tuisong(["migrate"]).status == 0)
        #expect(try tuisong(["app", "create", "--name", "cli", "--bundle-id", "com.example.cli"]).status == 0)
        func add(clientID: String = "2882303761517000000", package: String = "com.example.cli") throws -> CommandRun {
            try tuisong([
                "credential", "add", "--app", "1", "--channel", "xiaomi", "--vendor-app-id", package,
                "--client-id", clientID, "--client-secret-env", "XIAOMI_SECRET",
            ])
        }
        environment["XIAOMI_SECRET"] = "abc\r\nX-Injected: yes"
        let injected = try add()
        #expect(
            injected.status != 0 && injected.errors.contains("AppSecret must be printable ASCII"), "\(injected.errors)")
        #expect(!injected.errors.contains("X-Injected") && !injected.output.contains("X-Injected"))
        environment["XIAOMI_SECRET"] = "Fq3Kz8wQm1+Yp2/Lx7Vb9A=="
        let rtl = try add(clientID: "2882\u{202E}303")
        #expect(rtl.status != 0 && rtl.errors.contains("AppID must be ASCII letters"), "\(rtl.errors)")
        let package = try add(package: ".com.x")
        #expect(package.status != 0 && package.errors.contains("must be a package name"), "\(package.errors)")
        let added = try add()
        #expect(added.status == 0, "\(added.errors)")
        let check = try #require(added.json["check"] as? [String: Any], "\(added.output)")
        #expect(check["result"] as? String == "not_checked")
        #expect((check["reason"] as? String ?? "").hasPrefix("local mode: not checked"))
    }
}

/// Issue #41 items 3 and 4 against a look-alike that knows only its own credentials (a gateway
/// not in local mode pointed at it): a HarmonyOS key or a Xiaomi AppSecret it does not know is
/// refused by the service, the ones it knows are accepted; a `.p8` key APNs refuses is failing,
/// and "test connection" says APNs refused it.
@Suite(.serialized) struct CredentialServiceCheckTests {
    func withGateway(
        _ body: (LookAlikeLocalSetup, LookAlikeServer, RunningGateway, AdminTestClient) async throws -> Void
    ) async throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.check")
        let mock = try LookAlikeServer(
            configuration: setup.configuration(host: "127.0.0.1", port: 0), certificate: setup.serverCertificate,
            key: setup.serverKey)
        try mock.start()
        defer { mock.shutdown() }
        let files = FileManager.default.temporaryDirectory.appending(path: "credential-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: files) }
        let caFile = files.appending(path: "ca.pem").path
        try setup.writeCAFile(to: caFile)
        let base = "https://127.0.0.1:\(mock.port)"
        let (gw, client) = try await AdminTestClient.start(environment: [
            "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_APNS_PRODUCTION_URL": base, "TUISONG_APNS_CA_FILE": caFile,
            "TUISONG_TRANSPORTS_CA_FILE": caFile, "TUISONG_TRANSPORTS_HARMONY_URL": base,
            "TUISONG_TRANSPORTS_XIAOMI_URL": base,
        ])
        try await client.login()
        do {
            try await body(setup, mock, gw, client)
        } catch {
            await gw.stop()
            throw error
        }
        await gw.stop()
    }

    @Test func harmonyAndXiaomiAreAskedAboutWithTheService() async throws {
        try await withGateway { setup, mock, gw, client in
            let (appID, _) = try await gw.createApp(bundleID: setup.bundleID)
            let path = "/apps/\(appID)/channel-credentials"
            func result(_ body: [String: Any]) async throws -> (String?, String?) {
                let r = try await client.call("POST", path, json: body)
                #expect(r.status == 201, "\(r.text)")
                let check = r.jsonObject["check"] as? [String: Any]
                return (check?["result"] as? String, check?["reason"] as? String)
            }
            let known = Data(setup.harmonyServiceAccountJSON()).base64EncodedString()
            #expect(try await result(["channel": "harmony", "file": known]).0 == "accepted")
            // The same ids with a key the look-alike does not know: its JWT is refused.
            let stranger = HarmonyServiceAccount(
                projectID: setup.harmonyServiceAccount.projectID, keyID: setup.harmonyServiceAccount.keyID,
                privateKeyPEM: try TestKeys.rsa(1).pkcs8PEM(),
                subAccount: setup.harmonyServiceAccount.subAccount)
            let refused = try await result(["channel": "harmony", "file": Data(stranger.json).base64EncodedString()])
            #expect(refused.0 == "refused" && refused.1 == "80200001", "\(refused)")

            let xiaomi: [String: Any] = [
                "channel": "xiaomi", "vendor_app_id": setup.xiaomiApp.packageName, "client_id": "2882303761517000000",
                "client_secret": setup.xiaomiApp.appSecret,
            ]
            #expect(try await result(xiaomi).0 == "accepted")
            let wrong = try await result(xiaomi.merging(["client_secret": "Wrong0secret0Wrong0AA=="]) { $1 })
            #expect(wrong.0 == "refused" && wrong.1 == "21301", "\(wrong)")
            // Nothing reached a device: the checks name none.
            #expect(mock.receivedAndroidMessages().isEmpty)
        }
    }

    @Test func aRefusedP8KeyIsFailingAndTestConnectionSaysAPNsRefusedIt() async throws {
        try await withGateway { setup, mock, gw, client in
            let (appID, _) = try await gw.createApp(bundleID: setup.bundleID)
            // A key APNs does not know (the look-alike trusts only its own).
            let pem = try PrivateKey.generateP256().pkcs8PEM()
            let uploaded = try await client.call(
                "POST", "/apps/\(appID)/credentials",
                json: [
                    "kind": "p8", "environment": "production", "file": Data(pem.utf8).base64EncodedString(),
                    "key_id": "UNKNOWN001", "team_id": "UNKNOWN001",
                ])
            #expect(uploaded.status == 201, "\(uploaded.text)")
            #expect(uploaded.jsonObject["status"] as? String == "failing", "\(uploaded.text)")
            let reason = try #require(uploaded.jsonObject["status_reason"] as? String)
            let id = try #require(uploaded.jsonObject["id"] as? Int)
            let tested = try await client.call("POST", "/apps/\(appID)/credentials/\(id)/test", json: [:])
            #expect(tested.jsonObject["ok"] as? Bool == false, "\(tested.text)")
            let detail = tested.jsonObject["detail"] as? String ?? ""
            #expect(detail.contains("APNs refused the provider token") && detail.contains(reason), "\(detail)")
            #expect(!detail.contains("first push"))
        }
    }
}
