import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit

@testable import TencentProvider

extension TencentGatewayEndToEndTests {
    /// A push held for want of a credential is not released to the devices of an account
    /// deleted while it waited (`account_delete`: "its devices stop receiving"); issue #40, item 8.
    /// Local mode sends an app with no credential at all through the look-alike's own, so the
    /// devices name a busiId with no credential yet.
    @Test(arguments: PluginStoreBackend.allCases) func aHeldPushSkipsTheDevicesOfAnAccountDeletedMeanwhile(
        _ database: PluginStoreBackend
    ) async throws {
        try await withGateway(on: database) { gw in
            func addKey(_ keyID: String, busiID: String?) async throws {
                _ = try await gw.runtime.addCredential(
                    .p8(pem: try PrivateKey.generateP256().pkcs8PEM(), keyID: keyID, teamID: "TENCENT001"),
                    appID: gw.app.id, environment: .production, selector: busiID)
            }
            try await addKey("DEFAULT001", busiID: nil)
            try await gw.importAccounts([("alice", nil), ("bob", nil)])
            try await gw.setToken("alice", Self.token(1), busiID: 888)
            try await gw.setToken("bob", Self.token(2), busiID: 888)
            for account in ["alice", "bob"] { try await gw.background(account, unread: 0) }
            let pushed = try await gw.ok(
                "openim/batchsendmsg",
                #"{"To_Account":["alice","bob"],"MsgRandom":8,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"hi"}}]}"#
            )
            let key = try #require(pushed["MsgKey"] as? String)
            let record = try #require(try await gw.runtime.store.message(appID: gw.app.id, vendorMessageID: key))
            _ = try await DeliveryWait.until(gw.runtime.engine, record.id, timeout: .seconds(60)) {
                $0.record.state == .completed && $0.counts.held == 2
            }

            _ = try await gw.ok("im_open_login_svc/account_delete", #"{"DeleteItem":[{"UserID":"bob"}]}"#)
            try await addKey("BUSI888KEY", busiID: "888")
            let status = try await DeliveryWait.until(gw.runtime.engine, record.id, timeout: .seconds(60)) {
                $0.counts.delivered == 1 && $0.record.completedAt != nil
            }
            #expect(status.counts.held == 0 && status.counts.skipped == 1)
            #expect(try await gw.skipped(status) == [Self.token(2): "account_deleted"])
            #expect(gw.mock.receivedNotifications().map(\.deviceToken) == [Self.token(1)])
        }
    }
}
