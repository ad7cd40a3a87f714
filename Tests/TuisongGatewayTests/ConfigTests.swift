import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongHarmony

@testable import TuisongGateway

@Suite struct ConfigTests {
    /// The repository's config file and the embedded default must never drift apart: the file
    /// is the default with its paths written from `config/` (relative paths in a file are from
    /// its directory; without a file, from the current directory), so `make run` (the file)
    /// and a binary run from the repository root without it use the same `data/` and `web/`.
    @Test func embeddedDefaultMatchesFile() throws {
        let root = repositoryRoot()
        let file = try String(contentsOf: root.appending(path: "config/tuisong.json"), encoding: .utf8)
        #expect(
            file.replacingOccurrences(of: #""../"#, with: #"""#).trimmingCharacters(in: .newlines)
                == embeddedDefaultJSON.trimmingCharacters(in: .newlines))
        let fromFile = try GatewayConfig.load(path: root.appending(path: "config/tuisong.json").path, environment: [:])
        let embeddedFromRoot = try GatewayConfig.load(
            fileContents: Data(embeddedDefaultJSON.utf8), relativeTo: root.path, environment: [:])
        #expect(fromFile == embeddedFromRoot)
        #expect(fromFile.database.path == root.appending(path: "data/tuisong.db").path)
        #expect(fromFile.web.root == root.appending(path: "web").path)
        #expect(GatewayConfig.embeddedDefault.database.path == "data/tuisong.db")
    }

    /// #41 item 7: relative paths in a config file are from the file's directory (those it
    /// leaves at their defaults too), whatever the current directory; an environment variable's
    /// are from the current directory, as a shell's would be.
    @Test func relativePathsInAConfigFileAreFromItsDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appending(path: "etc"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appending(path: "etc/tuisong.json")
        // CA files are checked for being readable: one absolute, one beside the config.
        let absoluteCA = directory.appending(path: "absolute-ca.pem").path
        for ca in [absoluteCA, directory.appending(path: "etc/ca.pem").path] {
            #expect(FileManager.default.createFile(atPath: ca, contents: Data("pem".utf8)))
        }
        try Data(
            """
            {"database": {"path": "../var/tuisong.db"}, "security": {"master_key_file": "keys/master.key"},
             "apns": {"ca_file": "\(absoluteCA)"}, "transports": {"ca_file": "ca.pem"}}
            """.utf8
        ).write(to: file)
        let etc = directory.appending(path: "etc").path
        let config = try GatewayConfig.load(path: file.path, environment: [:])
        #expect(config.database.path == directory.appending(path: "var/tuisong.db").path)
        #expect(config.database.sqlitePath == directory.appending(path: "var/tuisong.db").path)
        #expect(config.database.directory == directory.appending(path: "var").path)
        #expect(config.security.masterKeyFile == etc + "/keys/master.key")
        #expect(config.security.initialAdminPasswordFile == etc + "/data/initial-admin-password")
        #expect(config.web.root == etc + "/web")
        #expect(config.transports.section(.apns)["ca_file"] == absoluteCA)
        #expect(config.transports.caFile == etc + "/ca.pem")
        #expect(config.transports.section(.apns)["production_url"] == "https://api.push.apple.com:443")
        // A transport's declared file key (APNs's, in its own `apns` section) is a path too.
        try Data(#"{"apns": {"ca_file": "ca.pem"}}"#.utf8).write(to: file)
        let relativeCA = try GatewayConfig.load(path: file.path, environment: [:])
        #expect(relativeCA.transports.section(.apns)["ca_file"] == etc + "/ca.pem")

        // database.url naming an SQLite file is a path too; a PostgreSQL URL is not.
        try Data(#"{"database": {"url": "sqlite:db/t.db"}}"#.utf8).write(to: file)
        let sqliteURL = try GatewayConfig.load(path: file.path, environment: [:])
        #expect(sqliteURL.database.sqlitePath == etc + "/db/t.db")
        try Data(#"{"database": {"url": "postgresql://tuisong@db/tuisong"}}"#.utf8).write(to: file)
        #expect(
            try GatewayConfig.load(path: file.path, environment: [:]).database.url == "postgresql://tuisong@db/tuisong")

        // The environment's own values stay as given; no file, no change.
        let overridden = try GatewayConfig.load(
            path: file.path, environment: ["TUISONG_DATABASE_URL": "", "TUISONG_DATABASE_PATH": "here.db"])
        #expect(overridden.database.path == "here.db")
        #expect(try GatewayConfig.load(path: nil, environment: [:]).database.path == "data/tuisong.db")
    }

    @Test func defaults() {
        let config = GatewayConfig.embeddedDefault
        #expect(config.listen.host == "127.0.0.1")
        #expect(config.listen.port == 8080)
        #expect(config.database.path == "data/tuisong.db")
        #expect(config.transports.section(.apns)["production_url"] == "https://api.push.apple.com:443")
        #expect(config.transports.section(.apns)["sandbox_url"] == "https://api.sandbox.push.apple.com:443")
        #expect(config.localMode.enabled)
        #expect(config.transports.section(.apns).integer("connections", default: 0) == 2)
    }

    @Test func environmentOverridesEveryKind() throws {
        let config = try GatewayConfig.load(
            fileContents: nil,
            environment: [
                "TUISONG_LISTEN_PORT": "9090",
                "TUISONG_APNS_PRODUCTION_URL": "https://apns.example.test:2197",
                "TUISONG_APNS_LOCAL_MOCK": "false",
                "TUISONG_DELIVERY_RETRY_BASE_SECONDS": "0.5",
                "TUISONG_PROVIDERS": "tencent,baidu",
            ])
        #expect(config.listen.port == 9090)
        #expect(config.transports.section(.apns)["production_url"] == "https://apns.example.test:2197")
        #expect(config.localMode.enabled == false)
        #expect(config.delivery.retryBaseSeconds == 0.5)
        #expect(config.providers == ["tencent", "baidu"])
    }

    @Test func fileOverlaysDefaultAndEnvironmentWins() throws {
        let file = Data(#"{"listen": {"port": 7000}, "database": {"path": "/tmp/x.db"}}"#.utf8)
        let config = try GatewayConfig.load(fileContents: file, environment: ["TUISONG_LISTEN_PORT": "7001"])
        #expect(config.listen.port == 7001)
        #expect(config.listen.host == "127.0.0.1")
        #expect(config.database.path == "/tmp/x.db")
    }

    @Test func environmentNames() {
        #expect(GatewayConfig.environmentName(forKeyPath: "listen.port") == "TUISONG_LISTEN_PORT")
        #expect(GatewayConfig.environmentName(forKeyPath: "apns.production_url") == "TUISONG_APNS_PRODUCTION_URL")
    }

    @Test(arguments: [
        (#"{"listen": {"port": 70000}}"#, [String: String](), "listen.port", "70000"),
        (#"{"listen": {"port": "80"}}"#, [:], "listen.port", "string"),
        (#"{"lisen": {}}"#, [:], "lisen", "unknown key"),
        (#"{"apns": {"production_url": "http://x"}}"#, [:], "apns.production_url", "http://x"),
        ("{}", ["TUISONG_LISTEN_PORT": "eighty"], "listen.port", "eighty"),
        ("{}", ["TUISONG_APNS_LOCAL_MOCK": "maybe"], "apns.local_mock", "maybe"),
        ("{}", ["TUISONG_LOG_LEVEL": "loud"], "log.level", "loud"),
        (#"{"apns": {"token_refresh_minutes": 10}}"#, [:], "apns.token_refresh_minutes", "10"),
        (#"{"apns": {"ca_file": "/nonexistent/ca.pem"}}"#, [:], "apns.ca_file", "/nonexistent/ca.pem"),
        ("{}", ["TUISONG_LOG_FORMAT": "xml"], "log.format", "xml"),
        (#"{"metrics": {"listen": "9464"}}"#, [:], "metrics.listen", "9464"),
        ("{}", ["TUISONG_METRICS_LISTEN": "::1:9464"], "metrics.listen", "::1:9464"),
        ("{}", ["TUISONG_METRICS_LISTEN": "127.0.0.1:99999"], "metrics.listen", "99999"),
        ("{}", ["TUISONG_METRICS_ENABLED": "sometimes"], "metrics.enabled", "sometimes"),
    ])
    func invalidValuesNameKeyAndValue(file: String, environment: [String: String], key: String, shown: String) {
        do {
            _ = try GatewayConfig.load(fileContents: Data(file.utf8), environment: environment)
            Issue.record("expected a ConfigError for \(key)")
        } catch {
            #expect(error.key == key)
            #expect(error.description.contains(key))
            #expect(error.description.contains(shown))
        }
    }

    @Test func metricsAndLogKeys() throws {
        let config = try GatewayConfig.load(
            fileContents: Data(#"{"log": {"format": "json"}, "metrics": {"listen": "[::1]:9464"}}"#.utf8),
            environment: ["TUISONG_METRICS_BEARER_TOKEN": "scrape-secret", "TUISONG_METRICS_ENABLED": "false"])
        #expect(config.log.format == "json")
        #expect(config.metrics == .init(enabled: false, listen: "[::1]:9464", bearerToken: "scrape-secret"))
        #expect(GatewayConfig.hostAndPort(config.metrics.listen)! == ("::1", 9464))
        #expect(GatewayConfig.hostAndPort("0.0.0.0:0")! == ("0.0.0.0", 0))
        #expect(!config.maskedJSON().contains("scrape-secret"))
        #expect(GatewayConfig.embeddedDefault.metrics == .init(enabled: true, listen: "", bearerToken: ""))
        #expect(GatewayConfig.embeddedDefault.log.format == "text")
    }

    @Test func malformedJSONIsReported() {
        #expect(throws: ConfigError.self) {
            try GatewayConfig.load(fileContents: Data("{not json".utf8), environment: [:])
        }
    }

    @Test func secretsAreMaskedAndNeverEchoed() throws {
        let key = Data(repeating: 7, count: 32).base64EncodedString()
        let config = try GatewayConfig.load(fileContents: nil, environment: ["TUISONG_SECURITY_MASTER_KEY": key])
        let json = config.maskedJSON()
        #expect(!json.contains(key))
        #expect(json.contains("********"))
        do {
            _ = try GatewayConfig.load(fileContents: nil, environment: ["TUISONG_SECURITY_MASTER_KEY": "short-secret"])
            Issue.record("a short master key must be refused")
        } catch {
            #expect(!error.description.contains("short-secret"))
        }
    }
}

/// The package root, found from this source file so tests run from any directory.
func repositoryRoot() -> URL {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appending(path: "Package.swift").path) { return url }
    }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
}

@Suite struct ISO8601Tests {
    @Test func formatsUTCWithMilliseconds() {
        #expect(ISO8601.string(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: 1_795_305_600.123)) == "2026-11-22T00:00:00.123Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: 951_782_400.5)) == "2000-02-29T00:00:00.500Z")
    }
}

@Suite struct NativePushRequestTests {
    func parse(_ json: String) throws -> PushJob {
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as! [String: Any]
        return try NativePushRequest.parse(object, appID: 1, now: Date())
    }

    @Test func numbersAndBooleansAreToldApart() throws {
        let job = try parse(
            #"{"audience": {"all": true}, "notification": {"alert": "x", "badge": 1, "mutable_content": true, "relevance_score": 1}}"#
        )
        #expect(job.content.badge == 1)
        #expect(job.content.apns.mutableContent)
        #expect(job.content.apns.relevanceScore == 1)
        // The keys only APNs takes are its entry of the content, in the API's own names.
        #expect(job.content.services == ["apns": ["mutable_content": true, "relevance_score": 1]])
        #expect(job.audience == .all)
        #expect(throws: NativeAPIError.self) { try parse(#"{"audience": {"all": 1}, "notification": {"alert": "x"}}"#) }
        #expect(throws: NativeAPIError.self) {
            try parse(#"{"audience": {"all": true}, "notification": {"badge": true}}"#)
        }
        #expect(throws: NativeAPIError.self) {
            try parse(#"{"audience": {"all": true}, "notification": {"badge": 1.5}}"#)
        }
    }

    /// The `notification` keys only APNs takes, read by its declaration
    /// (`APNsPushTransport.notificationFields`) into its entry of the content: the same entry and
    /// the same refusals as when the native API spelled them itself.
    @Test func theKeysOnlyAPNsTakesFillItsEntryAsDeclared() throws {
        let job = try parse(
            #"{"audience": {"all": true}, "notification": {"alert": {"body": "x", "launch_image": "L.png", "action_loc_key": "AK", "summary_arg": "Ann", "summary_arg_count": 2}, "sound": {"name": "alarm.caf"}, "mutable_content": 1, "target_content_id": "w-1", "interruption_level": "critical", "relevance_score": 0.5}}"#
        )
        #expect(job.content.body == "x" && job.content.sound == "alarm.caf")
        #expect(
            job.content.services == [
                "apns": [
                    "alert_as_object": true, "launch_image": "L.png", "action_loc_key": "AK", "summary_arg": "Ann",
                    "summary_arg_count": 2, "critical_volume": 1, "mutable_content": true, "target_content_id": "w-1",
                    "interruption_level": "critical", "relevance_score": 0.5,
                ]
            ])
        let quiet = try parse(
            #"{"audience": {"all": true}, "notification": {"alert": "x", "sound": {"name": "a.caf", "volume": 0.25}, "mutable_content": false}}"#
        )
        #expect(quiet.content.services == ["apns": ["critical_volume": 0.25]])
        let refusals: [(field: String, message: String)] = [
            (#""mutable_content": "yes""#, #""notification.mutable_content" must be true or false"#),
            (#""target_content_id": 1"#, #""target_content_id" must be a string"#),
            (
                #""interruption_level": "loud""#,
                #""notification.interruption_level" must be passive, active, time-sensitive or critical"#
            ),
            (#""relevance_score": true"#, #""notification.relevance_score" must be a number 0…1"#),
            (#""alert": {"launch_image": 1}"#, #""notification.alert.launch_image" must be a string"#),
            (#""alert": {"summary_arg_count": 1.5}"#, #""notification.alert.summary_arg_count" must be an integer"#),
            (#""alert": {"tone": "x"}"#, #"unknown field "notification.alert.tone""#),
            (#""tone": "x""#, #"unknown field "notification.tone""#),
        ]
        for refusal in refusals {
            #expect {
                try parse(#"{"audience": {"all": true}, "notification": {"# + refusal.field + "}}")
            } throws: { error in
                let refused = error as? NativeAPIError
                return refused?.code == "invalid_request" && refused?.message == refusal.message
            }
        }
    }

    @Test func backgroundOnlyDefaultsToBackgroundPushAtPriorityFive() throws {
        let job = try parse(
            #"{"audience": {"tag": "t"}, "notification": {"content_available": true, "custom": {"sync": 1}}}"#)
        #expect(job.options.pushType == .background)
        #expect(job.options.priority == .powerAware)
    }

    /// `android.intent` is where a tap leads: the content's click, the one place a message says
    /// it (#29); the rest stays the message's Android settings.
    @Test func theAndroidIntentIsTheContentsClick() throws {
        let job = try parse(
            #"{"audience": {"all": true}, "notification": {"alert": "x"}, "android": {"sound": "ding", "intent": "intent://a#Intent;end"}}"#
        )
        #expect(job.content.click == .intent("intent://a#Intent;end"))
        #expect(job.options.android == AndroidOptions(sound: "ding"))
        #expect(job.options.android?.legacyClick == nil)
        let intentOnly = try parse(
            #"{"audience": {"all": true}, "notification": {"alert": "x"}, "android": {"intent": "intent://a#Intent;end"}}"#
        )
        #expect(intentOnly.options.android == nil && intentOnly.content.click == .intent("intent://a#Intent;end"))
    }

    /// The `harmony` object: HarmonyOS NEXT's category, click, badge and test settings (#31),
    /// read through the rule the `harmony` transport declares into its entry of the message's
    /// per-service options (#29), in the same keys; the wire is as before.
    @Test func theHarmonyObjectIsReadAndChecked() throws {
        let job = try parse(
            #"{"audience": {"all": true}, "notification": {"alert": "x", "badge": 2}, "harmony": {"category": "IM", "click_action": "ChatAbility", "badge_increment": true, "test_message": false}}"#
        )
        #expect(
            job.options.services == [
                "harmony": ["category": "IM", "click_action": "ChatAbility", "badge_increment": true]
            ])
        #expect(
            HarmonyOptions(job.options.services["harmony"])
                == HarmonyOptions(category: "IM", clickAction: "ChatAbility", badgeIncrement: true))
        #expect(try parse(#"{"audience": {"all": true}, "notification": {"alert": "x"}}"#).options.services.isEmpty)
        #expect(
            try parse(#"{"audience": {"all": true}, "notification": {"alert": "x"}, "harmony": {}}"#).options.services
                .isEmpty)
        // One sentence with the field's path, as before.
        func refusal(_ harmony: String) -> String? {
            do {
                _ = try parse(
                    #"{"audience": {"all": true}, "notification": {"alert": "x"}, "harmony": "# + harmony + "}")
                return nil
            } catch let error as NativeAPIError {
                return error.code + ": " + error.message
            } catch {
                return "\(error)"
            }
        }
        #expect(
            refusal(#"{"category": "CHAT"}"#)?.hasPrefix(#"invalid_request: "harmony.category" must be one of"#) == true
        )
        #expect(refusal(#"{"test_message": 1}"#) == #"invalid_request: "harmony.test_message" must be true or false"#)
        #expect(refusal(#"{"sound": "x"}"#) == #"invalid_request: unknown field "harmony.sound""#)
        #expect(refusal(#"[]"#) == #"invalid_request: "harmony" must be an object"#)
        #expect(
            refusal(#"{"notify_id": "7"}"#)
                == #"invalid_request: "harmony.notify_id" must be an integer from -1 to 2147483647"#)
        #expect(
            try parse(#"{"audience": {"all": true}, "notification": {"alert": "x"}, "harmony": {"notify_id": 7}}"#)
                .options.services == ["harmony": ["notify_id": 7]])
        for bad in [
            #"{"category": "CHAT"}"#, #"{"test_message": 1}"#, #"{"image": "http://x/a.png"}"#, #"{"sound": "x"}"#,
            #"[]"#,
        ] {
            #expect(throws: NativeAPIError.self, "\(bad)") {
                try parse(#"{"audience": {"all": true}, "notification": {"alert": "x"}, "harmony": "# + bad + "}")
            }
        }
    }
}
