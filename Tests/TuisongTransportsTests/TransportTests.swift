import Foundation
import Logging
import Synchronization
import Testing
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTP2Client
import TuisongHTTPClient
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongFCM
@testable import TuisongHonor
@testable import TuisongHuawei

/// The Android transports against the bundled look-alikes over real TLS + HTTP/2 on loopback:
/// sign-in, rendering received, each error answer mapped, token refresh, partial success,
/// credential refusal.
@Suite(.serialized) struct TransportTests {
    @Test func fcmDeliversAndMapsEachAnswer() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.fcm(credential: harness.fcmCredential())
        let outcomes = await transport.outcomes(
            of: harness.batch(["good-1", "unregistered-2", "invalid-3", "quota-4", "unavailable-5", "internal-6"]))
        guard case .delivered(let name) = outcomes[0] else {
            Issue.record("expected delivered, got \(outcomes[0])")
            return
        }
        #expect(name?.hasPrefix("projects/tuisong-local/messages/") == true)
        #expect(outcomes[1] == .invalidate(.service("UNREGISTERED"), since: nil))
        #expect(outcomes[2] == .invalidate(.service("INVALID_ARGUMENT"), since: nil))
        #expect(outcomes[3] == .retry(.service("QUOTA_EXCEEDED"), after: .seconds(30)))
        #expect(outcomes[4] == .retry(.service("UNAVAILABLE"), after: nil))
        #expect(outcomes[5] == .retry(.service("INTERNAL"), after: nil))
        // What FCM received for the good token is the rendering of the payload.
        let received = try #require(harness.server.receivedAndroidMessages().first { $0.tokens == ["good-1"] })
        #expect(received.service == .fcm)
        let message = try #require(try JSONValue(parsing: received.body)["message"])
        #expect(message["notification"] == ["title": "Hi", "body": "Hello"])
        #expect(message["data"] == ["order": "42"])
        #expect(harness.server.androidStatistics.fcm.tokenGrants == 1)
        #expect(transport.tokens.fetchCount == 1)
        // One multiplexed connection carried every request.
        #expect(transport.statistics.connectionsOpened == 1)
    }

    @Test func fcmRefreshesARevokedTokenOnce() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.fcm(credential: harness.fcmCredential())
        #expect(await transport.outcomes(of: harness.batch(["a"])).allSatisfy(\.isDelivered))
        harness.server.revokeAccessTokens()
        #expect(await transport.outcomes(of: harness.batch(["b", "c"])).allSatisfy(\.isDelivered))
        #expect(harness.server.androidStatistics.fcm.tokenGrants == 2)
        #expect(transport.tokens.fetchCount == 2)
        #expect(harness.store.status(of: 1) == "ok")
    }

    @Test func fcmAccountItDoesNotKnowIsRefusedAndMarkedFailing() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        // A key of the right shape the look-alike does not trust: Google answers invalid_grant.
        let stranger = try TestKeys.rsa(1)
        var json = try JSONValue(parsing: harness.setup.fcmServiceAccountJSON(tokenURI: harness.baseURL + "/token"))
        json = try #require(json.objectValue).merging(["private_key": .string(try stranger.pkcs8PEM())]) { $1 }
            .jsonValue
        let transport = harness.fcm(credential: harness.fcmCredential(secret: json.serialized()))
        let outcomes = await transport.outcomes(of: harness.batch(["a", "b"]))
        #expect(outcomes == [.held(.service("invalid_grant")), .held(.service("invalid_grant"))])
        #expect(harness.store.status(of: 1) == "failing")
        #expect(harness.server.androidStatistics.fcm.tokenRefusals == 1)
        #expect(harness.server.receivedAndroidMessages().isEmpty)
        // Held from now on without asking the token endpoint again.
        let later = await transport.outcomes(of: harness.batch(["c"]))
        guard case .held(let reason) = later[0] else {
            Issue.record("expected held, got \(later)")
            return
        }
        #expect(reason.description == "invalid_grant")
        #expect(harness.server.androidStatistics.fcm.tokenRefusals == 1)
    }

    /// FCM sends through the HTTP/2 engine's pools: `transports.fcm.clients` pools of
    /// `transports.fcm.connections` connections each, all of them opened and used by one chunk.
    @Test func fcmSpreadsItsSendsOverItsPoolsConnections() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = try FCMTransport(
            connections: FCMTransport.Connections(pools: 2, connectionsPerPool: 3, caFile: harness.caFile),
            tokenClient: try harness.client(), resolver: harness.resolver(.fcm, harness.fcmCredential()),
            endpoints: FCMTransport.Endpoints(sendURL: harness.baseURL), requestTimeout: .seconds(10),
            clock: harness.clock, logger: Logger(label: "test"))
        let tokens = (0..<40).map { "good-\($0)" }
        let first = await transport.outcomes(of: harness.batch(Array(tokens[..<20])))
        let second = await transport.outcomes(of: harness.batch(Array(tokens[20...])))
        #expect((first + second).allSatisfy { $0.isDelivered })
        // Each pool opened its three at its first chunk; the ones the chunk did not wait for
        // finish their handshakes meanwhile.
        #expect(await eventually { transport.statistics.openConnections == 6 })
        #expect(transport.statistics.connectionsOpened == 6)
        #expect(transport.statistics.requestsCompleted == 40)
        #expect(harness.server.receivedAndroidMessages().filter { $0.service == .fcm }.count == 40)
        // One sign-in served both pools.
        #expect(transport.tokens.fetchCount == 1)
        await transport.shutdown()
    }

    @Test func fcmRefusesASendURLItCannotReachOverHTTP2() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        for url in ["http://fcm.example", "https://fcm.example/v1"] {
            #expect(throws: HTTP2ClientError.self) {
                try FCMTransport(
                    connections: FCMTransport.Connections(), tokenClient: try harness.client(),
                    resolver: harness.resolver(.fcm, nil), endpoints: FCMTransport.Endpoints(sendURL: url),
                    requestTimeout: .seconds(10), clock: harness.clock, logger: Logger(label: "test"))
            }
        }
    }

    @Test func noCredentialHoldsTheDevicesAsAPNsDoes() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.fcm(credential: nil)
        #expect(
            await transport.outcomes(of: harness.batch(["a", "b"])) == [.held(.noCredential), .held(.noCredential)])
        #expect(SendReason.noCredential.description == "no_credential")
    }

    @Test func huaweiBatchesAndInvalidatesExactlyTheIllegalTokens() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.huawei(credential: harness.huaweiCredential(), tokensPerRequest: 2)
        let outcomes = await transport.outcomes(of: harness.batch(["h-1", "unregistered-2", "h-3", "h-4", "h-5"]))
        #expect(
            outcomes[0].isDelivered && outcomes[2].isDelivered && outcomes[3].isDelivered && outcomes[4].isDelivered)
        #expect(outcomes[1] == .invalidate(.service("80300007"), since: nil))
        let received = harness.server.receivedAndroidMessages().filter { $0.service == .huawei }
        // The look-alike records accepted and refused tokens apart.
        #expect(received.map { $0.tokens.count + $0.refusedTokens.count }.sorted() == [1, 2, 2])
        #expect(harness.server.androidStatistics.huawei.sendRequests == 3)
        let message = try #require(try JSONValue(parsing: received[0].body)["message"])
        #expect(message["android"]?["notification"]?["title"] == "Hi")
        #expect(message["data"] == .string(#"{"order":"42"}"#))
    }

    /// Issue #40 item 6: a service (or a proxy in front of it) that answers 200 and then streams
    /// a body that never ends is read only up to the request's bound; the sign-in or the push
    /// fails as that service failing (a retry), and the next answer that ends is read as usual.
    @Test func anEndlessAnswerIsCutOffAndTheServiceTreatedAsFailing() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.huawei(credential: harness.huaweiCredential(), tokensPerRequest: 1000)
        var endless = LookAlikeConfiguration.Faults.magicTokenPrefixes
        endless.endlessAnswers = true

        // The sign-in's answer never ends: no token, the pushes wait for a retry.
        harness.server.setFaults(endless)
        #expect(
            await transport.outcomes(of: harness.batch(["h-1", "h-2"]))
                == Array(repeating: .retry(.transport("ResponseTooLarge"), after: nil), count: 2))
        #expect(harness.store.status(of: 1) != "failing")

        // Signed in, then the push's answer never ends.
        harness.server.setFaults(.magicTokenPrefixes)
        #expect(await transport.outcomes(of: harness.batch(["h-3"])).allSatisfy(\.isDelivered))
        harness.server.setFaults(endless)
        #expect(
            await transport.outcomes(of: harness.batch(["h-4"]))
                == [.retry(.transport("ResponseTooLarge"), after: nil)])

        // Two endless answers cost the look-alike what fits in the flow-control windows and
        // socket buffers before the client reset them, not the gigabytes of an unbounded read.
        #expect(harness.server.statistics.endlessAnswerBytes > 0)
        #expect(harness.server.statistics.endlessAnswerBytes < 64 * 1024 * 1024)
        harness.server.setFaults(.magicTokenPrefixes)
        #expect(await transport.outcomes(of: harness.batch(["h-5"])).allSatisfy(\.isDelivered))
    }

    @Test func huaweiAllInvalidAndRefreshAndWrongSecret() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.huawei(credential: harness.huaweiCredential(), tokensPerRequest: 1000)
        #expect(
            await transport.outcomes(of: harness.batch(["unregistered-1", "invalid-2"]))
                == Array(repeating: .invalidate(.service("80300007"), since: nil), count: 2))
        harness.server.revokeAccessTokens()
        #expect(await transport.outcomes(of: harness.batch(["x"])).allSatisfy(\.isDelivered))
        #expect(transport.tokens.fetchCount == 2)

        let wrong = harness.huawei(
            credential: harness.huaweiCredential(secret: "not-the-secret"), tokensPerRequest: 1000)
        let refused = await wrong.outcomes(of: harness.batch(["y"]))
        guard case .held = refused[0] else {
            Issue.record("expected held, got \(refused)")
            return
        }
        #expect(harness.store.status(of: 1) == "failing")
    }

    @Test func honorDeliversAndRefreshes() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.honor(credential: harness.honorCredential())
        let outcomes = await transport.outcomes(of: harness.batch(["o-1", "unregistered-2"]))
        #expect(outcomes[0].isDelivered)
        guard case .invalidate = outcomes[1] else {
            Issue.record("expected invalidate, got \(outcomes[1])")
            return
        }
        let received = try #require(harness.server.receivedAndroidMessages().first { $0.service == .honor })
        #expect(received.timestampHeader != nil)
        #expect(try JSONValue(parsing: received.body)["android"]?["notification"]?["title"] == "Hi")
        harness.server.revokeAccessTokens()
        #expect(await transport.outcomes(of: harness.batch(["o-3"])).allSatisfy(\.isDelivered))
        #expect(transport.tokens.fetchCount == 2)
    }
}

extension SendOutcome {
    var isDelivered: Bool {
        if case .delivered = self { return true }
        return false
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    var jsonValue: JSONValue { .object(self) }
}

/// The look-alike on loopback with its throwaway accounts, and what the transports need.
final class Harness: Sendable {
    let setup: LookAlikeLocalSetup
    let server: LookAlikeServer
    let directory: URL
    let caFile: String
    let store = CredentialStoreDouble()
    let clock = SystemClock()
    let app = App(id: 1, name: "t", bundleID: "t", apiKeyHash: "", createdAt: Date(), updatedAt: Date())

    init() async throws {
        setup = try LookAlikeLocalSetup.generate(bundleID: "tuisong.test")
        var configuration = setup.configuration(host: "127.0.0.1", port: 0)
        configuration.faults = .magicTokenPrefixes
        server = try LookAlikeServer(
            configuration: configuration, certificate: setup.serverCertificate, key: setup.serverKey)
        try server.start()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("transports-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        caFile = directory.appendingPathComponent("ca.pem").path
        try setup.writeCAFile(to: caFile)
    }

    var baseURL: String { "https://127.0.0.1:\(server.port)" }

    func stop() {
        server.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }

    func client() throws -> HTTPClient {
        try HTTPClient(configuration: HTTPClient.Configuration(caFile: caFile), label: "test")
    }

    func batch(_ tokens: [String]) -> PushBatch {
        batch(tokens, content: PushContent(title: "Hi", body: "Hello", data: ["order": 42]))
    }

    func batch(_ tokens: [String], content: PushContent) -> PushBatch {
        let shared = SharedContent(content)
        return PushBatch(
            app: app,
            pushes: tokens.map {
                OutgoingPush(
                    token: $0, environment: .production, content: shared, headers: PushHeaders(), channel: .fcm)
            })
    }

    func fcmCredential(secret: [UInt8]? = nil) -> ChannelCredentialRecord {
        record(
            .fcm, vendorAppID: setup.fcmServiceAccount.projectID, clientID: setup.fcmServiceAccount.clientEmail,
            secret: secret ?? setup.fcmServiceAccountJSON(tokenURI: baseURL + "/token"))
    }

    func huaweiCredential(secret: String? = nil) -> ChannelCredentialRecord {
        record(
            .huawei, vendorAppID: setup.huaweiClient.appID, clientID: setup.huaweiClient.clientID,
            secret: Array((secret ?? setup.huaweiClient.clientSecret).utf8))
    }

    func honorCredential() -> ChannelCredentialRecord {
        record(
            .honor, vendorAppID: setup.honorClient.appID, clientID: setup.honorClient.clientID,
            secret: Array(setup.honorClient.clientSecret.utf8))
    }

    private func record(_ channel: PushChannel, vendorAppID: String, clientID: String, secret: [UInt8])
        -> ChannelCredentialRecord
    {
        ChannelCredentialRecord(
            id: 1, appID: app.id, channel: channel, selector: nil, vendorAppID: vendorAppID, clientID: clientID,
            encryptedSecret: secret, status: "ok", statusReason: nil, createdAt: Date())
    }

    func resolver(_ channel: PushChannel, _ credential: ChannelCredentialRecord?) -> ChannelCredentialResolver {
        store.replace(credential)
        return ChannelCredentialResolver(
            channel: channel, store: store, secrets: PlainSecrets(), fallback: nil, clock: clock,
            logger: Logger(label: "test"))
    }

    func fcm(credential: ChannelCredentialRecord?) -> FCMTransport {
        try! FCMTransport(
            connections: FCMTransport.Connections(connectionsPerPool: 1, caFile: caFile), tokenClient: try! client(),
            resolver: resolver(.fcm, credential),
            endpoints: FCMTransport.Endpoints(sendURL: baseURL), requestTimeout: .seconds(10), clock: clock,
            logger: Logger(label: "test"))
    }

    func huawei(credential: ChannelCredentialRecord?, tokensPerRequest: Int) -> HuaweiTransport {
        HuaweiTransport(
            service: HuaweiService(baseURL: baseURL, tokenURL: baseURL + "/oauth2/v3/token"), client: try! client(),
            resolver: resolver(.huawei, credential), requestTimeout: .seconds(10), tokensPerRequest: tokensPerRequest,
            clock: clock, logger: Logger(label: "test"))
    }

    func honor(credential: ChannelCredentialRecord?) -> HonorTransport {
        HonorTransport(
            service: HonorService(baseURL: baseURL, tokenURL: baseURL + "/auth/token"), client: try! client(),
            resolver: resolver(.honor, credential), requestTimeout: .seconds(10), tokensPerRequest: 1000, clock: clock,
            logger: Logger(label: "test"))
    }
}

/// The test's "sealed" secrets are the plain bytes.
struct PlainSecrets: ChannelSecretOpener {
    func secret(of record: ChannelCredentialRecord) throws -> [UInt8] { record.encryptedSecret }
}

/// One credential at a time, its status changes observable.
final class CredentialStoreDouble: ChannelCredentialStore {
    private let records = Mutex<[ChannelCredentialRecord]>([])

    func replace(_ record: ChannelCredentialRecord?) {
        records.withLock { $0 = record.map { [$0] } ?? [] }
    }

    func status(of id: Int64) -> String? {
        records.withLock { $0.first { $0.id == id }?.status }
    }

    func addChannelCredential(_ credential: NewChannelCredential) async throws -> ChannelCredentialRecord {
        fatalError("not used")
    }

    func channelCredentials(appID: Int64) async throws -> [ChannelCredentialRecord] {
        records.withLock { $0.filter { $0.appID == appID } }
    }

    func channelCredential(appID: Int64, secretDigest: String) async throws -> ChannelCredentialRecord? {
        records.withLock { $0.first { $0.appID == appID && $0.secretDigest == secretDigest } }
    }

    func activeChannelCredential(appID: Int64, channel: PushChannel, selector: String?) async throws
        -> ChannelCredentialRecord?
    {
        records.withLock { $0.last { $0.appID == appID && $0.channel == channel && $0.selector == selector } }
    }

    func activeChannelCredential(appID: Int64, channel: PushChannel, environment: PushEnvironment) async throws
        -> ChannelCredentialRecord?
    {
        records.withLock {
            $0.last { $0.appID == appID && $0.channel == channel && $0.selector == nil && $0.serves(environment) }
        }
    }

    func channelCredential(id: Int64) async throws -> ChannelCredentialRecord? {
        records.withLock { $0.first { $0.id == id } }
    }

    func deleteChannelCredential(id: Int64) async throws -> Bool {
        records.withLock { records in
            let before = records.count
            records.removeAll { $0.id == id }
            return records.count < before
        }
    }

    func setChannelCredentialStatus(id: Int64, status: String, reason: String?) async throws {
        records.withLock { records in
            for index in records.indices where records[index].id == id {
                records[index].status = status
                records[index].statusReason = reason
            }
        }
    }
}
