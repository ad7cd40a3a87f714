import Foundation
import Logging
import Synchronization
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongDelivery
import TuisongPluginTestKit
import TuisongStore

@testable import BaiduProvider

/// Baidu calls through the real delivery engine (its dispatcher, audiences and environment
/// filters, scheduling), with a sender that records instead of talking to APNs.
@Suite(.serialized) struct EngineIntegrationTests {
    static func engine(_ store: any GatewayStore, _ clock: ManualClock, _ transport: ScriptedTransport)
        -> DeliveryEngine
    {
        var logger = Logger(label: "engine")
        logger.logLevel = .critical
        return DeliveryEngine(
            store: store, transport: transport, settings: EngineFixture.settings(), clock: clock, logger: logger)
    }

    func completed(_ engine: DeliveryEngine, _ messageID: Int64) async throws -> MessageStatus {
        try await DeliveryWait.completed(engine, messageID)
    }

    /// The pushes of one message: those carrying its content.
    func sends(_ transport: ScriptedTransport, of messageID: Int64, _ f: BaiduFixture) async throws -> [OutgoingPush] {
        let message = try #require(try await f.store.message(id: messageID))
        return transport.pushes(carrying: message.content)
    }

    func messageID(_ f: BaiduFixture, msgID: String) async throws -> Int64 {
        try #require(try await f.baidu.messages(appID: f.app.id, msgIDs: [msgID]).first).id
    }

    @Test(arguments: PluginStoreBackend.allCases) func bindTagPushReachesExactlyTheRightDevices(
        _ backend: PluginStoreBackend
    ) async throws {
        let sender = ScriptedTransport()
        try await withFixture(on: backend, gateway: { Self.engine($0, $1, sender) }) { f in
            let engine = f.pushGateway as! DeliveryEngine
            try await engine.start()
            do {
                try await scenario(f, engine, sender)
            } catch {
                await engine.stop()
                throw error
            }
            await engine.stop()
        }
    }

    func scenario(_ f: BaiduFixture, _ engine: DeliveryEngine, _ sender: ScriptedTransport) async throws {
        try await f.bind(token(1))
        let (_, c2) = try await f.bind(token(2))
        try await f.bind(token(3), mode: "development")
        try await f.bind(token(4))
        for n in [1, 3] {
            let tagged = try await f.device(
                "set_tags", ["apikey": BaiduFixture.apiKey, "device_token": token(n), "tag": "vip"])
            #expect(tagged.errorCode == 0)
        }
        expectSuccess(try await f.v3("tag/add_devices", ["tag": "vip", "channel_ids": #"["\#(c2)"]"#]))

        let msg = #"{"aps":{"alert":{"title":"会员日","body":"全场八折"},"badge":5,"sound":"default"},"coupon":"VIP8"}"#
        let pushed = expectSuccess(
            try await f.v3("push/tags", ["type": "1", "tag": "vip", "msg_type": "1", "msg": msg, "deploy_status": "2"]))
        let id = try await messageID(f, msgID: try #require(pushed["msg_id"] as? String))
        let status = try await completed(engine, id)
        // The development device carries the tag but is not in production.
        #expect(Set(try await sends(sender, of: id, f).map(\.token)) == [token(1), token(2)])
        #expect(try await sends(sender, of: id, f).allSatisfy { $0.environment == .production })
        let payload = try #require(
            try await sends(sender, of: id, f).first?.content.rendered(for: .apns, APNsPayload.render))
        #expect(
            String(decoding: payload, as: UTF8.self)
                == #"{"aps":{"alert":{"body":"全场八折","title":"会员日"},"badge":5,"sound":"default"},"coupon":"VIP8"}"#)
        #expect(status.counts.delivered == 2)

        let reported = expectSuccess(try await f.v3("report/query_msg_status", ["msg_id": pushed["msg_id"] as! String]))
        let result = try #require((reported["result"] as? [[String: Any]])?.first)
        #expect(result["status"] as? Int == 0 && result["success"] as? Int == 2)

        // A timer fires when its time comes, as a silent push to every production device.
        let sendTime = f.now + 3600
        let timer = expectSuccess(
            try await f.v3("push/all", ["msg_type": "0", "msg": #"{"cmd":"refresh"}"#, "send_time": String(sendTime)]))
        let timerMessage = try await messageID(f, msgID: try #require(timer["msg_id"] as? String))
        // It does not fire early: on the fixture's clock the engine looks, finds nothing due, and
        // is idle.
        await engine.idle()
        #expect(try await sends(sender, of: timerMessage, f).isEmpty)
        f.clock.advance(by: 3601)
        _ = try await completed(engine, timerMessage)
        let fired = try await sends(sender, of: timerMessage, f)
        #expect(Set(fired.map(\.token)) == [token(1), token(2), token(4)])
        #expect(fired.first?.headers.pushType == .background)
        #expect(
            String(decoding: fired.first?.content.rendered(for: .apns, APNsPayload.render) ?? [], as: UTF8.self)
                == #"{"aps":{"content-available":1},"cmd":"refresh"}"#)
        let records = expectSuccess(
            try await f.v3("report/query_timer_records", ["timer_id": try #require(timer["timer_id"] as? String)]))
        #expect((records["result"] as? [[String: Any]])?.first?["status"] as? Int == 0)

        // After an unbind the device gets nothing.
        let unbound = try await f.device("unbind", ["apikey": BaiduFixture.apiKey, "device_token": token(1)])
        #expect(unbound.errorCode == 0)
        let all = expectSuccess(
            try await f.channel("push_msg", ["push_type": "3", "message_type": "1", "messages": #""hi""#]))
        let allID = try await messageID(f, msgID: try #require((all["msgids"] as? [String])?.first))
        _ = try await completed(engine, allID)
        #expect(Set(try await sends(sender, of: allID, f).map(\.token)) == [token(2), token(4)])
    }
}
