import Foundation
import Testing
import TuisongPluginTestKit

/// kill -9 while events are being sent, then restart: every event written reaches the app
/// server at least once, and a repeat carries the same `webhook-id`. Real processes, as
/// `CrashRecoveryTests`: `tuisong apns-mock` as APNs and `tuisong serve` twice, with a slow
/// receiver on loopback.
@Suite(.serialized) struct WebhookCrashTests {
    @Test func killWhileSendingLosesNoEvent() async throws {
        let crash = CrashRecoveryTests()
        guard
            let stage = try await CrashRecoveryTests.Stage.make(
                crash, name: "hooks", latencyMilliseconds: 5, delivery: [:])
        else { return }
        defer { stage.tearDown() }
        let receiver = try WebhookReceiver()
        // Until the kill, an answer takes 1 s: at 8 requests at a time the 300 events take ~37 s
        // to send, so the kill lands while they are being sent however slowly the 300 pushes go
        // on a loaded machine (at 40 ms every event had been sent before the pushes were done,
        // 1 run in ~10 at load 20).
        receiver.slow(.seconds(1))
        var env = stage.env
        // The killed node's claimed events are sent again once its lease ends: 5 s rather than
        // the default 60 s, which this test would otherwise wait out in real time (a real process).
        // Still above one attempt here (1 s, timed out at 4 s), so the live node's own sends are
        // not repeated.
        env["TUISONG_WEBHOOKS_LEASE_SECONDS"] = "5"
        env["TUISONG_WEBHOOKS_TIMEOUT_SECONDS"] = "4"
        let (port, key) = (stage.port, stage.key)

        let first = try CrashRecoveryTests.Spawned(["serve"], environment: env)
        defer { first.terminate() }
        try await crash.waitForHealth(port)
        let created = try await http(
            "POST", "http://127.0.0.1:\(port)/api/v1/webhooks", key: key,
            json: ["url": receiver.url, "events": ["message.completed"]])
        #expect(created.status == 201)
        var messages: Set<Int> = []
        for n in 1...300 {
            let push = try await http(
                "POST", "http://127.0.0.1:\(port)/api/v1/push", key: key,
                json: ["audience": ["tokens": [token(n, prefix: "d0")]], "notification": ["alert": "\(n)"]])
            if let id = push.jsonObject["message_id"] as? Int { messages.insert(id) }
        }
        #expect(messages.count == 300)
        _ = try await receiver.wait { $0.count >= 40 }
        first.kill9()
        #expect(receiver.all.count < 300, "the kill must land while events are still being sent")
        receiver.slow(.milliseconds(40))

        let second = try CrashRecoveryTests.Spawned(["serve"], environment: env)
        defer { second.terminate() }
        try await crash.waitForHealth(port)
        func completed(_ received: [WebhookReceiver.Received]) -> [Int: Set<String>] {
            var ids: [Int: Set<String>] = [:]
            for r in received {
                if let id = r.json?["data"]?["message_id"]?.intValue { ids[Int(id), default: []].insert(r.id) }
            }
            return ids
        }
        let all = try await receiver.wait(timeout: .seconds(120)) { Set(completed($0).keys).isSuperset(of: messages) }
        let byMessage = completed(all)
        #expect(Set(byMessage.keys) == messages, "every message's completion reached the app server")
        #expect(byMessage.values.allSatisfy { $0.count == 1 }, "a repeat carries the same webhook-id")
        await receiver.stop()
    }
}
