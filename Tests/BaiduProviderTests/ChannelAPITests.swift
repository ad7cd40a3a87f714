import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import BaiduProvider

/// Channel REST API 2.0 over loopback, every call signed by the Python signer.
@Suite(.serialized) struct ChannelAPITests {
    @Test(arguments: PluginStoreBackend.allCases) func pushToUserKeepsTheMessageForFetch(_ backend: PluginStoreBackend)
        async throws
    {
        try await withFixture(on: backend) { f in
            let (userID, channelID) = try await f.bind(token(1))
            try await f.bind(token(2))
            let message = #"{"aps":{"alert":"订单已发货","badge":1},"order":7}"#
            let pushed = expectSuccess(
                try await f.channel(
                    "push_msg",
                    [
                        "push_type": "1", "user_id": userID, "message_type": "1", "messages": message,
                        "msg_keys": #"["order-7"]"#, "message_expires": "3600",
                    ]))
            #expect(pushed["success_amount"] as? Int == 1)
            let msgIDs = try #require(pushed["msgids"] as? [String])
            #expect(msgIDs.count == 1)

            let job = try #require(f.gateway.jobs.last)
            let device = try await f.deviceRecord(channel: channelID)
            #expect(job.audience == .devices([device.id]))
            #expect(job.vendor == "baidu" && job.vendorMessageID == msgIDs[0])
            #expect(job.options.collapseID == "order-7")
            #expect(job.options.environment == .production)
            #expect(job.options.pushType == .alert)
            #expect(job.options.expiration == f.clock.now.addingTimeInterval(3600))
            let payload = payloadJSON(job)
            #expect((payload["aps"] as? [String: Any])?["alert"] as? String == "订单已发货")
            #expect(payload["order"] as? Int == 7)

            #expect(expectSuccess(try await f.channel("fetch_msgcount", ["user_id": userID]))["total_num"] as? Int == 1)
            let fetched = expectSuccess(try await f.channel("fetch_msg", ["user_id": userID], channel: channelID))
            let kept = try #require((fetched["messages"] as? [[String: Any]])?.first)
            #expect(kept["msg_id"] as? String == msgIDs[0])
            #expect(kept["message"] as? String == message)
            #expect(kept["msg_key"] as? String == "order-7")
            #expect(kept["message_type"] as? Int == 1)
            #expect(kept["channel_id"] as? String == channelID)

            let deleted = expectSuccess(
                try await f.channel("delete_msg", ["user_id": userID, "msg_ids": #"["\#(msgIDs[0])","1"]"#]))
            #expect(deleted["success_amount"] as? Int == 1)
            #expect(expectSuccess(try await f.channel("fetch_msgcount", ["user_id": userID]))["total_num"] as? Int == 0)
            // Kept messages expire with the message.
            _ = try await f.channel(
                "push_msg", ["push_type": "1", "user_id": userID, "messages": #""ping""#, "message_expires": "60"])
            f.clock.advance(by: 61)
            #expect(expectSuccess(try await f.channel("fetch_msgcount", ["user_id": userID]))["total_num"] as? Int == 0)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func pushToTagAndToAll(_ backend: PluginStoreBackend) async throws {
        try await withFixture(on: backend) { f in
            let (userID, _) = try await f.bind(token(1))
            try await f.bind(token(2))
            let tid = expectSuccess(try await f.channel("set_tag", ["tag": "vip", "user_id": userID]))["tid"] as? Int
            #expect(tid != nil)
            let toTag = expectSuccess(
                try await f.channel(
                    "push_msg",
                    [
                        "push_type": "2", "tag": "vip", "message_type": "1", "messages": #""hello vip""#,
                        "deploy_status": "1",
                    ]))
            #expect(toTag["success_amount"] as? Int == 1)
            #expect(f.gateway.jobs.last?.audience == .tag("vip"))
            #expect(f.gateway.jobs.last?.options.environment == .sandbox)
            expectError(
                try await f.channel("push_msg", ["push_type": "2", "tag": "nobody", "messages": #""x""#]), 30611,
                status: 404)

            // message_type 0: a silent background push carrying the message.
            expectSuccess(try await f.channel("push_msg", ["push_type": "3", "messages": #"{"cmd":"sync"}"#]))
            let silent = try #require(f.gateway.jobs.last)
            #expect(silent.audience == .all)
            #expect(silent.options.pushType == .background)
            #expect(silent.options.priority == .powerAware)
            #expect(payloadJSON(silent)["aps"] as? [String: Int] == ["content-available": 1])
            #expect(payloadJSON(silent)["cmd"] as? String == "sync")

            // Several messages at once, one key each.
            let two = expectSuccess(
                try await f.channel(
                    "push_msg",
                    [
                        "push_type": "3", "message_type": "1", "messages": #"["one",{"aps":{"alert":"two"}}]"#,
                        "msg_keys": #"["a","b"]"#,
                    ]))
            #expect((two["msgids"] as? [String])?.count == 2)
            #expect(f.gateway.jobs.suffix(2).map { $0.options.collapseID } == ["a", "b"])
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func tagsBindingsAndDeviceType(_ backend: PluginStoreBackend)
        async throws
    {
        try await withFixture(on: backend) { f in
            let (user1, channel1) = try await f.bind(token(1))
            let (user2, _) = try await f.bind(token(2))
            expectSuccess(try await f.channel("set_tag", ["tag": "news"]))
            expectSuccess(try await f.channel("set_tag", ["tag": "news", "user_id": user1]))
            expectSuccess(try await f.channel("set_tag", ["tag": "news", "user_id": user2]))
            expectSuccess(try await f.channel("set_tag", ["tag": "sports", "user_id": user2]))

            let fetched = expectSuccess(try await f.channel("fetch_tag", ["start": "0", "limit": "1"]))
            #expect(fetched["total_num"] as? Int == 2 && fetched["amount"] as? Int == 1)
            let first = try #require((fetched["tags"] as? [[String: Any]])?.first)
            #expect(first["name"] as? String == "news")
            #expect(first["create_time"] as? Int == f.now)

            let userTags = expectSuccess(try await f.channel("query_user_tags", ["user_id": user2]))
            #expect(userTags["tag_num"] as? Int == 2)
            // delete_tag with a user only takes that user out of the tag.
            expectSuccess(try await f.channel("delete_tag", ["tag": "news", "user_id": user2]))
            #expect(try await f.baidu.tagDeviceCount(appID: f.app.id, name: "news") == 1)
            expectSuccess(try await f.channel("delete_tag", ["tag": "news"]))
            #expect(try await f.baidu.tag(appID: f.app.id, name: "news") == nil)
            expectError(try await f.channel("delete_tag", ["tag": "news"]), 30611)

            let binds = expectSuccess(try await f.channel("query_bindlist", ["user_id": user1]))
            #expect(binds["total_num"] as? Int == 1)
            let bind = try #require((binds["binds"] as? [[String: Any]])?.first)
            #expect((bind["channel_id"] as? NSNumber)?.stringValue == channel1)
            #expect(bind["device_type"] as? Int == 4 && bind["user_id"] as? String == user1)
            expectSuccess(try await f.channel("query_bindlist", ["user_id": user1], channel: channel1))
            expectError(try await f.channel("query_bindlist", ["user_id": "42"]), 30608)

            expectSuccess(try await f.channel("verify_bind", ["user_id": user1]))
            expectError(try await f.channel("verify_bind", ["user_id": "42"]), 30608, status: 404)

            #expect(
                expectSuccess(try await f.channel("query_device_type", channel: channel1))["device_type"] as? Int == 4)
            expectError(try await f.channel("query_device_type", channel: "1234567890123456789"), 30608)
            expectError(try await f.channel("query_device_type"), 30602, mentioning: "channel_id")
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func channelIDGoesWhereTheReferenceSays(_ backend: PluginStoreBackend)
        async throws
    {
        try await withFixture(on: backend) { f in
            let (userID, channelID) = try await f.bind(token(1))
            // push_msg takes channel_id in the body…
            expectSuccess(
                try await f.channel(
                    "push_msg", ["push_type": "1", "user_id": userID, "channel_id": channelID, "messages": #""x""#]))
            expectError(
                try await f.channel(
                    "push_msg", ["push_type": "1", "user_id": userID, "messages": #""x""#], channel: channelID),
                30602, mentioning: "channel_id")
            // …query_device_type in the path.
            expectError(
                try await f.channel("query_device_type", ["channel_id": channelID]), 30602, mentioning: "channel_id")
            // A user on a channel that is not theirs.
            let (_, other) = try await f.bind(token(2))
            expectError(
                try await f.channel(
                    "push_msg", ["push_type": "1", "user_id": userID, "channel_id": other, "messages": #""x""#]),
                30608)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func badInputLeavesNothingBehind(_ backend: PluginStoreBackend)
        async throws
    {
        try await withFixture(on: backend) { f in
            let (userID, _) = try await f.bind(token(1))
            expectError(
                try await f.channel("push_msg", ["push_type": "one", "messages": #""x""#]), 30602, status: 400,
                mentioning: "push_type")
            expectError(
                try await f.channel("push_msg", ["push_type": "3", "messages": "not json{"]), 30602,
                mentioning: "messages")
            expectError(
                try await f.channel("push_msg", ["push_type": "1", "messages": #""x""#]), 30602, mentioning: "user_id")
            expectError(
                try await f.channel("push_msg", ["push_type": "3", "messages": #""x""#, "device_type": "5"]), 30602,
                mentioning: "device_type")
            expectError(
                try await f.channel("push_msg", ["push_type": "3", "messages": #"["a","b"]"#, "msg_keys": #"["k"]"#]),
                30602,
                mentioning: "msg_keys")
            // Over 4 KB, and the first of two messages was fine: nothing is pushed or kept.
            let big = #"{"aps":{"alert":"\#(String(repeating: "长", count: 1500))"}}"#
            expectError(
                try await f.channel(
                    "push_msg",
                    ["push_type": "1", "user_id": userID, "message_type": "1", "messages": #"["fine", \#(big)]"#]),
                30602, mentioning: "4096")
            expectError(
                try await f.channel("set_tag", ["tag": String(repeating: "t", count: 200)]), 30602, mentioning: "tag")
            expectError(try await f.channel("no_such_method"), 30601)
            expectError(
                try await f.rest(
                    "/rest/2.0/channel/channel", ["method": "push_msg", "push_type": "3", "messages": #""x""#],
                    method: "GET"), 30601, status: 405)
            expectSuccess(try await f.rest("/rest/2.0/channel/channel", ["method": "fetch_tag"], method: "GET"))
            expectError(
                try await f.channel("push_msg", ["push_type": "1", "user_id": "12", "messages": #""x""#]), 30608)
            #expect(f.gateway.jobs.isEmpty)
            #expect(try await f.messageCount() == 0)
            #expect(expectSuccess(try await f.channel("fetch_msgcount", ["user_id": userID]))["total_num"] as? Int == 0)
            #expect(try await f.baidu.tags(appID: f.app.id, name: nil, start: 0, limit: 10).total == 0)
        }
    }
}
