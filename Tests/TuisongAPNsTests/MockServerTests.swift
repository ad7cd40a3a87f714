import Foundation
import Synchronization
import Testing
import TuisongCrypto
import TuisongLookAlikes

@Suite("APNs mock server lifecycle, logging and setup")
struct MockServerTests {
    @Test("start twice throws; shutdown is idempotent and closes the listener")
    func lifecycle() throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.life")
        let server = try LookAlikeServer(
            configuration: setup.configuration(), certificate: setup.serverCertificate, key: setup.serverKey)
        #expect(server.port == 0)
        try server.start()
        let port = server.port
        #expect(port > 0)
        #expect(throws: LookAlikeServerError.self) { try server.start() }
        server.shutdown()
        server.shutdown()
        #expect(server.port == 0)
        #expect(throws: LookAlikeServerError.self) { try server.start() }

        // Nothing listens any more.
        let probe = try Command.run("curl", ["-s", "--http2", "-k", "https://127.0.0.1:\(port)/"])
        #expect(probe.status == 7)  // curl: "Failed to connect"
    }

    @Test("binding a port in use fails with the system's error")
    func portInUse() throws {
        let harness = try MockHarness()
        let setup = harness.setup
        let second = try LookAlikeServer(
            configuration: setup.configuration(port: harness.server.port), certificate: setup.serverCertificate,
            key: setup.serverKey)
        let error = try #require(throws: LookAlikeServerError.self) { try second.start() }
        #expect(error.code == Int(EADDRINUSE))
        #expect(error.operation.hasPrefix("bind"))
    }

    @Test("a server certificate that does not match its key is refused at init")
    func mismatchedIdentity() throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.life")
        #expect(throws: CryptoError.self) {
            try LookAlikeServer(
                configuration: setup.configuration(), certificate: setup.serverCertificate,
                key: try PrivateKey.generateP256())
        }
    }

    @Test("logRequests writes one JSON line per request to the sink")
    func requestLog() throws {
        let lines = Mutex<[String]>([])
        let harness = try MockHarness(
            configure: { $0.logRequests = true }, requestLog: { line in lines.withLock { $0.append(line) } })
        let response = try harness.curl(
            CurlRequest(
                headers: try harness.validHeaders() + ["apns-priority: 5"], bodyFile: harness.path("payload.json")))
        #expect(response.status == 200)
        let logged = lines.withLock { $0 }
        #expect(logged.count == 1)
        let line = try #require(logged.first)
        let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(entry["status"] as? Int == 200)
        #expect(entry["method"] as? String == "POST")
        #expect(entry["path"] as? String == "/3/device/\(MockHarness.deviceToken)")
        #expect(entry["apns-topic"] as? String == MockHarness.bundleID)
        #expect(entry["apns-priority"] as? String == "5")
        #expect(entry["apns-id"] as? String == response.headers["apns-id"])
        #expect(entry["team"] as? String == harness.setup.teamID)
        #expect(entry["payload-bytes"] as? Int == MockHarness.payload.utf8.count)
    }

    @Test("the server names no service: APNs is the registry's first look-alike and the port's default")
    func apnsIsALookAlikeOfTheRegistry() throws {
        let standard = LookAlikeRegistry.standard
        #expect(standard.services.first == .apns)
        #expect(standard.declarations.filter(\.isPortDefault).map(\.service) == [.apns])
        // A path no look-alike claims is APNs's to answer, as Apple answers any other path.
        let harness = try MockHarness()
        let request = CurlRequest(
            path: "/nobody/claims/this", headers: try harness.validHeaders(), bodyFile: harness.path("payload.json"))
        let response = try #require(try harness.curl([request]).first)
        #expect(response.status == 404)
        #expect(response.body.contains("BadPath"))
        #expect(harness.server.apnsStatistics.responsesByReason == ["BadPath": 1])
        #expect(harness.server.statisticsSummary(of: .apns) == ["requests": 1])
    }

    /// The command, its files and local mode's config section keep the names operators have
    /// used since the look-alike was APNs's mock, declared by APNs's look-alike alone.
    @Test func theLegacyNamesAreThePortDefaultsDeclaration() {
        #expect(
            LookAlikeRegistry.standard.legacyNames
                == LookAlikeLegacyNames(command: "apns-mock", localModeSection: "apns"))
        #expect(LookAlikeRegistry([FCMLookAlike.declaration]).legacyNames.command == "look-alikes")
    }

    @Test(
        "without APNs's look-alike a push to /3/device is nobody's: the kit answers 404, FCM's look-alike still serves")
    func aServerWithoutAPNs() throws {
        let harness = try MockHarness(lookAlikes: LookAlikeRegistry([FCMLookAlike.declaration]))
        #expect(harness.server.lookAlikeServices == [.fcm])
        let request = CurlRequest(headers: try harness.validHeaders(), bodyFile: harness.path("payload.json"))
        let response = try #require(try harness.curl([request]).first)
        #expect(response.status == 404)
        #expect(response.body.isEmpty)
        #expect(response.headers["apns-id"] == nil)
        #expect(harness.server.apnsStatistics == APNsLookAlikeStatistics())
        #expect(harness.server.receivedNotifications().isEmpty)
        let token = CurlRequest(
            path: "/token", headers: ["content-type: application/x-www-form-urlencoded"],
            bodyFile: try harness.write("grant_type=nothing", to: "grant.txt"))
        let refused = try #require(try harness.curl([token]).first)
        #expect(refused.status == 400, "FCM's token endpoint answers in its own words")
        #expect(harness.server.androidStatistics.fcm.tokenRefusals == 1)
    }

    @Test("resetRecorded and resetStatistics start the books afresh")
    func resets() throws {
        let harness = try MockHarness()
        let request = CurlRequest(headers: try harness.validHeaders(), bodyFile: harness.path("payload.json"))
        _ = try harness.curl(request)
        #expect(harness.server.receivedNotifications().count == 1)
        harness.server.resetRecorded()
        #expect(harness.server.receivedNotifications().isEmpty)
        #expect(harness.server.apnsStatistics.requests == 1)
        harness.server.resetStatistics()
        let reset = harness.server.statistics
        // Open connections are a gauge; curl's may or may not have been closed by now.
        var zero = LookAlikeServerStatistics()
        zero.connectionsOpen = reset.connectionsOpen
        #expect(reset == zero)
        _ = try harness.curl(request)
        #expect(harness.server.apnsStatistics.requests == 1)
        #expect(harness.server.receivedNotifications().count == 1)
    }

    @Test("the local setup issues what a gateway needs")
    func localSetup() throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.setup")
        #expect(setup.keyID.count == 10)
        #expect(setup.teamID.count == 10)
        #expect(setup.keyID.allSatisfy { $0.isUppercase || $0.isNumber })
        #expect(setup.tokenKeyPEM.contains("BEGIN PRIVATE KEY"))
        let tokenKey = try PrivateKey(pem: setup.tokenKeyPEM)
        #expect(try tokenKey.publicKey.pem() == setup.tokenPublicKeyPEM)

        let ca = try Certificate(pem: setup.caCertificatePEM)
        let client = try Certificate(pem: setup.clientCertificatePEM)
        #expect(client.issuer == ca.subject)
        #expect(
            client.applePushTopics == ["com.example.setup", "com.example.setup.voip", "com.example.setup.complication"])
        #expect(client.userID == "com.example.setup")
        #expect(client.matches(try PrivateKey(pem: setup.clientKeyPEM)))
        #expect(setup.serverCertificate.issuer == ca.subject)
        #expect(setup.serverCertificate.matches(setup.serverKey))

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mock-ca-\(UUID().uuidString).pem")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try setup.writeCAFile(to: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == setup.caCertificatePEM)

        let configuration = setup.configuration(port: 2197)
        #expect(configuration.port == 2197)
        #expect(
            configuration.tokenKeys == [
                .init(keyID: setup.keyID, teamID: setup.teamID, publicKeyPEM: setup.tokenPublicKeyPEM)
            ])
        #expect(configuration.clientCertificateCAPEMs == [setup.caCertificatePEM])
    }

    @Test("a saved local setup is reused for its bundle id and replaced for another")
    func loadOrGenerate() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mock-setup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("apns-mock.json").path

        let first = try LookAlikeLocalSetup.loadOrGenerate(at: path, bundleID: "com.example.keep")
        let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber
        #expect(permissions?.intValue == 0o600)
        let again = try LookAlikeLocalSetup.loadOrGenerate(at: path, bundleID: "com.example.keep")
        #expect(again.keyID == first.keyID)
        #expect(again.tokenKeyPEM == first.tokenKeyPEM)
        #expect(again.serverCertificate == first.serverCertificate)
        #expect(again.serverCertificate.matches(again.serverKey))

        // The reloaded setup serves: a client trusting the saved CA gets through with a token.
        let harness = try MockHarness(setup: again)
        let response = try harness.curl(
            CurlRequest(headers: try harness.validHeaders(), bodyFile: harness.path("payload.json")))
        #expect(response.status == 200)

        let other = try LookAlikeLocalSetup.loadOrGenerate(at: path, bundleID: "com.example.other")
        #expect(other.keyID != first.keyID || other.tokenKeyPEM != first.tokenKeyPEM)
        #expect(other.bundleID == "com.example.other")

        try Data("not json".utf8).write(to: URL(fileURLWithPath: path))
        let replaced = try LookAlikeLocalSetup.loadOrGenerate(at: path, bundleID: "com.example.other")
        #expect(replaced.tokenKeyPEM != other.tokenKeyPEM)
    }

    @Test("configuration JSON may name only what it changes, and round-trips")
    func configurationCoding() throws {
        let partial =
            #"{"port": 2197, "faults": {"latencyMilliseconds": 20, "tokenPrefixes": {"410": {"status": 410, "reason": "Unregistered"}}}}"#
        let decoded = try JSONDecoder().decode(LookAlikeConfiguration.self, from: Data(partial.utf8))
        var expected = LookAlikeConfiguration(port: 2197)
        expected.faults.latencyMilliseconds = 20
        expected.faults.tokenPrefixes = ["410": .init(status: 410, reason: "Unregistered")]
        #expect(decoded == expected)
        #expect(decoded.host == "127.0.0.1")
        #expect(decoded.maxConcurrentStreams == 1000)
        #expect(decoded.streamsBeforeFirstValidToken == 1)
        #expect(decoded.maxTokenAgeSeconds == 3600)

        var full = LookAlikeConfiguration(eventLoopThreads: 2)
        full.faults = .magicTokenPrefixes
        full.faults.goawayAfterRequests = 10
        let roundTripped = try JSONDecoder().decode(LookAlikeConfiguration.self, from: JSONEncoder().encode(full))
        #expect(roundTripped == full)
    }
}
