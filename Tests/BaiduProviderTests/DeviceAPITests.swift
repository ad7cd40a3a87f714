import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import BaiduProvider

/// `/baidu/device/*`: what the BPush iOS SDK did, over loopback HTTP.
@Suite(.serialized) struct DeviceAPITests {
    @Test(arguments: PluginStoreBackend.allCases) func bindAnswersStableIDs(_ backend: PluginStoreBackend) async throws
    {
        try await withFixture(on: backend) { f in
            let response = try await f.device(
                "bind",
                ["apikey": BaiduFixture.apiKey, "device_token": token(1).uppercased(), "push_mode": "development"])
            #expect(response.status == 200)
            #expect(response.errorCode == 0)
            #expect(response.requestID != nil)
            let parameters = response.parameters
            #expect(parameters["app_id"] as? String == "1234567")
            let userID = try #require(parameters["user_id"] as? String)
            let channelID = try #require(parameters["channel_id"] as? String)
            #expect(userID.count == 19 && channelID.count == 19 && userID != channelID)

            let again = try await f.bind(token(1))
            #expect(again.userID == userID && again.channelID == channelID)
            let other = try await f.bind(token(2))
            #expect(other.channelID != channelID && other.userID != userID)

            // The re-bind (production) moved the device to the production environment.
            let device = try await f.deviceRecord(channel: channelID)
            #expect(device.token == token(1) && device.environment == .production)
            #expect(device.userID == userID)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func tagsOnTheBoundDevice(_ backend: PluginStoreBackend) async throws
    {
        try await withFixture(on: backend) { f in
            try await f.bind(token(1))
            let base: [String: Any] = ["apikey": BaiduFixture.apiKey, "device_token": token(1)]
            var set = try await f.device("set_tags", base.merging(["tags": ["news", "体育"]]) { $1 })
            #expect(set.errorCode == 0, "\(set.text)")
            #expect((set.parameters["details"] as? [[String: Any]])?.map { $0["tag"] as? String } == ["news", "体育"])
            set = try await f.device("set_tags", base.merging(["tag": "vip"]) { $1 })
            #expect(set.errorCode == 0)

            let deleted = try await f.device("del_tags", base.merging(["tags": ["news", "never-set"]]) { $1 })
            #expect((deleted.parameters["details"] as? [[String: Any]])?.map { $0["result"] as? Int } == [0, 1])

            let listed = try await f.device("list_tags", base)
            #expect(listed.parameters["tag_num"] as? Int == 2)
            #expect(
                (listed.parameters["tags"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["vip", "体育"])

            // A wrong channel_id for this token is not its binding.
            let mismatched = try await f.device("list_tags", base.merging(["channel_id": "1234"]) { $1 })
            expectError(mismatched, 30608)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func unboundDevicesGet30608(_ backend: PluginStoreBackend)
        async throws
    {
        try await withFixture(on: backend) { f in
            let (_, channelID) = try await f.bind(token(1))
            let base: [String: Any] = ["apikey": BaiduFixture.apiKey, "device_token": token(1)]
            #expect(try await f.device("set_tags", base.merging(["tag": "vip"]) { $1 }).errorCode == 0)
            let unbound = try await f.device("unbind", base)
            #expect(unbound.status == 200 && unbound.errorCode == 0, "\(unbound.text)")
            #expect(try await f.baidu.device(appID: f.app.id, channelID: channelID) == nil)
            #expect(try await f.baidu.tagDeviceCount(appID: f.app.id, name: "vip") == 0)

            expectError(try await f.device("set_tags", base.merging(["tag": "vip"]) { $1 }), 30608, status: 404)
            expectError(try await f.device("del_tags", base.merging(["tag": "vip"]) { $1 }), 30608)
            expectError(try await f.device("list_tags", base), 30608)
            expectError(try await f.device("unbind", base), 30608)
            // Never bound at all.
            expectError(
                try await f.device("list_tags", ["apikey": BaiduFixture.apiKey, "device_token": token(9)]), 30608)
            // Bound again: the same channel, tag calls work again.
            #expect(try await f.bind(token(1)).channelID == channelID)
            #expect(try await f.device("list_tags", base).errorCode == 0)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func badInput(_ backend: PluginStoreBackend) async throws {
        try await withFixture(on: backend) { f in
            try await f.bind(token(1))
            expectError(
                try await f.device("bind", ["apikey": "nope", "device_token": token(1), "push_mode": "production"]),
                30603, status: 401)
            expectError(
                try await f.device("bind", ["device_token": token(1), "push_mode": "production"]), 30602,
                mentioning: "apikey")
            expectError(
                try await f.device("bind", ["apikey": BaiduFixture.apiKey, "push_mode": "production"]), 30602,
                mentioning: "device_token")
            expectError(
                try await f.device(
                    "bind", ["apikey": BaiduFixture.apiKey, "device_token": "xyz", "push_mode": "production"]),
                30602, mentioning: "device_token")
            expectError(
                try await f.device(
                    "bind", ["apikey": BaiduFixture.apiKey, "device_token": token(1), "push_mode": "dev"]),
                30602, mentioning: "push_mode")
            let notJSON = try await f.http(
                method: "POST", url: "\(f.baseURL)/baidu/device/bind", body: Data("apikey=x".utf8),
                contentType: "application/x-www-form-urlencoded")
            expectError(notJSON, 30602)

            // A 200-character tag among good ones: refused, and none of them is set.
            let long = String(repeating: "t", count: 200)
            expectError(
                try await f.device(
                    "set_tags", ["apikey": BaiduFixture.apiKey, "device_token": token(1), "tags": ["ok", long]]),
                30602, mentioning: "128")
            let listed = try await f.device("list_tags", ["apikey": BaiduFixture.apiKey, "device_token": token(1)])
            #expect(listed.parameters["tag_num"] as? Int == 0)

            // Unknown device routes answer in Baidu's dialect.
            let unknown = try await f.http(
                method: "POST", url: "\(f.baseURL)/baidu/device/nope", body: Data("{}".utf8),
                contentType: "application/json")
            expectError(unknown, 30601, status: 404)
        }
    }
}
