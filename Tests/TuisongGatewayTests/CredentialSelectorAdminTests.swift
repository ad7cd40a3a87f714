import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

/// Where operators set a credential's selector: the admin API (the console's form) and the CLI.
@Suite(.serialized) struct CredentialSelectorAdminTests {
    static let p8File = Data("-----BEGIN PRIVATE KEY-----\nMIG...\n-----END PRIVATE KEY-----\n".utf8)
        .base64EncodedString()

    func parse(_ extra: [String: Any]) throws -> AdminCredentialUpload {
        var body: [String: Any] = [
            "kind": "p8", "environment": "production", "file": Self.p8File, "key_id": "ABC123DEFG",
            "team_id": "TEAM123456",
        ]
        body.merge(extra) { _, new in new }
        return try AdminCredentialsAPI.upload(
            appID: 1, AdminBody(object: body), form: TransportRegistry.standard.uploadedFiles?.uploadedCredentialForm)
    }

    @Test func theUploadTakesASelectorAsTextOrABusiIdNumber() throws {
        #expect(try parse([:]).selector == nil)
        #expect(try parse(["selector": "  ios-prod "]).selector == "ios-prod")
        #expect(try parse(["selector": 1001]).selector == "1001")
        #expect(try parse(["selector": "  "]).selector == nil, "blank = the default credential")
        for bad in [String(repeating: "x", count: 129), "a\u{0007}b"] {
            #expect(throws: AdminError.self) { try parse(["selector": bad]) }
            #expect((try? parse(["selector": bad])) == nil)
            do {
                _ = try parse(["selector": bad])
            } catch let error as AdminError {
                #expect(error.field == "selector")
            }
        }
    }

    @Test func theConsoleUploadsASelectorCredentialThatReleasesHeldDevices() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let (appID, _) = try await gw.createApp()
        let device = token(1, prefix: "5e")
        _ = try await gw.runtime.store.bindDevice(
            appID: appID, account: "alice",
            registration: DeviceRegistration(token: DeviceToken(device)!, environment: .production, channel: .apns),
            credentialSelector: "1001")
        let message = try await gw.runtime.engine.submit(
            PushJob(
                appID: appID, vendor: "native", audience: .accounts(["alice"]),
                content: PushContent(body: "x"), options: PushOptions()))
        _ = try await DeliveryWait.until(gw.runtime.engine, message.id, timeout: .seconds(20)) { $0.counts.held == 1 }

        let pem = try PrivateKey.generateP256().pkcs8PEM()
        let uploaded = try await client.call(
            "POST", "/apps/\(appID)/credentials",
            json: [
                "kind": "p8", "environment": "production", "file": Data(pem.utf8).base64EncodedString(),
                "key_id": "CONSOLE001", "team_id": "CONSOLE001", "selector": "1001",
            ])
        #expect(uploaded.status == 201)
        #expect(uploaded.jsonObject["selector"] as? String == "1001")
        let listed = try await client.call("GET", "/apps/\(appID)/credentials")
        #expect(listed.list("credentials").map { $0["selector"] as? String } == ["1001"])

        _ = try await DeliveryWait.until(gw.runtime.engine, message.id, timeout: .seconds(20)) {
            $0.counts.delivered == 1
        }
        #expect(try #require(gw.runtime.localMock).receivedNotifications().map(\.keyID) == ["CONSOLE001"])
    }

    @Test func theCLIStoresABusiIdOrANotifierName() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let env = [
            "TUISONG_DATABASE_PATH": directory.appending(path: "db.sqlite").path,
            "TUISONG_SECURITY_MASTER_KEY_FILE": directory.appending(path: "master.key").path,
            "TUISONG_SECURITY_INITIAL_ADMIN_PASSWORD_FILE": directory.appending(path: "pw").path,
            "TUISONG_LOG_LEVEL": "warning",
        ]
        let cli = CrashRecoveryTests()
        _ = try cli.run(["migrate"], env)
        let created = try cli.run(["app", "create", "--name", "im", "--bundle-id", "com.example.im"], env)
        let appID = try #require(
            (try JSONSerialization.jsonObject(with: Data(created.utf8)) as? [String: Any])?["id"] as? Int)
        let keyFile = directory.appending(path: "key.p8")
        try PrivateKey.generateP256().pkcs8PEM().write(to: keyFile, atomically: true, encoding: .utf8)
        func add(_ extra: [String]) throws -> [String: Any] {
            let output = try cli.run(
                [
                    "credential", "add", "--app", "\(appID)", "--environment", "production", "--p8", keyFile.path,
                    "--key-id", "CLIKEY0001", "--team-id", "CLITEAM001",
                ] + extra, env)
            return try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] ?? [:]
        }
        #expect(try add(["--busi-id", "1001"])["selector"] as? String == "1001")
        #expect(try add(["--notifier-name", "ios-prod"])["selector"] as? String == "ios-prod")
        #expect(try add([])["selector"] == nil)
        #expect(try add(["--selector", "any-1"])["selector"] as? String == "any-1")
        #expect(try add(["--busi-id=42"])["selector"] as? String == "42")
        let listed = try cli.run(["credential", "list", "--app", "\(appID)"], env)
        let selectors = (try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]] ?? []).map {
            $0["selector"] as? String
        }
        #expect(selectors == ["1001", "ios-prod", nil, "any-1", "42"])

        /// Runs `credential add` expecting a refusal; its standard error.
        func refused(_ extra: [String]) throws -> String {
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: CrashRecoveryTests.binary)
            process.arguments =
                [
                    "credential", "add", "--app", "\(appID)", "--environment", "production", "--p8", keyFile.path,
                    "--key-id", "CLIKEY0001", "--team-id", "CLITEAM001",
                ] + extra
            process.environment = ProcessInfo.processInfo.environment.merging(env) { _, new in new }
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = Pipe()
            try process.run()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus != 0, "\(extra) was accepted")
            return message
        }
        // Two selectors at once, a busiId that is not one, an unknown flag: refused, nothing stored.
        #expect(try refused(["--busi-id", "7", "--notifier-name", "x"]).contains("--busi-id or --notifier-name"))
        #expect(try refused(["--selector", "a", "--busi-id", "7"]).contains("at most one"))
        #expect(try refused(["--busi-id", "seven"]).contains("--busi-id must be a number"))
        #expect(try refused(["--busi-id", "4294967296"]).contains("--busi-id must be a number"))
        #expect(try refused(["--bussi-id", "7"]).contains("unknown option --bussi-id"))
        let after = try cli.run(["credential", "list", "--app", "\(appID)"], env)
        #expect((try JSONSerialization.jsonObject(with: Data(after.utf8)) as? [[String: Any]])?.count == 5)
    }
}
