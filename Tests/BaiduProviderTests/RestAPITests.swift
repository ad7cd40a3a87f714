import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import BaiduProvider

/// REST API 3.0 over loopback, every call signed by the Python signer.
@Suite(.serialized) struct RestAPITests {
    static let alert =
        #"{"aps":{"alert":{"title":"T","body":"B"},"sound":"default","thread-id":"t1","mutable-content":1},"deep_link":"app://x"}"#

    @Test(arguments: PluginStoreBackend.allCases) func singleDeviceAndItsStatus(_ backend: PluginStoreBackend)
        async throws
    {
        try await withFixture(on: backend) { f in
            let (_, channelID) = try await f.bind(token(1), mode: "development")
            let sent = expectSuccess(
                try await f.v3(
                    "push/single_device",
                    [
                        "channel_id": channelID, "msg_type": "1", "msg": Self.alert, "msg_expires": "600",
                        "deploy_status": "1", "topic_id": "promo_1",
                    ]))
            let msgID = try #require(sent["msg_id"] as? String)
            #expect(sent["send_time"] as? Int == f.now)

            let job = try #require(f.gateway.jobs.last)
            let device = try await f.deviceRecord(channel: channelID)
            #expect(job.audience == .devices([device.id]))
            #expect(job.options.environment == .sandbox)
            #expect(job.options.expiration == f.clock.now.addingTimeInterval(600))
            #expect(job.labels["topic_id"] == "promo_1")
            let payload = payloadJSON(job)
            let aps = try #require(payload["aps"] as? [String: Any])
            #expect(aps["thread-id"] as? String == "t1" && aps["mutable-content"] as? Int == 1)
            #expect(aps["sound"] as? String == "default")
            #expect(payload["deep_link"] as? String == "app://x")

            var status = expectSuccess(try await f.v3("report/query_msg_status", ["msg_id": msgID]))
            var result = try #require((status["result"] as? [[String: Any]])?.first)
            #expect(result["status"] as? Int == 1 && result["success"] as? Int == 0)

            let record = try #require(try await f.baidu.messages(appID: f.app.id, msgIDs: [msgID]).first)
            try await f.gateway.deliver(messageID: record.id, delivered: 1)
            status = expectSuccess(try await f.v3("report/query_msg_status", ["msg_id": #"["\#(msgID)"]"#]))
            result = try #require((status["result"] as? [[String: Any]])?.first)
            #expect(result["msg_id"] as? String == msgID)
            #expect(result["status"] as? Int == 0 && result["success"] as? Int == 1)
            expectError(try await f.v3("report/query_msg_status", ["msg_id": "12345"]), 30605)

            // Topic statistics come from the same delivery results.
            let topics = expectSuccess(try await f.v3("topic/query_list"))
            let topic = try #require((topics["result"] as? [[String: Any]])?.first)
            #expect(topic["topic_id"] as? String == "promo_1")
            #expect(topic["push_cnt"] as? Int == 1 && topic["ack_cnt"] as? Int == 1)
            let daily = expectSuccess(try await f.v3("report/statistic_topic", ["topic_id": "promo_1"]))
            let days = try #require(daily["result"] as? [String: [String: Int]])
            #expect(days.count == 7 && days.values.map { $0["ack"] ?? 0 }.reduce(0, +) == 1)
            let records = expectSuccess(try await f.v3("report/query_topic_records", ["topic_id": "promo_1"]))
            #expect((records["result"] as? [[String: Any]])?.first?["msg_id"] as? String == msgID)

            // Kept for the 2.0 mailbox too.
            let user = try #require(device.userID)
            #expect(expectSuccess(try await f.channel("fetch_msgcount", ["user_id": user]))["total_num"] as? Int == 1)
            expectError(
                try await f.v3("push/single_device", ["channel_id": "1234567890123456789", "msg": Self.alert]), 30608)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func scheduledPushIsATimerThatCanBeCancelled(
        _ backend: PluginStoreBackend
    ) async throws {
        try await withFixture(on: backend) { f in
            try await f.bind(token(1))
            let sendTime = f.now + 3600
            let sent = expectSuccess(
                try await f.v3("push/all", ["msg_type": "1", "msg": Self.alert, "send_time": String(sendTime)]))
            let timerID = try #require(sent["timer_id"] as? String)
            #expect(sent["send_time"] as? Int == sendTime)
            let job = try #require(f.gateway.jobs.last)
            #expect(job.sendAt == Date(timeIntervalSince1970: TimeInterval(sendTime)))
            #expect(job.audience == .all)
            // msg_expires counts from the send time.
            #expect(job.options.expiration == Date(timeIntervalSince1970: TimeInterval(sendTime + 18_000)))

            let timers = expectSuccess(try await f.v3("timer/query_list"))
            #expect(timers["total_num"] as? Int == 1)
            let timer = try #require((timers["result"] as? [[String: Any]])?.first)
            #expect(timer["timer_id"] as? String == timerID)
            #expect(timer["msg"] as? String == Self.alert)
            #expect(timer["send_time"] as? Int == sendTime)
            #expect(timer["msg_type"] as? Int == 1 && timer["range_type"] as? Int == 1)
            let records = expectSuccess(try await f.v3("report/query_timer_records", ["timer_id": timerID]))
            #expect((records["result"] as? [Any])?.isEmpty == true)

            expectSuccess(try await f.v3("timer/cancel", ["timer_id": timerID]))
            #expect(expectSuccess(try await f.v3("timer/query_list"))["total_num"] as? Int == 0)
            let record = try #require(try await f.baidu.timerMessage(appID: f.app.id, timerID: timerID))
            #expect(record.state == .cancelled)
            expectError(try await f.v3("timer/cancel", ["timer_id": timerID]), 30605)
            expectError(try await f.v3("timer/cancel", ["timer_id": "999"]), 30605)

            // A tag push can be scheduled too; it fires, then has a timer record.
            expectSuccess(try await f.v3("app/create_tag", ["tag": "vip"]))
            let tagged = expectSuccess(
                try await f.v3(
                    "push/tags", ["type": "1", "tag": "vip", "msg": #""x""#, "send_time": String(f.now + 120)]))
            let tagTimer = try #require(tagged["timer_id"] as? String)
            let fired = try #require(try await f.baidu.timerMessage(appID: f.app.id, timerID: tagTimer))
            f.clock.advance(by: 121)
            try await f.gateway.deliver(messageID: fired.id, delivered: 0)
            let tagRecords = expectSuccess(try await f.v3("report/query_timer_records", ["timer_id": tagTimer]))
            #expect((tagRecords["result"] as? [[String: Any]])?.first?["msg_id"] as? String == fired.vendorMessageID)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func sendTimeMustBeAheadAndWithinAYear(_ backend: PluginStoreBackend)
        async throws
    {
        try await withFixture(on: backend) { f in
            for sendTime in [f.now - 10, f.now + 30, f.now + 366 * 86_400] {
                expectError(
                    try await f.v3("push/all", ["msg": #""x""#, "send_time": String(sendTime)]), 30602,
                    mentioning: "send_time")
            }
            #expect(try await f.messageCount() == 0)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func tagsAndBatches(_ backend: PluginStoreBackend) async throws {
        try await withFixture(on: backend) { f in
            let (_, c1) = try await f.bind(token(1))
            let (_, c2) = try await f.bind(token(2))
            let unknown = "1234567890123456789"
            #expect(expectSuccess(try await f.v3("app/create_tag", ["tag": "vip"]))["result"] as? Int == 0)
            #expect(expectSuccess(try await f.v3("app/create_tag", ["tag": "vip"]))["result"] as? Int == 1)
            let added = expectSuccess(
                try await f.v3("tag/add_devices", ["tag": "vip", "channel_ids": #"["\#(c1)","\#(unknown)"]"#]))
            #expect((added["result"] as? [[String: Any]])?.map { $0["result"] as? Int } == [0, 1])
            #expect(expectSuccess(try await f.v3("tag/device_num", ["tag": "vip"]))["device_num"] as? Int == 1)
            let listed = expectSuccess(try await f.v3("app/query_tags"))
            let tag = try #require((listed["result"] as? [[String: Any]])?.first)
            #expect(listed["total_num"] as? Int == 1 && tag["tag"] as? String == "vip" && tag["tid"] is String)

            expectSuccess(try await f.v3("push/tags", ["type": "1", "tag": "vip", "msg_type": "1", "msg": Self.alert]))
            #expect(f.gateway.jobs.last?.audience == .tag("vip"))
            expectError(
                try await f.v3("push/tags", ["type": "2", "tag": "vip", "msg": Self.alert]), 30602, mentioning: "type")
            expectError(try await f.v3("push/tags", ["type": "1", "tag": "nope", "msg": Self.alert]), 30611)

            let removed = expectSuccess(
                try await f.v3("tag/del_devices", ["tag": "vip", "channel_ids": #"["\#(c1)","\#(c2)"]"#]))
            #expect((removed["result"] as? [[String: Any]])?.map { $0["result"] as? Int } == [0, 1])
            expectError(try await f.v3("tag/add_devices", ["tag": "nope", "channel_ids": #"["\#(c1)"]"#]), 30611)
            let eleven = "[" + (1...11).map { "\"\($0)\"" }.joined(separator: ",") + "]"
            expectError(
                try await f.v3("tag/add_devices", ["tag": "vip", "channel_ids": eleven]), 30602,
                mentioning: "channel_ids")
            expectSuccess(try await f.v3("app/del_tag", ["tag": "vip"]))
            expectError(try await f.v3("app/del_tag", ["tag": "vip"]), 30611)
            expectError(
                try await f.v3("app/query_tags", ["tag": String(repeating: "x", count: 200)]), 30602, mentioning: "tag")

            let batch = expectSuccess(
                try await f.v3(
                    "push/batch_device",
                    [
                        "channel_ids": #"["\#(c1)","\#(c2)","\#(unknown)"]"#, "msg_type": "1",
                        "msg": Self.alert, "topic_id": "batch",
                    ]))
            #expect(batch["msg_id"] is String)
            let d1 = try await f.deviceRecord(channel: c1)
            let d2 = try await f.deviceRecord(channel: c2)
            #expect(f.gateway.jobs.last?.audience == .devices([d1.id, d2.id]))
            let tooMany = "[" + (0...10_000).map { "\"\(1_000_000 + $0)\"" }.joined(separator: ",") + "]"
            let jobs = f.gateway.jobs.count
            expectError(
                try await f.v3("push/batch_device", ["channel_ids": tooMany, "msg": Self.alert]), 30602,
                mentioning: "10000")
            expectError(
                try await f.v3("push/batch_device", ["channel_ids": #"["\#(unknown)"]"#, "msg": Self.alert]), 30608)
            expectError(try await f.v3("push/batch_device", ["channel_ids": "not json", "msg": Self.alert]), 30602)
            #expect(f.gateway.jobs.count == jobs)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func deviceStatistics(_ backend: PluginStoreBackend) async throws {
        try await withFixture(on: backend) { f in
            try await f.bind(token(1))
            let (_, c2) = try await f.bind(token(2))
            #expect(try await f.baidu.unbindDevice(appID: f.app.id, channelID: c2))
            let statistics = expectSuccess(try await f.v3("report/statistic_device"))
            #expect(statistics["total_num"] as? Int == 7)
            let days = try #require(statistics["result"] as? [String: [String: Int]])
            let today = try #require(days.max { Int($0.key)! < Int($1.key)! }?.value)
            #expect(today["new_term"] == 2 && today["del_term"] == 1 && today["total_term"] == 1)
            #expect(today["addup_term"] == 2 && today["online_term"] == 1)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func queriesAcceptGETAndPushesDoNot(_ backend: PluginStoreBackend)
        async throws
    {
        try await withFixture(on: backend) { f in
            expectSuccess(try await f.v3("app/query_tags", httpMethod: "GET"))
            expectError(try await f.v3("push/all", ["msg": #""x""#], httpMethod: "GET"), 30601, status: 405)
            expectError(try await f.v3("push/nothing"), 30601, status: 400)
            expectError(
                try await f.v3("push/all", ["msg": #""x""#, "device_type": "1"]), 30602, mentioning: "device_type")
            let big = #"{"aps":{"alert":"\#(String(repeating: "x", count: 4100))"}}"#
            expectError(try await f.v3("push/all", ["msg_type": "1", "msg": big]), 30602, mentioning: "4096")
            expectError(try await f.v3("push/all", ["msg_type": "1", "msg": "{broken"]), 30602, mentioning: "msg")
            #expect(try await f.messageCount() == 0)
        }
    }
}
