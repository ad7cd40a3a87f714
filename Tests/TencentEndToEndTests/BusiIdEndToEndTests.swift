import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit

@testable import TencentProvider

extension TencentGatewayEndToEndTests {
    /// set_token's BusiId picks the app's credential with that busiId (credential selector);
    /// BusiId 0 the default one; an unknown BusiId is held until its credential is added.
    @Test func busiIdPicksTheCredential() async throws {
        try await withGateway { gw in
            func addKey(_ keyID: String, busiID: String?) async throws {
                _ = try await gw.runtime.addCredential(
                    .p8(pem: try PrivateKey.generateP256().pkcs8PEM(), keyID: keyID, teamID: "TENCENT001"),
                    appID: gw.app.id, environment: .production, selector: busiID)
            }
            try await addKey("DEFAULT001", busiID: nil)
            try await addKey("BUSI12345K", busiID: "12345")
            try await gw.importAccounts([("u1", nil), ("u2", nil), ("u3", nil)])
            try await gw.setToken("u1", Self.token(1), busiID: 12345)
            try await gw.setToken("u2", Self.token(2), busiID: 0)
            try await gw.setToken("u3", Self.token(3), busiID: 777)
            for n in 1...3 { try await gw.background("u\(n)", unread: 0) }

            let pushed = try await gw.ok(
                "openim/batchsendmsg",
                #"{"To_Account":["u1","u2","u3"],"MsgRandom":1,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"hi"}}]}"#
            )
            let key = try #require(pushed["MsgKey"] as? String)
            let record = try #require(try await gw.runtime.store.message(appID: gw.app.id, vendorMessageID: key))
            let status = try await DeliveryWait.until(gw.runtime.engine, record.id, timeout: .seconds(60)) {
                // Completed: the held row is written, not only counted live.
                $0.counts.delivered == 2 && $0.counts.held == 1 && $0.record.state == .completed
            }
            #expect(status.counts.delivered == 2 && status.counts.held == 1)
            let held = try await gw.runtime.store.deliveries(messageID: record.id, state: .held, cursor: nil, limit: 10)
            #expect(held.items.map(\.token) == [Self.token(3)])
            #expect(held.items.map(\.reason) == ["no_credential_for_selector"])
            let keys = Dictionary(
                uniqueKeysWithValues: gw.mock.receivedNotifications().map { ($0.deviceToken, $0.keyID) })
            #expect(keys[Self.token(1)] == "BUSI12345K")
            #expect(keys[Self.token(2)] == "DEFAULT001")
            #expect(keys[Self.token(3)] == nil)

            // Adding busiId 777's credential releases the held one.
            try await addKey("BUSI777KEY", busiID: "777")
            _ = await eventually(within: 60) {
                gw.mock.receivedNotifications().contains { $0.deviceToken == Self.token(3) }
            }
            let third = gw.mock.receivedNotifications().first { $0.deviceToken == Self.token(3) }
            #expect(third?.keyID == "BUSI777KEY")
            #expect(third.map { String(decoding: $0.payload, as: UTF8.self) } == #"{"aps":{"alert":"hi","badge":1}}"#)
        }
    }
}
