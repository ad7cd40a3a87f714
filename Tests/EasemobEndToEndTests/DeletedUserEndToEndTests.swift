import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit

/// A push held for want of a credential is not released to the devices of a user deleted
/// while it waited (`DELETE users/{username}`); issue #40, item 8. Local mode sends an app with
/// no credential at all through the look-alike's own, so the devices name a notifier (a
/// certificate name) with no credential yet.
@Suite(.serialized) struct DeletedUserEndToEndTests {
    @Test func aHeldPushSkipsTheDevicesOfAUserDeletedMeanwhile() async throws {
        try await EasemobGateway.with { gw in
            _ = try await gw.runtime.addCredential(
                .p8(pem: try PrivateKey.generateP256().pkcs8PEM(), keyID: "EMDEFAULT1", teamID: "EMTEAM0001"),
                appID: gw.app.id, environment: .production)
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "alice"], ["username": "bob"], ["username": "dave"]])
            _ = try await gw.bind(token, user: "bob", device: "phone", apnsToken: apnsToken(1), notifier: "ios-push")
            _ = try await gw.bind(token, user: "dave", device: "phone", apnsToken: apnsToken(2), notifier: "ios-push")
            let answer = try await gw.call(
                "POST", "/messages/users",
                ["from": "alice", "to": ["bob", "dave"], "type": "txt", "body": ["msg": "x"]],
                token: token)
            var ids: [String: Int64] = [:]
            for user in ["bob", "dave"] {
                let msgID = try #require(answer.data[user] as? String)
                let record = try #require(try await gw.runtime.store.message(appID: gw.app.id, vendorMessageID: msgID))
                ids[user] = record.id
                // No credential for the notifier yet: held.
                _ = try await DeliveryWait.until(gw.runtime.engine, record.id) {
                    $0.record.state == .completed && $0.counts.held == 1
                }
            }

            #expect(try await gw.call("DELETE", "/users/dave", token: token).status == 200)
            _ = try await gw.runtime.addCredential(
                .p8(pem: try PrivateKey.generateP256().pkcs8PEM(), keyID: "EMDELETED1", teamID: "EMTEAM0001"),
                appID: gw.app.id, environment: .production, selector: "ios-push")
            _ = try await DeliveryWait.until(gw.runtime.engine, try #require(ids["bob"])) {
                $0.counts.delivered == 1 && $0.record.completedAt != nil
            }
            let dave = try await DeliveryWait.until(gw.runtime.engine, try #require(ids["dave"])) {
                $0.record.completedAt != nil
            }
            #expect(dave.counts.skipped == 1 && dave.counts.delivered == 0 && dave.counts.held == 0)
            #expect(dave.skips == ["account_deleted": 1])
            #expect(gw.mock.receivedNotifications().map(\.deviceToken) == [apnsToken(1)])
        }
    }
}
