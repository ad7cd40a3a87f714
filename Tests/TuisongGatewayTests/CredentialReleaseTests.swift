import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Held pushes and credential changes: a credential added beside a running gateway (the CLI, a
/// process of its own) releases what was held for good, a refused one does not replace one
/// that works, and deleting a credential releases what was held for it.
@Suite(.serialized) struct CredentialReleaseTests {
    /// A look-alike of APNs and the Android services on loopback, a gateway not in local mode
    /// pointed at it (so an app without a credential has its pushes held), and the environment
    /// the CLI needs to run beside it on the same database.
    struct Setup {
        var setup: LookAlikeLocalSetup
        var mock: LookAlikeServer
        var gw: RunningGateway
        var cli: [String: String]

        func tuisong(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandRun {
            try TuisongCommand.run(arguments, in: gw.directory, environment: cli.merging(environment) { $1 })
        }
    }

    func withGateway(
        database: PluginStoreBackend = .sqlite, clock: any TuisongCore.Clock = SystemClock(),
        _ body: (Setup) async throws -> Void
    ) async throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.release")
        let mock = try LookAlikeServer(
            configuration: setup.configuration(host: "127.0.0.1", port: 0), certificate: setup.serverCertificate,
            key: setup.serverKey)
        try mock.start()
        defer { mock.shutdown() }
        let files = FileManager.default.temporaryDirectory.appending(path: "credential-release-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: files) }
        let caFile = files.appending(path: "ca.pem").path
        try setup.writeCAFile(to: caFile)
        let base = "https://127.0.0.1:\(mock.port)"
        let environment = [
            "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_APNS_PRODUCTION_URL": base, "TUISONG_APNS_CA_FILE": caFile,
            "TUISONG_TRANSPORTS_CA_FILE": caFile, "TUISONG_TRANSPORTS_HUAWEI_URL": base,
            "TUISONG_TRANSPORTS_HUAWEI_TOKEN_URL": base + "/oauth2/v3/token", "TUISONG_TRANSPORTS_HONOR_URL": base,
            "TUISONG_TRANSPORTS_HONOR_TOKEN_URL": base + "/auth/token",
        ]
        let gw = try await TestGateway.start(environment: environment, clock: clock, database: database)
        var cli = environment
        if database == .postgresql { cli["TUISONG_DATABASE_URL"] = gw.runtime.config.database.url }
        do {
            try await body(Setup(setup: setup, mock: mock, gw: gw, cli: cli))
        } catch {
            await gw.stop()
            throw error
        }
        await gw.stop()
    }

    func register(_ gw: RunningGateway, _ key: String, _ token: String, _ body: [String: Any]) async throws {
        let r = try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(token)", key: key, json: body)
        #expect(r.status == 201, "\(r.text)")
    }

    func push(_ gw: RunningGateway, _ key: String, tag: String) async throws -> Int64 {
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": tag], "notification": ["alert": "hi"]])
        #expect(push.status == 202, "\(push.text)")
        return Int64(try #require(push.jsonObject["message_id"] as? Int))
    }

    /// Issue #40 item 7: the CLI adds Huawei and APNs credentials beside a running gateway
    /// whose pushes to them are held `no_credential`. The CLI releases them, but the gateway
    /// still has "no credential" cached (its clock stands still, so the cache never expires: the
    /// race made certain) and holds them again; it then finds the credential in the store and
    /// releases them itself. On SQLite the CLI's change never reaches the gateway; on PostgreSQL
    /// it does, and the holds are released either way.
    @Test(arguments: PluginStoreBackend.allCases)
    func aCredentialTheCLIAddsBesideARunningGatewayReleasesItsHeldPushesForGood(_ database: PluginStoreBackend)
        async throws
    {
        guard FileManager.default.isExecutableFile(atPath: CrashRecoveryTests.binary) else {
            Issue.record("build the tuisong executable first (swift build)")
            return
        }
        // Ahead of the system's by a minute (APNs allows five of skew): the CLI's release,
        // stamped with the system's time, is due at once by the gateway's.
        let clock = ManualClock(Date().addingTimeInterval(60))
        try await withGateway(database: database, clock: clock) { s in
            let (appID, key) = try await s.gw.createApp(bundleID: "com.example.release")
            for n in 1...3 {
                try await register(s.gw, key, "huawei-\(n)", ["channel": "huawei", "tags": ["t"]])
                try await register(s.gw, key, testToken(n), ["environment": "production", "tags": ["t"]])
            }
            let id = try await push(s.gw, key, tag: "t")
            _ = try await DeliveryWait.until(s.gw.runtime.engine, id) { $0.counts.held == 6 }

            let huawei = s.setup.huaweiClient
            let addedHuawei = try s.tuisong(
                [
                    "credential", "add", "--app", "\(appID)", "--channel", "huawei", "--vendor-app-id", huawei.appID,
                    "--client-id", huawei.clientID, "--client-secret-env", "HUAWEI_SECRET",
                ], environment: ["HUAWEI_SECRET": huawei.clientSecret])
            #expect(addedHuawei.status == 0, "\(addedHuawei.errors)")
            #expect((addedHuawei.json["check"] as? [String: Any])?["result"] as? String == "accepted")
            let keyFile = s.gw.directory.appending(path: "AuthKey.p8")
            try s.setup.tokenKeyPEM.write(to: keyFile, atomically: true, encoding: .utf8)
            let addedKey = try s.tuisong([
                "credential", "add", "--app", "\(appID)", "--environment", "production", "--p8", keyFile.path,
                "--key-id", s.setup.keyID, "--team-id", s.setup.teamID,
            ])
            #expect(addedKey.status == 0, "\(addedKey.errors)")

            // The gateway's polls and caches wait on its clock: moved a poll at a time, as time
            // would pass, until the holds are sent.
            try await clock.advance(by: .milliseconds(250), until: "the held pushes sent", within: .seconds(60)) {
                try await s.gw.runtime.engine.status(messageID: id)?.counts.delivered == 6
            }
            let sent = try await DeliveryWait.completed(s.gw.runtime.engine, id)
            #expect(sent.counts.held == 0)
            #expect(sent.record.state == .completed)
        }
    }

    /// Issue #41 item 2: a wrong Honor secret added after a working one (a typo during a key
    /// rotation) is refused and kept failing, the command fails, and the next push still goes
    /// out with the working credential instead of being held `invalid_client`.
    @Test(arguments: PluginStoreBackend.allCases)
    func aRefusedCredentialDoesNotReplaceAWorkingOne(_ database: PluginStoreBackend) async throws {
        guard FileManager.default.isExecutableFile(atPath: CrashRecoveryTests.binary) else {
            Issue.record("build the tuisong executable first (swift build)")
            return
        }
        try await withGateway(database: database) { s in
            let (appID, key) = try await s.gw.createApp(bundleID: "com.example.rotate")
            try await register(s.gw, key, "honor-1", ["channel": "honor", "tags": ["h"]])
            let honor = s.setup.honorClient
            func add(secret: String) throws -> CommandRun {
                try s.tuisong(
                    [
                        "credential", "add", "--app", "\(appID)", "--channel", "honor", "--vendor-app-id", honor.appID,
                        "--client-id", honor.clientID, "--client-secret-env", "HONOR_SECRET",
                    ], environment: ["HONOR_SECRET": secret])
            }
            let working = try add(secret: honor.clientSecret)
            #expect(working.status == 0, "\(working.errors)")
            let workingID = try #require(working.json["id"] as? Int)
            let first = try await push(s.gw, key, tag: "h")
            #expect(try await s.gw.completed(messageID: first).counts.delivered == 1)

            let typo = try add(secret: honor.clientSecret + "-typo")
            #expect(typo.status != 0, "\(typo.output)")
            #expect(typo.json["status"] as? String == "failing")
            #expect(typo.errors.contains("credential \(workingID) stays in use"), "\(typo.errors)")

            let second = try await push(s.gw, key, tag: "h")
            let status = try await s.gw.completed(messageID: second)
            #expect(status.counts.delivered == 1, "\(status.counts)")
            #expect(status.counts.held == 0)
            let stored = try await s.gw.runtime.store.channelCredentials(appID: appID)
            #expect(stored.first { $0.id == workingID }?.status == "ok", "the working one is not marked failing")
        }
    }

    /// Issue #41 item 2: the admin API keeps a refused credential out of use and says which one
    /// stays in use; deleting a credential releases what was held for it (here a refused one
    /// that was the only one: released, the pushes are held again for want of any, with one
    /// more attempt), and adding a working one sends them.
    @Test func theAdminAPISaysARefusedOneIsNotUsedAndDeletingReleasesItsHolds() async throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.admin")
        let mock = try LookAlikeServer(
            configuration: setup.configuration(host: "127.0.0.1", port: 0), certificate: setup.serverCertificate,
            key: setup.serverKey)
        try mock.start()
        defer { mock.shutdown() }
        let files = FileManager.default.temporaryDirectory.appending(path: "credential-admin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: files) }
        let caFile = files.appending(path: "ca.pem").path
        try setup.writeCAFile(to: caFile)
        let base = "https://127.0.0.1:\(mock.port)"
        let (gw, client) = try await AdminTestClient.start(environment: [
            "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_APNS_PRODUCTION_URL": base, "TUISONG_APNS_CA_FILE": caFile,
            "TUISONG_TRANSPORTS_CA_FILE": caFile, "TUISONG_TRANSPORTS_HONOR_URL": base,
            "TUISONG_TRANSPORTS_HONOR_TOKEN_URL": base + "/auth/token",
        ])
        defer { Task { await gw.stop() } }
        try await client.login()
        let (appID, key) = try await gw.createApp(bundleID: "com.example.admin")
        try await register(gw, key, "honor-1", ["channel": "honor", "tags": ["h"]])
        let honor = setup.honorClient
        let path = "/apps/\(appID)/channel-credentials"
        func add(secret: String) async throws -> [String: Any] {
            let r = try await client.call(
                "POST", path,
                json: [
                    "channel": "honor", "vendor_app_id": honor.appID, "client_id": honor.clientID,
                    "client_secret": secret,
                ])
            #expect(r.status == 201, "\(r.text)")
            return r.jsonObject
        }

        // The only credential, refused: it serves (nothing else can), and pushes are held with its reason.
        let refused = try await add(secret: "wrong")
        let refusedID = try #require(refused["id"] as? Int)
        let reason = try #require((refused["check"] as? [String: Any])?["reason"] as? String)
        #expect((refused["check"] as? [String: Any])?["result"] as? String == "refused")
        #expect(refused["active"] as? Bool == true)
        let id = try await push(gw, key, tag: "h")
        _ = try await DeliveryWait.until(gw.runtime.engine, id) { $0.counts.held == 1 }
        // The status counts what the run holds before its flush commits: wait for the stored row.
        #expect(
            try await eventually {
                try await gw.runtime.store.pendingDeliveries(messageID: id).map(\.reason) == [reason]
            })

        // Deleted: what it held is released, tried again, and held for want of any credential.
        #expect(try await client.call("DELETE", "\(path)/\(refusedID)").status == 204)
        let heldAgain = try await firstValue(within: .seconds(30)) { () async throws -> Bool? in
            try await gw.runtime.store.pendingDeliveries(messageID: id).map(\.reason) == ["no_credential"] ? true : nil
        }
        #expect(heldAgain == true, "released by the delete, then held for want of any credential")
        let held = try await gw.runtime.store.deliveries(messageID: id, state: .held, cursor: nil, limit: 10).items
        #expect(held.map(\.attempts) == [2])

        // A working one sends it; a typo after it is refused, not used, and names the one in use.
        let working = try await add(secret: honor.clientSecret)
        let workingID = try #require(working["id"] as? Int)
        #expect(working["active"] as? Bool == true)
        // The add answers before the held delivery is released and sent (the status may still
        // count it held): wait for the send.
        let sent = try await DeliveryWait.until(gw.runtime.engine, id) { $0.counts.delivered == 1 }
        #expect(sent.counts.delivered == 1)
        let typo = try await add(secret: honor.clientSecret + "-typo")
        #expect((typo["check"] as? [String: Any])?["result"] as? String == "refused")
        #expect(typo["active"] as? Bool == false)
        #expect(typo["active_credential_id"] as? Int == workingID)
        let listed = try await client.call("GET", path).list("credentials")
        #expect(listed.map { $0["active"] as? Bool } == [true, false], "\(listed)")
    }
}
