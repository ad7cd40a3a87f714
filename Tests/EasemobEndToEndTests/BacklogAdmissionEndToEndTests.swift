import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import EasemobProvider

/// Issue #40 item 5 in Easemob's dialect: an app whose backlog is at
/// `delivery.max_backlog_per_app` is answered Easemob's own 429 `reach_limit` with
/// `Retry-After`, for the whole request: a message to several users is sent to all or none
/// (no message stored, no offline count raised). The dispatcher is held, so what was accepted
/// stays queued.
@Suite struct BacklogAdmissionEndToEndTests {
    @Test func messagesOverTheBacklogBoundAreRefusedWithReachLimit() async throws {
        let hold = try DispatcherHold()
        try await EasemobGateway.with(
            in: hold.directory, environment: ["TUISONG_DELIVERY_MAX_BACKLOG_PER_APP": "1"]
        ) { gw in
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "alice"], ["username": "bob"], ["username": "carol"]])
            let sent = try await gw.call(
                "POST", "/messages/users", ["from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "早"]],
                token: token)
            #expect(sent.status == 200, "\(sent.text)")

            let refused = try await gw.call(
                "POST", "/messages/users",
                ["from": "alice", "to": ["bob", "carol"], "type": "txt", "body": ["msg": "晚"]], token: token)
            #expect(refused.status == 429, "\(refused.text)")
            #expect(refused.error == "reach_limit")
            #expect(refused.header("Retry-After") == "1")
            #expect(try await gw.runtime.store.messages(appID: gw.app.id, limit: 10).count == 1)
            #expect(try await gw.runtime.store.badge(appID: gw.app.id, account: "bob") == 1)
            #expect(try await gw.runtime.store.badge(appID: gw.app.id, account: "carol") == 0)
        }
    }
}
