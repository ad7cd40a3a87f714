import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

/// Credential selectors (Tencent busiId, Easemob notifier name) through the running gateway and
/// the APNs mock: the mock reports which p8 key (key id) signed each request.
@Suite(.serialized) struct CredentialSelectorTests {
    func addKey(
        _ gw: RunningGateway, _ appID: Int64, keyID: String, _ environment: PushEnvironment, selector: String?
    ) async throws -> CredentialRecord {
        try await gw.runtime.addCredential(
            .p8(pem: try PrivateKey.generateP256().pkcs8PEM(), keyID: keyID, teamID: "SELTEAM001"),
            appID: appID, environment: environment, selector: selector)
    }

    func bind(
        _ gw: RunningGateway, _ appID: Int64, _ account: String, _ token: String, selector: String?
    ) async throws {
        _ = try await gw.runtime.store.bindDevice(
            appID: appID, account: account,
            registration: DeviceRegistration(token: DeviceToken(token)!, environment: .production, channel: .apns),
            credentialSelector: selector)
    }

    func push(_ gw: RunningGateway, _ appID: Int64) async throws -> MessageRecord {
        try await gw.runtime.engine.submit(
            PushJob(
                appID: appID, vendor: "native", audience: .allAccounts,
                content: PushContent(body: "x"), options: PushOptions()))
    }

    @Test func aDeviceIsSentThroughTheCredentialOfItsSelectorInItsEnvironmentOthersThroughTheDefault() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp()
        _ = try await addKey(gw, appID, keyID: "DEFAULT001", .production, selector: nil)
        _ = try await addKey(gw, appID, keyID: "BUSI1001PR", .production, selector: "1001")
        // Newer, same selector, the other environment: not the one for a production device.
        _ = try await addKey(gw, appID, keyID: "BUSI1001SB", .sandbox, selector: "1001")
        // Newer than the default, but a selector credential is never the default.
        _ = try await addKey(gw, appID, keyID: "BUSI2002PR", .production, selector: "2002")
        let selected = token(1, prefix: "5e")
        let plain = token(2, prefix: "de")
        try await bind(gw, appID, "alice", selected, selector: "1001")
        try await bind(gw, appID, "bob", plain, selector: nil)

        let message = try await push(gw, appID)
        let status = try await DeliveryWait.until(gw.runtime.engine, message.id) {
            $0.record.state == .completed && $0.counts.delivered == 2
        }
        #expect(status.counts.held == 0)
        let byToken = Dictionary(
            uniqueKeysWithValues: try #require(gw.runtime.localMock).receivedNotifications().map {
                ($0.deviceToken, $0.keyID)
            })
        #expect(byToken[selected] == "BUSI1001PR")
        #expect(byToken[plain] == "DEFAULT001")
    }

    @Test func aSelectorOnlyTheOtherEnvironmentCarriesUsesThatCredential() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp()
        // An Easemob-style certificate name: the credential implies its environment.
        _ = try await addKey(gw, appID, keyID: "NOTIFIER01", .sandbox, selector: "ios-dev")
        let device = token(1, prefix: "5b")
        try await bind(gw, appID, "alice", device, selector: "ios-dev")
        let message = try await push(gw, appID)
        _ = try await DeliveryWait.until(gw.runtime.engine, message.id) {
            $0.record.state == .completed && $0.counts.delivered == 1
        }
        #expect(try #require(gw.runtime.localMock).receivedNotifications().map(\.keyID) == ["NOTIFIER01"])
    }

    @Test func aSelectorNamingNoCredentialIsHeldAndReleasedWhenOneIsAdded() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, _) = try await gw.createApp()
        _ = try await addKey(gw, appID, keyID: "DEFAULT001", .production, selector: nil)
        let orphan = token(1, prefix: "0f")
        let plain = token(2, prefix: "de")
        try await bind(gw, appID, "alice", orphan, selector: "3003")
        try await bind(gw, appID, "bob", plain, selector: nil)
        let mock = try #require(gw.runtime.localMock)

        let message = try await push(gw, appID)
        var status = try await DeliveryWait.until(gw.runtime.engine, message.id) {
            $0.record.state == .completed && $0.counts.held == 1 && $0.counts.delivered == 1
        }
        let held = try await gw.runtime.store.deliveries(messageID: message.id, state: .held, cursor: nil, limit: 10)
        #expect(held.items.map(\.token) == [orphan])
        #expect(held.items.first?.reason == "no_credential_for_selector")
        #expect(mock.receivedNotifications().map(\.deviceToken) == [plain], "the default credential is not used")

        // The credential for busiId 3003 arrives (in the other environment, even): released and sent with it.
        mock.resetRecorded()
        _ = try await addKey(gw, appID, keyID: "BUSI3003SB", .sandbox, selector: "3003")
        status = try await DeliveryWait.until(gw.runtime.engine, message.id) {
            $0.record.state == .completed && $0.counts.delivered == 2
        }
        #expect(status.counts.held == 0)
        #expect(mock.receivedNotifications().map(\.deviceToken) == [orphan])
        #expect(mock.receivedNotifications().map(\.keyID) == ["BUSI3003SB"])
    }
}
