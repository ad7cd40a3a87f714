import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Held pushes and credential changes: a credential added beside a running gateway (the CLI, a
/// process of its own) releases what was held for good.
@Suite(.serialized) struct CredentialReleaseTests {
    /// A look-alike of APNs and the Android services on loopback, a gateway not in local mode
    /// pointed at it (so an app without a credential has its pushes held), and the environment
    /// the CLI needs to run beside it on the same database.
    struct Setup {
        var setup: APNsMockLocalSetup
        var mock: APNsMockServer
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
        let setup = try APNsMockLocalSetup.generate(bundleID: "com.example.release")
        let mock = try APNsMockServer(
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

            let sent = try await DeliveryWait.until(s.gw.runtime.engine, id, timeout: .seconds(60)) {
                $0.counts.delivered == 6
            }
            #expect(sent.counts.held == 0)
            #expect(sent.record.state == .completed)
        }
    }
}
