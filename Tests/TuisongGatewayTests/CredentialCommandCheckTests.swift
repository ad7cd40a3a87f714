import Foundation
import Testing
import TuisongLookAlikes

/// `tuisong credential add` for an Android service signs in once with the service the config
/// names and prints its answer: a wrong Honor secret is saved, marked failing with the
/// look-alike's reason, and the command fails; the right one is accepted; a wrong one added
/// after it fails and leaves the working one in use.
@Suite struct CredentialCommandCheckTests {
    typealias Run = CommandRun

    func tuisong(_ arguments: [String], in directory: URL, environment: [String: String]) throws -> Run {
        try TuisongCommand.run(arguments, in: directory, environment: environment)
    }

    /// The look-alike on loopback and a directory of the command's own holding its CA file;
    /// an issue is recorded instead before the executable is built.
    func withLookAlike(
        _ body: (_ setup: LookAlikeLocalSetup, _ mock: LookAlikeServer, _ directory: URL, _ caFile: String) throws ->
            Void
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: CrashRecoveryTests.binary) else {
            Issue.record("build the tuisong executable first (swift build)")
            return
        }
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.cli")
        let mock = try LookAlikeServer(
            configuration: setup.configuration(host: "127.0.0.1", port: 0), certificate: setup.serverCertificate,
            key: setup.serverKey)
        try mock.start()
        defer { mock.shutdown() }
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-cli-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appending(path: "ca.pem").path
        try setup.writeCAFile(to: caFile)
        try body(setup, mock, directory, caFile)
    }

    /// Issue #40 item 10 and #41 item 5 on the CLI: a `.p8` key added without an environment
    /// serves both, and adding what was added before adds nothing and prints that credential.
    @Test func addingTheSameCredentialAgainAddsNothing() async throws {
        try withLookAlike { setup, mock, directory, caFile in
            let base = "https://127.0.0.1:\(mock.port)"
            let honor = setup.honorClient
            let environment = [
                "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_APNS_PRODUCTION_URL": base,
                "TUISONG_APNS_SANDBOX_URL": base, "TUISONG_APNS_CA_FILE": caFile, "TUISONG_TRANSPORTS_CA_FILE": caFile,
                "TUISONG_TRANSPORTS_HONOR_URL": base, "TUISONG_TRANSPORTS_HONOR_TOKEN_URL": base + "/auth/token",
                "HONOR_SECRET": honor.clientSecret,
            ]
            #expect(try tuisong(["migrate"], in: directory, environment: environment).status == 0)
            let created = try tuisong(
                ["app", "create", "--name", "cli", "--bundle-id", "com.example.cli"], in: directory,
                environment: environment)
            #expect(created.status == 0, "\(created.errors)")
            let keyFile = directory.appending(path: "AuthKey.p8")
            try setup.tokenKeyPEM.write(to: keyFile, atomically: true, encoding: .utf8)
            func addKey() throws -> Run {
                try tuisong(
                    [
                        "credential", "add", "--app", "1", "--p8", keyFile.path, "--key-id", setup.keyID, "--team-id",
                        setup.teamID,
                    ], in: directory, environment: environment)
            }
            func addHonor() throws -> Run {
                try tuisong(
                    [
                        "credential", "add", "--app", "1", "--channel", "honor", "--vendor-app-id", honor.appID,
                        "--client-id", honor.clientID, "--client-secret-env", "HONOR_SECRET",
                    ], in: directory, environment: environment)
            }
            let key = try addKey()
            #expect(key.status == 0, "\(key.errors)")
            #expect(key.json["environment"] as? String == "both")
            #expect(key.json["existing"] as? Bool == false)
            #expect((key.json["check"] as? [String: Any])?["result"] as? String == "accepted")
            let keyAgain = try addKey()
            #expect(keyAgain.status == 0, "\(keyAgain.errors)")
            #expect(keyAgain.json["existing"] as? Bool == true)
            #expect(keyAgain.json["id"] as? Int == key.json["id"] as? Int)

            let client = try addHonor()
            #expect(client.status == 0, "\(client.errors)")
            let clientAgain = try addHonor()
            #expect(clientAgain.status == 0, "\(clientAgain.errors)")
            #expect(clientAgain.json["existing"] as? Bool == true)
            #expect(clientAgain.json["id"] as? Int == client.json["id"] as? Int)

            let listed = try tuisong(["credential", "list", "--app", "1"], in: directory, environment: environment)
            #expect(listed.status == 0, "\(listed.errors)")
            #expect(listed.output.components(separatedBy: "\"id\"").count - 1 == 2, "\(listed.output)")
        }
    }

    @Test func addingAnHonorClientSignsInOnceAndReportsTheAnswer() async throws {
        try withLookAlike { setup, mock, directory, caFile in
            let base = "https://127.0.0.1:\(mock.port)"
            let honor = setup.honorClient
            var environment = [
                "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_TRANSPORTS_CA_FILE": caFile,
                "TUISONG_TRANSPORTS_HONOR_URL": base, "TUISONG_TRANSPORTS_HONOR_TOKEN_URL": base + "/auth/token",
            ]
            #expect(try tuisong(["migrate"], in: directory, environment: environment).status == 0)
            let created = try tuisong(
                ["app", "create", "--name", "cli", "--bundle-id", "com.example.cli"], in: directory,
                environment: environment)
            #expect(created.status == 0, "\(created.errors)")
            func add() throws -> Run {
                try tuisong(
                    [
                        "credential", "add", "--app", "1", "--channel", "honor", "--vendor-app-id", honor.appID,
                        "--client-id", honor.clientID, "--client-secret-env", "HONOR_SECRET",
                    ], in: directory, environment: environment)
            }

            environment["HONOR_SECRET"] = honor.clientSecret + "-wrong"
            let wrong = try add()
            #expect(wrong.status != 0, "a refusal fails the command: \(wrong.output)")
            let check = try #require(wrong.json["check"] as? [String: Any], "\(wrong.output)")
            #expect(check["result"] as? String == "refused")
            let reason = try #require(check["reason"] as? String)
            #expect(wrong.json["status"] as? String == "failing", "saved either way")
            #expect(wrong.json["status_reason"] as? String == reason)
            #expect(wrong.errors.contains("refused the credential (\(reason))"), "\(wrong.errors)")
            #expect(wrong.errors.contains("no working credential"), "\(wrong.errors)")
            #expect(!wrong.output.contains(honor.clientSecret) && !wrong.errors.contains(honor.clientSecret))

            environment["HONOR_SECRET"] = honor.clientSecret
            let right = try add()
            #expect(right.status == 0, "\(right.errors)")
            #expect((right.json["check"] as? [String: Any])?["result"] as? String == "accepted")
            #expect(right.json["status"] as? String == "ok")
            let rightID = try #require(right.json["id"] as? Int)

            // A typo during a key rotation: refused, saved, and the working credential stays in use.
            environment["HONOR_SECRET"] = honor.clientSecret + "-typo"
            let typo = try add()
            #expect(typo.status != 0)
            #expect(typo.errors.contains("credential \(rightID) stays in use"), "\(typo.errors)")
            let typoID = try #require(typo.json["id"] as? Int)
            let listed = try tuisong(["credential", "list", "--app", "1"], in: directory, environment: environment)
            let credentials = try #require(
                (try? JSONSerialization.jsonObject(with: Data(listed.output.utf8))) as? [[String: Any]],
                "\(listed.output)")
            let active = Dictionary(
                uniqueKeysWithValues: credentials.filter { $0["channel"] as? String == "honor" }.compactMap { c in
                    (c["id"] as? Int).map { ($0, c["active"] as? Bool) }
                })
            #expect(active[rightID] == true && active[typoID] == false, "\(listed.output)")
        }
    }

    @Test func addingAP8KeyProbesAPNsOnce() async throws {
        try withLookAlike { setup, mock, directory, caFile in
            let keyFile = directory.appending(path: "AuthKey.p8")
            try setup.tokenKeyPEM.write(to: keyFile, atomically: true, encoding: .utf8)
            let environment = [
                "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_APNS_CA_FILE": caFile,
                "TUISONG_APNS_PRODUCTION_URL": "https://127.0.0.1:\(mock.port)",
            ]
            #expect(try tuisong(["migrate"], in: directory, environment: environment).status == 0)
            #expect(
                try tuisong(
                    ["app", "create", "--name", "cli", "--bundle-id", "com.example.cli"], in: directory,
                    environment: environment
                ).status == 0)
            func add(team: String) throws -> Run {
                try tuisong(
                    [
                        "credential", "add", "--app", "1", "--environment", "production", "--p8", keyFile.path,
                        "--key-id", setup.keyID, "--team-id", team,
                    ], in: directory, environment: environment)
            }
            let wrong = try add(team: "WRONGTEAM1")
            #expect(wrong.status != 0, "a refusal fails the command: \(wrong.output)")
            #expect(wrong.errors.contains("APNs refused the credential (InvalidProviderToken)"), "\(wrong.errors)")
            #expect((wrong.json["check"] as? [String: Any])?["result"] as? String == "refused", "\(wrong.output)")
            #expect(wrong.json["status"] as? String == "failing")
            #expect(wrong.json["status_reason"] as? String == "InvalidProviderToken")
            let right = try add(team: setup.teamID)
            #expect(right.status == 0, "\(right.errors)")
            #expect((right.json["check"] as? [String: Any])?["result"] as? String == "accepted", "\(right.output)")
            #expect(right.json["status"] as? String == "ok")
            let rightID = try #require(right.json["id"] as? Int)
            let typo = try add(team: "WRONGTEAM2")
            #expect(typo.status != 0)
            #expect(typo.errors.contains("credential \(rightID) stays in use"), "\(typo.errors)")
            #expect(mock.receivedNotifications().isEmpty, "the probe reaches no device")
        }
    }
}
