import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import TencentProvider

/// Issue #40 item 5 in Tencent's dialect: an app whose backlog is at
/// `delivery.max_backlog_per_app` is answered Tencent's own frequency limit, `ErrorCode` 60007
/// in its HTTP 200 envelope (Tencent's SDKs raise on any other status), with `Retry-After`;
/// nothing of the message is stored. The dispatcher is held, so what was accepted stays queued.
extension TencentGatewayEndToEndTests {
    @Test func aMessageOverTheBacklogBoundIsRefusedWith60007() async throws {
        let hold = try DispatcherHold()
        try await withGateway(
            environment: ["TUISONG_DELIVERY_MAX_BACKLOG_PER_APP": "1"], directory: hold.directory
        ) { gw in
            try await gw.importAccounts([("alice", "Alice"), ("bob", nil)])
            let line =
                #"{"From_Account":"alice","To_Account":"bob","MsgRandom":7,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"hi"}}]}"#
            _ = try await gw.ok("openim/sendmsg", line)
            let refused = try await gw.call("openim/sendmsg", line)
            #expect(refused.status == 200)
            #expect(refused.actionStatus == "FAIL" && refused.errorCode == 60007, "\(refused.text)")
            #expect((refused.jsonObject["ErrorInfo"] as? String)?.contains("frequency") == true)
            #expect(refused.header("Retry-After") == "1")
            #expect(try await gw.messageCount() == 1)
        }
    }
}
