import Foundation
import Logging
import Testing
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient
import TuisongLookAlikes
import TuisongTransportKit

@testable import TuisongOPPO
@testable import TuisongVivo
@testable import TuisongXiaomi

/// Xiaomi, OPPO and vivo transports against the bundled look-alikes over TLS + HTTP/2:
/// sign-in (or Xiaomi's key), batches, per-token invalidation, refresh, daily quota.
@Suite(.serialized) struct OEMTransportTests {
    @Test func xiaomiBatchesAndInvalidatesBadRegids() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.xiaomi(credential: harness.xiaomiCredential())
        let outcomes = await transport.outcomes(of: harness.batch(["mi-1", "unregistered-2", "mi-3"]))
        #expect(outcomes[0].isDelivered && outcomes[2].isDelivered)
        #expect(outcomes[1] == .invalidate(.service("bad_regid"), since: nil))
        let received = try #require(harness.server.receivedAndroidMessages().first { $0.service == .xiaomi })
        #expect(received.target == harness.setup.xiaomiApp.packageName)
        let form = String(decoding: received.body, as: UTF8.self)
        #expect(form.contains("title=Hi"))
        #expect(form.contains("description=Hello"))
    }

    @Test func xiaomiWrongSecretIsHeldAndDailyQuotaWaits() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let wrong = harness.xiaomi(credential: harness.xiaomiCredential(secret: "wrong"))
        guard case .held = await wrong.outcomes(of: harness.batch(["mi-1"]))[0] else {
            Issue.record("a wrong AppSecret holds the push")
            return
        }
        #expect(harness.store.status(of: 1) == "failing")
        let transport = harness.xiaomi(credential: harness.xiaomiCredential())
        // Xiaomi's daily limit keeps the pushes, reason quota, until midnight China time.
        for outcome in await transport.outcomes(of: harness.batch(["quota-1", "mi-2"])) {
            guard case .retry(.quota, let after?) = outcome else {
                Issue.record("expected a retry after the quota resets, got \(outcome)")
                continue
            }
            #expect(after > .zero && after <= .seconds(86_400))
        }
        // The rest of the day waits without asking Xiaomi.
        let before = harness.server.androidStatistics[.xiaomi].sendRequests
        guard case .retry(.quota, _) = await transport.outcomes(of: harness.batch(["mi-3"]))[0] else {
            Issue.record("a push after the limit waits too")
            return
        }
        #expect(harness.server.androidStatistics[.xiaomi].sendRequests == before)
        // What the console shows on the credential: used up until midnight China time.
        let until = try #require(transport.quotaExhausted(credentialID: harness.xiaomiCredential().id))
        var china = Calendar(identifier: .gregorian)
        china.timeZone = TimeZone(identifier: "Asia/Shanghai")!
        #expect(china.dateComponents([.hour, .minute], from: until) == DateComponents(hour: 0, minute: 0))
        #expect(until > Date() && until <= Date().addingTimeInterval(86_400))
        #expect(wrong.quotaExhausted(credentialID: 99) == nil)
    }

    @Test func oppoSignsInSendsABatchAndRefreshes() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.oppo(credential: harness.oppoCredential())
        let outcomes = await transport.outcomes(of: harness.batch(["op-1", "invalid-2", "op-3"]))
        #expect(outcomes[0].isDelivered && outcomes[2].isDelivered)
        #expect(outcomes[1] == .invalidate(.service("10000"), since: nil))
        #expect(transport.tokens.fetchCount == 1)
        harness.server.revokeAccessTokens()
        #expect(await transport.outcomes(of: harness.batch(["op-4"])).allSatisfy(\.isDelivered))
        #expect(transport.tokens.fetchCount == 2)
        #expect(await transport.outcomes(of: harness.batch(["quota-5"])) == [.skipped(.quota)])
    }

    @Test func oppoWrongMasterSecretIsRefused() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.oppo(credential: harness.oppoCredential(secret: "wrong"))
        guard case .held(let reason) = await transport.outcomes(of: harness.batch(["op-1"]))[0] else {
            Issue.record("a wrong MasterSecret holds the push")
            return
        }
        #expect(reason == .service("16"))
        #expect(harness.store.status(of: 1) == "failing")
    }

    @Test func vivoSendsOneOrAListAndRefreshes() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let transport = harness.vivo(credential: harness.vivoCredential())
        #expect(await transport.outcomes(of: harness.batch(["vv-1"])).allSatisfy(\.isDelivered))
        #expect(
            await transport.outcomes(of: harness.batch(["unregistered-1"]))
                == [.invalidate(.service("10302"), since: nil)])
        let list = await transport.outcomes(of: harness.batch(["vv-2", "invalid-3", "vv-4"]))
        #expect(list[0].isDelivered && list[2].isDelivered)
        #expect(list[1] == .invalidate(.service("10302"), since: nil))
        harness.server.revokeAccessTokens()
        #expect(await transport.outcomes(of: harness.batch(["vv-5", "vv-6"])).allSatisfy(\.isDelivered))
        #expect(transport.tokens.fetchCount == 2)
        #expect(
            await transport.outcomes(of: harness.batch(["quota-7", "vv-8"])) == [.skipped(.quota), .skipped(.quota)])
        let received = harness.server.receivedAndroidMessages().filter { $0.service == .vivo }
        #expect(received.count >= 3)
    }

    /// Issue #29, bug 2: vivo and OPPO carry notifications only. A background push (custom
    /// data, no alert) is skipped as `unsupported_content` and never reaches the service;
    /// Xiaomi sends it as a pass-through message.
    @Test func aBackgroundPushIsSkippedByVivoAndOPPOAndPassedThroughByXiaomi() async throws {
        let harness = try await Harness()
        defer { harness.stop() }
        let background = PushContent(data: ["sync": "inbox"], background: true)
        #expect(SendReason.unsupportedContent.description == "unsupported_content")
        #expect(SendReason("unsupported_content") == .unsupportedContent)
        // One transport at a time: the harness's store keeps the last credential made.
        let vivo = harness.vivo(credential: harness.vivoCredential())
        #expect(
            await vivo.outcomes(of: harness.batch(["vv-1", "vv-2"], content: background))
                == [.skipped(.unsupportedContent), .skipped(.unsupportedContent)])
        #expect(harness.server.androidStatistics[.vivo].sendRequests == 0)
        // The same transport still sends an alert.
        #expect(await vivo.outcomes(of: harness.batch(["vv-3"])).allSatisfy(\.isDelivered))
        let oppo = harness.oppo(credential: harness.oppoCredential())
        #expect(
            await oppo.outcomes(of: harness.batch(["op-1"], content: background)) == [.skipped(.unsupportedContent)])
        #expect(harness.server.androidStatistics[.oppo].sendRequests == 0)
        #expect(await oppo.outcomes(of: harness.batch(["op-2"])).allSatisfy(\.isDelivered))
        // Only the alerts reached the look-alikes.
        #expect(
            harness.server.receivedAndroidMessages().filter { $0.service == .vivo || $0.service == .oppo }.count == 2)

        let xiaomi = harness.xiaomi(credential: harness.xiaomiCredential())
        #expect(await xiaomi.outcomes(of: harness.batch(["mi-1"], content: background)).allSatisfy(\.isDelivered))
        let received = try #require(harness.server.receivedAndroidMessages().first { $0.service == .xiaomi })
        let form = String(decoding: received.body, as: UTF8.self)
        #expect(form.contains("pass_through=1"))
        #expect(!form.contains("title="))
    }
}

extension Harness {
    func xiaomiCredential(secret: String? = nil) -> ChannelCredentialRecord {
        oemRecord(
            .xiaomi, vendorAppID: setup.xiaomiApp.packageName, clientID: "2882303761517",
            secret: secret ?? setup.xiaomiApp.appSecret)
    }

    func oppoCredential(secret: String? = nil) -> ChannelCredentialRecord {
        oemRecord(
            .oppo, vendorAppID: "30001", clientID: setup.oppoApp.appKey, secret: secret ?? setup.oppoApp.masterSecret)
    }

    func vivoCredential() -> ChannelCredentialRecord {
        oemRecord(
            .vivo, vendorAppID: setup.vivoApp.appID, clientID: setup.vivoApp.appKey, secret: setup.vivoApp.appSecret)
    }

    private func oemRecord(_ channel: PushChannel, vendorAppID: String, clientID: String, secret: String)
        -> ChannelCredentialRecord
    {
        ChannelCredentialRecord(
            id: 1, appID: app.id, channel: channel, selector: nil, vendorAppID: vendorAppID, clientID: clientID,
            encryptedSecret: Array(secret.utf8), status: "ok", statusReason: nil, createdAt: Date())
    }

    func xiaomi(credential: ChannelCredentialRecord) -> XiaomiTransport {
        batchTransport(XiaomiService(baseURL: baseURL), channel: .xiaomi, credential: credential)
    }

    func oppo(credential: ChannelCredentialRecord) -> OPPOTransport {
        batchTransport(OPPOService(baseURL: baseURL), channel: .oppo, credential: credential)
    }

    func vivo(credential: ChannelCredentialRecord) -> VivoTransport {
        batchTransport(VivoService(baseURL: baseURL), channel: .vivo, credential: credential)
    }

    private func batchTransport<Service: TokenBatchService>(
        _ service: Service, channel: PushChannel, credential: ChannelCredentialRecord
    ) -> TokenBatchTransport<Service> {
        TokenBatchTransport(
            service: service, client: try! client(), resolver: resolver(channel, credential),
            requestTimeout: .seconds(10),
            tokensPerRequest: 1000, clock: clock, logger: Logger(label: "test"))
    }
}
