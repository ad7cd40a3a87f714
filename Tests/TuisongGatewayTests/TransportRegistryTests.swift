import Foundation
import Testing
import TuisongCore
import TuisongDelivery
import TuisongEcho
import TuisongGatewayTestKit
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

/// The transport registry: every channel's traits, config section, credential form and factory
/// come from its declaration, so a transport is a folder, a name in Package.swift's list and a
/// registry line. `EchoTransport` (Tests/Transports/Echo) is the proof: nothing else of the
/// gateway names it.
@Suite struct TransportRegistryTests {
    /// APNs is made by the registry like every transport: no file of the gateway but the
    /// registry's imports a transport's module or the APNs engine (issue #44).
    @Test func theGatewayImportsNoTransportButInItsRegistry() throws {
        let gateway = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/TuisongGateway")
        var importers: [String] = []
        let files = try #require(FileManager.default.enumerator(atPath: gateway.path))
        for case let file as String in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: gateway.appendingPathComponent(file), encoding: .utf8)
            let imports = text.split(separator: "\n").filter { $0.hasPrefix("import Tuisong") }.map {
                String($0.dropFirst("import ".count))
            }
            // A transport's module is `Tuisong<Name>` over `Sources/Transports/<Name>`; the APNs
            // engine is `TuisongAPNs`, its transport `TuisongAPNsTransport`.
            if imports.contains(where: { $0.hasPrefix("TuisongAPNs") || Self.transportModules.contains($0) }) {
                importers.append(file)
            }
        }
        #expect(importers == ["Runtime/TransportRegistry.swift"])
    }

    static let transportModules: Set<String> = [
        "TuisongFCM", "TuisongHuawei", "TuisongHonor", "TuisongXiaomi", "TuisongOPPO", "TuisongVivo", "TuisongHarmony",
    ]

    @Test func apnsIsMadeByItsDeclarationWithTheHooksTheGatewayAsks() async throws {
        let gw = try await RunningGateway.start()
        defer { Task { await gw.stop() } }
        let apns = try #require(gw.runtime.transports.members[.apns])
        #expect(apns.uploadedCredentials?.holdsPerEnvironment == true)
        #expect(
            apns.gauges.map(\.name) == [
                "tuisong_apns_connections", "tuisong_apns_streams", "tuisong_apns_waiting_requests",
            ])
        // Its HTTP-client figures are none: it has its own pools, so the per-channel gauges skip it.
        #expect(!gw.runtime.transports.statistics.map(\.channel).contains(.apns))
        #expect(gw.runtime.transports.order.first == .apns)
    }

    /// What the gateway once spelled for APNs, APNs now declares: its `apns.*` section (read
    /// like any transport's, `TUISONG_APNS_*` overriding it), its response-time histogram, and
    /// that its credentials are uploaded files; local mode's keys stay the gateway's.
    @Test func apnsDeclaresItsSectionItsHistogramAndItsUploadedFiles() throws {
        let registry = TransportRegistry.standard
        #expect(registry.uploadedFilesChannel == .apns)
        #expect(registry.adding(EchoTransport.declaration).uploadedFilesChannel == .apns)
        #expect(TransportRegistry([EchoTransport.declaration]).uploadedFilesChannel == nil)
        let apns = try #require(registry.declaration(of: .apns))
        #expect(apns.configSectionPath == "apns")
        #expect(registry.declaration(of: .fcm)?.configSectionPath == "transports.fcm")
        #expect(
            apns.configKeys.map(\.key) == [
                "production_url", "sandbox_url", "ca_file", "connections", "connect_timeout_seconds",
                "request_timeout_seconds", "token_refresh_minutes",
            ])
        #expect(registry.declarations.compactMap(\.responseHistogram?.name) == ["tuisong_apns_response_seconds"])

        let config = try GatewayConfig.load(
            fileContents: Data(#"{"apns": {"sandbox_url": "https://sandbox.example:2197"}}"#.utf8),
            environment: ["TUISONG_APNS_CONNECTIONS": "7", "TUISONG_APNS_LOCAL_MOCK_PORT": "2197"])
        let section = config.transports.section(.apns)
        #expect(section.integer("connections", default: 0) == 7)
        #expect(section["sandbox_url"] == "https://sandbox.example:2197")
        #expect(section["production_url"] == "https://api.push.apple.com:443")
        #expect(section["local_mock"] == "", "local mode is the gateway's, not the transport's")
        #expect(config.localMode == .init(enabled: true, port: 2197))
    }

    /// A `notification` key one service alone takes is its declaration's
    /// (`TransportDeclaration.notificationFields`): the native API reads it into that service's
    /// entry of the content, refuses it in the declaration's words, and knows no such key where
    /// no transport declares it.
    @Test func aNotificationKeyOfOneServiceIsItsDeclarations() throws {
        var echo = EchoTransport.declaration
        echo.notificationFields = [
            NotificationField("alert.echo_tone", key: "tone") { value throws(NotificationFieldError) in
                guard let tone = value.stringValue else {
                    throw NotificationFieldError("\"notification.alert.echo_tone\" must be a string")
                }
                return .string(tone)
            }
        ]
        let registry = TransportRegistry.standard.adding(echo)
        func body(_ tone: Any) -> [String: Any] {
            ["audience": ["all": true], "notification": ["alert": ["body": "x", "echo_tone": tone]]]
        }
        let job = try NativePushRequest.parse(body("soft"), appID: 1, now: Date(), transports: registry)
        #expect(job.content.services == ["echo": ["tone": "soft"], "apns": ["alert_as_object": true]])
        #expect {
            try NativePushRequest.parse(body(1), appID: 1, now: Date(), transports: registry)
        } throws: { error in
            (error as? NativeAPIError)?.message == #""notification.alert.echo_tone" must be a string"#
        }
        #expect {
            try NativePushRequest.parse(body("soft"), appID: 1, now: Date())
        } throws: { error in
            (error as? NativeAPIError)?.message == #"unknown field "notification.alert.echo_tone""#
        }
    }

    /// A background-only push at priority 10 is refused up front in the words of the service
    /// whose declaration refuses it (APNs), and taken by a gateway without such a service.
    @Test func anImmediateBackgroundPushIsRefusedByTheServiceThatDeclaresIt() throws {
        let body: [String: Any] = [
            "audience": ["all": true], "notification": ["content_available": true], "priority": 10,
        ]
        #expect {
            try NativePushRequest.parse(body, appID: 1, now: Date())
        } throws: { error in
            (error as? NativeAPIError)?.message
                == "priority 10 with a background-only notification is refused by APNs; use 5"
        }
        let echoOnly = TransportRegistry([EchoTransport.declaration])
        let job = try NativePushRequest.parse(body, appID: 1, now: Date(), transports: echoOnly)
        #expect(job.options.priority == .immediate)
    }

    @Test func theStandardRegistryDeclaresEveryChannelWithTheSameNamesAsBefore() {
        TransportRegistry.install()
        let registry = TransportRegistry.standard
        #expect(
            registry.channels.map(\.rawValue) == [
                "apns", "fcm", "huawei", "honor", "xiaomi", "oppo", "vivo", "harmony",
            ])
        #expect(PushChannel.allCases == registry.channels)
        #expect(
            registry.withCredentialForms.map(\.name) == ["fcm", "huawei", "honor", "xiaomi", "oppo", "vivo", "harmony"])
        #expect(PushChannel.vivo.displayName == "vivo" && PushChannel.honor.withArticle == "an Honor")
        #expect(!PushChannel.apns.isAndroid && PushChannel.xiaomi.isAndroid)
        // Stored rows and the wire keep their strings: the name is the raw value, coded as one.
        let coded = try? JSONEncoder().encode([PushChannel.huawei])
        #expect(coded.map { String(decoding: $0, as: UTF8.self) } == #"["huawei"]"#)
        #expect(PushChannel(rawValue: "meizu")?.rawValue == "meizu", "an undeclared name is still a name")
        #expect(PushChannel.declared("meizu") == nil && PushChannel.declared("fcm") == .fcm)
        #expect(PushChannel(rawValue: "Not A Name") == nil && PushChannel(rawValue: "") == nil)
        // The token rule is the declaration's: hex for APNs, opaque for the others.
        #expect(
            DeviceToken(String(repeating: "AB", count: 32), channel: .apns)?.value == String(repeating: "ab", count: 32)
        )
        #expect(DeviceToken("fcm:token-1", channel: .fcm) != nil && DeviceToken("fcm:token-1", channel: .apns) == nil)
    }

    @Test func aTransportsSectionIsReadGenerically() throws {
        let registry = TransportRegistry.standard.adding(EchoTransport.declaration)
        let config = try GatewayConfig.load(
            fileContents: Data(#"{"transports": {"xiaomi": {"url": "https://mi.example"}}}"#.utf8),
            environment: [
                "TUISONG_TRANSPORTS_ECHO_URL": "https://echo.example/v2",
                "TUISONG_TRANSPORTS_FCM_CLIENTS": "3",
            ], transports: registry)
        #expect(config.transports.section(.echo)["url"] == "https://echo.example/v2")
        #expect(config.transports.section(.xiaomi)["url"] == "https://mi.example")
        #expect(config.transports.section(.fcm).integer("clients", default: 1) == 3)
        #expect(
            config.transports.section(.huawei)["token_url"] == "https://oauth-login.cloud.huawei.com/oauth2/v3/token")
        // A default section is the declaration's; its keys are typed by it.
        #expect(
            try GatewayConfig.load(fileContents: nil, environment: [:], transports: registry)
                .transports.section(.echo)["url"] == "https://echo.invalid/v1")
        #expect(throws: ConfigError.self) {
            try GatewayConfig.load(
                fileContents: nil, environment: ["TUISONG_TRANSPORTS_ECHO_URL": "ftp://nope"], transports: registry)
        }
        // Without the transport, its section is an unknown key.
        #expect(throws: ConfigError.self) {
            try GatewayConfig.load(
                fileContents: Data(#"{"transports": {"echo": {"url": "https://e.x"}}}"#.utf8),
                environment: [:])
        }
    }

    /// The proof: a gateway started with the registry plus `EchoTransport` (a folder, a name in
    /// Package.swift's `testTransports`, the registry line below) reads its config section,
    /// makes it, routes its pushes to it, serves its credential form to the console and checks
    /// what the admin API is given against it; no other file of the gateway names it.
    ///
    /// Its own options object (`"echo": {"room": …}` in a native push) is checked by the rule it
    /// declares and reaches it with the push: the native API, the store and the delivery engine
    /// carry it by name without knowing its keys (#29).
    @Test func aTestOnlyTransportRegisteredTheNewWayIsServedEndToEnd() async throws {
        let url = "https://echo-\(UUID().uuidString.prefix(8).lowercased()).example/v1"
        let (gw, client) = try await AdminTestClient.start(
            environment: ["TUISONG_TRANSPORTS_ECHO_URL": url],
            transports: TransportRegistry.standard.adding(EchoTransport.declaration))
        defer { Task { await gw.stop() } }
        try await client.login()

        // The console's form comes from the declaration.
        let session = try await client.call("GET", "/session").jsonObject
        let features = try #require(session["features"] as? [String: Any])
        #expect((features["android_channels"] as? [String])?.last == "echo")
        let forms = try #require(features["transports"] as? [[String: Any]])
        let echo = try #require(forms.first { $0["channel"] as? String == "echo" })
        #expect(echo["display_name"] as? String == "Echo")
        // No Chinese name declared: its name in both languages.
        #expect(echo["display_name_text"] as? [String: String] == ["en": "Echo", "zh": "Echo"])
        let fields = try #require(echo["fields"] as? [[String: Any]])
        #expect(fields.map { $0["name"] as? String } == ["account", "api_key"])
        #expect(fields.map { $0["kind"] as? String } == ["text", "secret"])

        // The admin API checks a credential by the declared form, in its own words.
        let (appID, key) = try await gw.createApp(bundleID: "com.example.echo")
        let refused = try await client.call(
            "POST", "/apps/\(appID)/channel-credentials",
            json: ["channel": "echo", "account": "not ok!", "api_key": "12345678"])
        #expect(refused.status == 422 && refused.errorCode == "invalid_account" && refused.errorField == "account")
        let missing = try await client.call(
            "POST", "/apps/\(appID)/channel-credentials", json: ["channel": "echo", "account": "tester"])
        #expect(missing.status == 400 && missing.errorField == "api_key", "\(missing.text)")
        let checked = try gw.runtime.credentialBackend.channelCredentials.inspect(
            .form(channel: .echo, CredentialFormInput(values: ["account": "tester", "api_key": "s3cret-echo-key"])),
            appID: appID, selector: nil)
        #expect(checked.vendorAppID == "tester" && checked.channel == .echo)
        #expect(
            !checked.encryptedSecret.isEmpty
                && !String(decoding: checked.encryptedSecret, as: UTF8.self).contains("s3cret"))

        // The device API takes the gateway's channels, the echo one included, by its token rule.
        #expect(throws: Never.self) {
            try NativeDeviceAPI.channel("echo", among: gw.runtime.config.transports.registry.channels)
        }
        #expect(throws: (any Error).self) { try NativeDeviceAPI.channel("echo", among: PushChannel.allCases) }

        // The gateway made it from its section and routes echo pushes to it: without a
        // credential they are held, as every service's are.
        let transport = try #require(EchoTransport.made(url: url))
        let routed = try #require(gw.runtime.transports.byChannel[.echo])
        #expect(routed as? EchoTransport === transport)
        let app = try #require(try await gw.runtime.store.app(id: appID))
        let outcomes = await routed.outcomes(
            of: PushBatch(
                app: app,
                pushes: [
                    OutgoingPush(
                        token: "echo-token-1", environment: .production, content: PushContent(title: "Hi echo"),
                        headers: PushHeaders(PushOptions()), channel: .echo)
                ]))
        #expect(outcomes == [.held(.noCredential)])
        #expect(transport.echoed.isEmpty)
        // Not declared process-wide: the standard registry's lists stay the build's own.
        #expect(!PushChannel.allCases.contains(.echo))

        // With a credential and a device, a native push carries the transport's own options to
        // it; a bad options object is refused in the native API's words, with its field's path.
        let stored = try await client.call(
            "POST", "/apps/\(appID)/channel-credentials",
            json: ["channel": "echo", "account": "tester", "api_key": "s3cret-echo-key"])
        #expect(stored.status == 201, "\(stored.text)")
        let device = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/echo-token-1", key: key, json: ["channel": "echo"])
        #expect(device.status == 201, "\(device.text)")
        let bad = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: [
                "audience": ["tokens": ["echo-token-1"]], "notification": ["alert": ["title": "Hi echo"]],
                "echo": ["room": "Lobby 1"],
            ])
        #expect(bad.status == 400 && bad.errorCode == "invalid_request", "\(bad.text)")
        #expect(bad.errorMessage == #""echo.room" must be lower-case letters"#, "\(bad.text)")
        let unknown = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: [
                "audience": ["tokens": ["echo-token-1"]], "notification": ["alert": ["title": "Hi echo"]],
                "echo": ["floor": 2],
            ])
        #expect(unknown.errorMessage == #"unknown field "echo.floor""#, "\(unknown.text)")
        let pushed = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: [
                "audience": ["tokens": ["echo-token-1"]], "notification": ["alert": ["title": "Hi echo"]],
                "echo": ["room": "lobby"], "harmony": ["category": "IM"],
            ])
        #expect(pushed.status == 202, "\(pushed.text)")
        let messageID = try #require(pushed.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(messageID), timeout: .seconds(60))
        let echoed = try #require(transport.echoed.last)
        #expect(echoed.token == "echo-token-1" && echoed.title == "Hi echo" && echoed.account == "tester")
        #expect(echoed.options == ["room": "lobby"], "its own entry, not another transport's")
        let record = try #require(try await gw.runtime.store.message(id: Int64(messageID)))
        #expect(record.options.services == ["echo": ["room": "lobby"], "harmony": ["category": "IM"]])
        // A gateway without the transport does not take its object.
        #expect(throws: NativeAPIError.self) {
            try NativePushRequest.parse(
                ["audience": ["all": true], "notification": ["alert": "x"], "echo": ["room": "lobby"]], appID: appID,
                now: Date())
        }
    }
}
