import Foundation
import Testing
import TuisongCore
import TuisongHTTP
import TuisongPluginTestKit
import TuisongStore

@testable import BaiduProvider

/// A database written by main at 46ec891, when Baidu's tables and queries were part of the
/// core store (`Tests/Fixtures/main-46ec891/README.md`), opened by this build: it migrates
/// once and serves its Baidu data through Baidu's own API. The fixture is a SQLite file (an
/// upgrade of an old SQLite gateway's database, SQLite's alone); a fresh database is either.
@Suite struct FixtureDatabaseTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "Fixtures/main-46ec891")
    static let apiKey = "FixtureAK1"
    static let secretKey = "FixtureSecretKey0123456789ABCDEF"
    static let channels = ["3982479587885260695", "5652258211787619968"]
    static let unboundChannel = "8584544008010935413"
    /// A moment after the fixture was written (its kept message lives 7 days).
    static let written = Date(timeIntervalSince1970: 1_795_388_200)

    @Test("The old database opens, migrates once (bindings copied before the core drops them), keeps its data")
    func migratesOnce() async throws {
        let clock = ManualClock(Self.written)
        let temporary = try TemporaryStore(
            copying: Self.directory.appending(path: "tuisong.db"), providers: [BaiduProvider.self], clock: clock)
        defer { temporary.remove() }
        let core = SQLiteStore.migrationNames()
        let baidu = BaiduProvider.migrations.map { "baidu:\($0.identifier)" }
        // Baidu's steps up to the copy of its bindings run before the core drops its columns.
        let drop = try #require(core.firstIndex(of: "v8-vendor-columns-leave-the-core"))
        let copy = try #require(baidu.firstIndex(of: "baidu:3-bindings-from-core-devices"))
        let expected = core[..<drop] + baidu[...copy] + core[drop...] + baidu[(copy + 1)...]
        #expect(temporary.store.migrationNames == Array(expected))
        #expect(try await temporary.store.appliedMigrations() == Array(expected))

        // The bindings of the core's old columns are Baidu's now, and the columns are gone.
        let bindings = try await temporary.store.sharedDatabase.read { db in
            try db.query("SELECT device_id, user_id, channel_id FROM baidu_bindings ORDER BY device_id").map {
                [$0[0].int.map(String.init), $0[1].string, $0[2].string]
            }
        }
        #expect(
            bindings == [
                ["1", "2877710625061467132", Self.channels[0]], ["2", "4067410889017549063", Self.channels[1]],
            ])
        let columns = try await temporary.store.sharedDatabase.read { db in
            try db.query("SELECT name FROM pragma_table_info('devices')").compactMap { $0[0].string }
        }
        #expect(!columns.contains { $0.hasPrefix("baidu_") } && columns.contains("token"))
        try temporary.store.close()

        // Opened again, twice, as a restarted gateway would: nothing is applied again.
        for _ in 0..<2 {
            let reopened = try temporary.reopen()
            #expect(try await reopened.appliedMigrations() == Array(expected))
            let recorded = try await reopened.sharedDatabase.read { db in
                try db.query("SELECT identifier FROM grdb_migrations ORDER BY rowid").compactMap { $0[0].string }
            }
            #expect(recorded == Array(expected))
            let apps = try await reopened.apps()
            #expect(apps.map(\.name) == ["fixture"])
            try reopened.close()
        }
    }

    @Test("Its Baidu data is served: apikey, signed queries of bindings, tags, kept messages and timers")
    func servesBaiduData() async throws {
        let clock = ManualClock(Self.written)
        let temporary = try TemporaryStore(
            copying: Self.directory.appending(path: "tuisong.db"), providers: [BaiduProvider.self], clock: clock)
        defer { temporary.remove() }
        let sealer = try TestSealer(keyFile: Self.directory.appending(path: "master.key"))
        let gateway = RecordingGateway(store: temporary.store, clock: clock)
        let provider = try BaiduProvider(context: temporary.context(gateway: gateway, secrets: sealer))
        let router = TestRouter()
        provider.register(on: router.router)

        // The secret key sealed by the old binary opens under its master key.
        let app = try #require(try await provider.baiduStore.app(apiKey: Self.apiKey))
        #expect(try BaiduKeys.of(app, sealer: sealer)?.secretKey == Self.secretKey)

        func call(_ path: String, _ parameters: [String: String]) async throws -> [String: Any] {
            var parameters = parameters
            parameters["apikey"] = Self.apiKey
            parameters["timestamp"] = String(Int(clock.now.timeIntervalSince1970))
            let url = "http://localhost" + path
            let unsigned = parameters
            parameters["sign"] = try await offPool {
                try signWithPython(
                    method: "POST", url: url, parameters: unsigned, secret: Self.secretKey, style: .python)
            }
            let response = try await router.send(
                .POST, path, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Data(formEncode(parameters).utf8))
            #expect(response.status == 200, "\(path): \(response.text)")
            return response.jsonObject["response_params"] as? [String: Any] ?? [:]
        }

        // Bindings: the two devices still bound, the unbound one not.
        let bindings = try await call(
            "/rest/2.0/channel/channel", ["method": "query_bindlist", "user_id": "2877710625061467132"])
        let bound = bindings["binds"] as? [[String: Any]] ?? []
        #expect(bound.compactMap { ($0["channel_id"] as? Int).map(String.init) } == [Self.channels[0]])
        let device = try #require(try await provider.baiduStore.device(appID: app.id, channelID: Self.channels[1]))
        #expect(device.token == String(repeating: "cd", count: 32))
        #expect(try await provider.baiduStore.device(appID: app.id, channelID: Self.unboundChannel) == nil)

        // Tags: vip on the first device, news on both.
        let tags = try await call("/rest/3.0/app/query_tags", [:])
        let names = (tags["result"] as? [[String: Any]] ?? []).compactMap { $0["tag"] as? String }
        #expect(names == ["vip", "news"])
        let news = try await call("/rest/3.0/tag/device_num", ["tag": "news"])
        #expect(news["device_num"] as? Int == 2)
        let ofFirst = try await call(
            "/rest/2.0/channel/channel", ["method": "query_user_tags", "user_id": "2877710625061467132"])
        #expect((ofFirst["tags"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } == ["news", "vip"])

        // The kept message, for fetch_msg.
        let kept = try await call(
            "/rest/2.0/channel/channel", ["method": "fetch_msg", "user_id": "2877710625061467132"])
        #expect(kept["total_num"] as? Int == 1)
        let messages = kept["messages"] as? [[String: Any]] ?? []
        #expect(messages.first?["message"] as? String == #"{"aps": {"alert": "kept for fetch_msg"}}"#)

        // The timer, and its topic.
        let timers = try await call("/rest/3.0/timer/query_list", [:])
        #expect(timers["total_num"] as? Int == 1)
        let topics = try await call("/rest/3.0/topic/query_list", [:])
        #expect(
            (topics["result"] as? [[String: Any]] ?? []).compactMap { $0["topic_id"] as? String } == ["fixture_topic"])

        // Binding statistics: three binds and one unbind on the day the fixture was written.
        let statistics = try await call("/rest/3.0/report/statistic_device", [:])
        let days = (statistics["result"] as? [String: Any] ?? [:]).values.compactMap { $0 as? [String: Any] }
        #expect(days.reduce(0) { $0 + ($1["new_term"] as? Int ?? 0) } == 3)
        #expect(days.reduce(0) { $0 + ($1["del_term"] as? Int ?? 0) } == 1)

        // And it keeps working: a new bind on the old tables.
        let token = String(repeating: "ef", count: 32)
        let rebound = try await router.send(
            .POST, "/baidu/device/bind",
            json: ["apikey": Self.apiKey, "device_token": token, "push_mode": "development"])
        #expect(rebound.status == 200, "\(rebound.text)")
        let params = rebound.jsonObject["response_params"] as? [String: Any] ?? [:]
        #expect(params["channel_id"] as? String == Self.unboundChannel)
    }

    @Test(
        "A fresh database: Baidu's bindings live in its table and go with their device",
        arguments: PluginStoreBackend.allCases)
    func freshDatabase(_ backend: PluginStoreBackend) async throws {
        let clock = ManualClock(Self.written)
        let temporary = try PluginTestStore(backend, providers: [BaiduProvider.self], clock: clock)
        defer { temporary.remove() }
        let migrations =
            (temporary.store as? SQLiteStore)?.migrationNames ?? (temporary.store as? PostgresStore)?.migrationNames
        #expect(try await temporary.store.appliedMigrations() == migrations)
        #expect(migrations?.contains { $0.hasPrefix("baidu:") } == true, "\(migrations ?? [])")
        let gateway = RecordingGateway(store: temporary.store, clock: clock)
        let provider = try BaiduProvider(context: temporary.context(gateway: gateway, secrets: try TestSealer()))
        let app = try await temporary.store.createApp(name: "fresh", bundleID: "com.example.fresh", apiKeyHash: "h")
        let token = DeviceToken(String(repeating: "12", count: 32))!
        let (bound, created) = try await provider.baiduStore.bindDevice(
            appID: app.id, token: token, environment: .sandbox, userID: "7", channelID: "77", channel: .apns)
        #expect(created && bound.userID == "7" && bound.channelID == "77" && bound.token == token.hex)
        #expect(try await provider.baiduStore.device(appID: app.id, token: token)?.channelID == "77")
        #expect(
            try await provider.deviceColumnValues(appID: app.id, deviceIDs: [bound.id]) == [
                bound.id: ["channel_id": "77", "user_id": "7"]
            ])

        // The core deletes the device (its own API, not Baidu's unbind): the binding goes too.
        #expect(try await temporary.store.deleteDevice(appID: app.id, token: token))
        #expect(try await provider.baiduStore.device(appID: app.id, channelID: "77") == nil)
        let left = try await temporary.store.sharedDatabase.read { db in
            try db.queryOne("SELECT count(*) FROM baidu_bindings")?[0].int
        }
        #expect(left == 0)
    }
}
