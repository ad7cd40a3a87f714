import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import BaiduProvider

/// Issue #40 item 5 in Baidu's dialect: an app whose backlog is at
/// `delivery.max_backlog_per_app` is answered Baidu's own rate-limit answer, 30699 with HTTP 429
/// and `Retry-After`, and nothing of the push is stored. The dispatcher is held, so what was
/// accepted stays queued.
extension GatewayEndToEndTests {
    @Test func aPushOverTheBacklogBoundIsRefusedWith30699() async throws {
        let hold = try DispatcherHold()
        try await withGateway(
            environment: ["TUISONG_DELIVERY_MAX_BACKLOG_PER_APP": "1"], directory: hold.directory
        ) { gw in
            let push = ["msg_type": "1", "msg": #"{"aps":{"alert":"早"}}"#]
            _ = expectSuccess(try await gw.rest("/rest/3.0/push/all", push))
            let refused = try await gw.rest("/rest/3.0/push/all", push)
            #expect(refused.status == 429, "\(refused.text)")
            #expect(refused.jsonObject["error_code"] as? Int == 30699)
            #expect((refused.jsonObject["error_msg"] as? String)?.hasPrefix("requests are too frequent") == true)
            #expect(refused.header("Retry-After") == "1")
            #expect(try await gw.runtime.store.messages(appID: gw.app.id, limit: 10).count == 1)
        }
    }
}
