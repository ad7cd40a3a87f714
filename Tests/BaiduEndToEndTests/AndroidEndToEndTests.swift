import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongLookAlikes

@testable import BaiduProvider

/// `device_type` 3: Android phones bound through the device side, pushed in Baidu's Android
/// message format through the service each registered on; `device_type` 4 still APNs only.
extension GatewayEndToEndTests {
    /// The Android requests the look-alike received, by token: the service and the body.
    func androidReceived(_ gw: Gateway) -> [String: (service: AndroidPushService, body: JSONValue)] {
        var result: [String: (service: AndroidPushService, body: JSONValue)] = [:]
        for message in gw.mock.receivedAndroidMessages() {
            guard let body = try? JSONValue(parsing: message.body) else { continue }
            for token in message.tokens { result[token] = (message.service, body) }
        }
        return result
    }

    @Test func deviceType3ReachesAndroidPhonesAndDeviceType4TheIPhones() async throws {
        try await withGateway { gw in
            // No android_channel and no Android credential: the bind must name the service.
            let unnamed = try await gw.device("bind", ["device_type": 3, "device_token": "fcm-baidu-1"])
            #expect(unnamed.errorCode == 30602 && unnamed.errorMessage.contains("channel"), "\(unnamed.text)")
            #expect(unnamed.jsonObject["request_id"] is Int)
            // An APNs-shaped token is no Huawei token.
            let wrong = try await gw.device("bind", ["device_type": 3, "device_token": token(9), "channel": "huawei"])
            #expect(wrong.errorCode == 30602 && wrong.errorMessage.contains("device_token"), "\(wrong.text)")

            let huawei = try await gw.device(
                "bind", ["device_type": 3, "device_token": "huawei-baidu-1", "channel": "huawei"])
            #expect(huawei.errorCode == 0, "\(huawei.text)")
            let huaweiChannel = try #require(huawei.parameters["channel_id"] as? String)
            // The app's android_channel setting names the service of binds that do not.
            var app = gw.app
            app.vendorSettings["baidu"]?["android_channel"] = "fcm"
            try await gw.runtime.store.updateApp(app)
            let fcm = try await gw.device("bind", ["device_type": 3, "device_token": "fcm-baidu-1"])
            #expect(fcm.errorCode == 0, "\(fcm.text)")
            let fcmChannel = try #require(fcm.parameters["channel_id"] as? String)
            let iphone = try await gw.device("bind", ["device_token": token(1), "push_mode": "production"])
            let iphoneChannel = try #require(iphone.parameters["channel_id"] as? String)
            #expect(
                try await gw.baiduStore.device(appID: gw.app.id, channelID: huaweiChannel)?.channel == .huawei)
            #expect(try await gw.baiduStore.device(appID: gw.app.id, channelID: fcmChannel)?.channel == .fcm)
            // Device calls address Android devices by their token too; Baidu sees device type 3.
            #expect(
                try await gw.device("set_tags", ["device_token": "huawei-baidu-1", "tags": ["vip"]]).errorCode == 0)
            let type = expectSuccess(
                try await gw.rest("/rest/2.0/channel/\(huaweiChannel)", ["method": "query_device_type"]))
            #expect(type["device_type"] as? Int == 3)

            // One device, Baidu's Android notification: title, description, custom_content, the
            // intent of open_type 2; notification_builder_id and style have no counterpart.
            let msg = #"""
                {"title":"会员日","description":"全场八折","custom_content":{"coupon":"VIP8"},"notification_builder_id":0,"notification_basic_style":7,"open_type":2,"pkg_content":"intent://coupon#Intent;scheme=shop;end"}
                """#
            let single = expectSuccess(
                try await gw.rest(
                    "/rest/3.0/push/single_device",
                    ["channel_id": huaweiChannel, "device_type": "3", "msg_type": "1", "msg": msg]))
            let singleStatus = try await gw.completed(msgID: try #require(single["msg_id"] as? String))
            #expect(singleStatus.counts.delivered == 1, "\(singleStatus.failures)")
            let sent = try #require(androidReceived(gw)["huawei-baidu-1"])
            #expect(sent.service == .huawei)
            let notification = try #require(sent.body["message"]?["android"]?["notification"])
            #expect(notification["title"] == "会员日" && notification["body"] == "全场八折")
            #expect(notification["click_action"]?["intent"] == "intent://coupon#Intent;scheme=shop;end")
            let data = try JSONValue(parsing: try #require(sent.body["message"]?["data"]?.stringValue))
            #expect(data == ["coupon": "VIP8"])
            #expect(gw.mock.receivedNotifications().isEmpty)
            // To an iPhone's channel as device_type 3: no such device.
            expectError(
                try await gw.rest(
                    "/rest/3.0/push/single_device",
                    ["channel_id": iphoneChannel, "device_type": "3", "msg_type": "1", "msg": msg]),
                30608)

            // Everyone of type 3: both Android phones, each through its service; the iPhone skipped.
            gw.mock.resetRecorded()
            let all = expectSuccess(
                try await gw.rest("/rest/3.0/push/all", ["device_type": "3", "msg_type": "1", "msg": msg]))
            let allStatus = try await gw.completed(msgID: try #require(all["msg_id"] as? String))
            #expect(allStatus.counts.delivered == 2 && allStatus.skips == ["device_type": 1], "\(allStatus.skips)")
            let everyone = androidReceived(gw)
            #expect(everyone["fcm-baidu-1"]?.service == .fcm && everyone["huawei-baidu-1"]?.service == .huawei)
            #expect(everyone["fcm-baidu-1"]?.body["message"]?["notification"] == ["title": "会员日", "body": "全场八折"])
            #expect(everyone["fcm-baidu-1"]?.body["message"]?["data"] == ["coupon": "VIP8"])
            #expect(gw.mock.receivedNotifications().isEmpty)

            // A tag of type 3 through 2.0: the tagged Huawei phone only.
            gw.mock.resetRecorded()
            let tagged = expectSuccess(
                try await gw.rest(
                    "/rest/2.0/channel/channel",
                    [
                        "method": "push_msg", "push_type": "2", "tag": "vip", "device_type": "3",
                        "message_type": "1", "messages": #"{"title":"T","description":"D"}"#,
                    ]))
            #expect((tagged["msgids"] as? [String])?.count == 1)
            let tagStatus = try await gw.completed(msgID: try #require((tagged["msgids"] as? [String])?.first))
            #expect(tagStatus.counts.delivered == 1)
            #expect(Set(androidReceived(gw).keys) == ["huawei-baidu-1"])

            // Type 4 (and no type at all): the iPhone through APNs, Android phones skipped.
            for type in ["4", nil] {
                gw.mock.resetRecorded()
                var parameters = ["msg_type": "1", "msg": #"{"aps":{"alert":"iOS"}}"#]
                parameters["device_type"] = type
                let ios = expectSuccess(try await gw.rest("/rest/3.0/push/all", parameters))
                let iosStatus = try await gw.completed(msgID: try #require(ios["msg_id"] as? String))
                #expect(iosStatus.counts.delivered == 1 && iosStatus.skips == ["device_type": 2], "\(type ?? "none")")
                #expect(gw.mock.receivedNotifications().map(\.deviceToken) == [token(1)])
                #expect(gw.mock.receivedAndroidMessages().isEmpty)
            }
        }
    }
}

extension GatewayEndToEndTests {
    /// `title` "可以为空；如果为空则设为 appid 对应的应用名": an empty title is no title, so
    /// Huawei and Honor are sent the app's name as for a missing one. `open_type` 1 opens `url`:
    /// Huawei's click action type 2 (https pages only; another URL opens the app) and Honor's.
    @Test func anEmptyTitleIsTheAppsNameAndOpenType1OpensTheURL() async throws {
        try await withGateway { gw in
            for (token, channel) in [("huawei-baidu-7", "huawei"), ("honor-baidu-7", "honor")] {
                let bound = try await gw.device(
                    "bind", ["device_type": 3, "device_token": token, "channel": channel])
                #expect(bound.errorCode == 0, "\(bound.text)")
            }
            func push(_ msg: String) async throws -> [String: (service: AndroidPushService, body: JSONValue)] {
                gw.mock.resetRecorded()
                let all = expectSuccess(
                    try await gw.rest("/rest/3.0/push/all", ["device_type": "3", "msg_type": "1", "msg": msg]))
                let status = try await gw.completed(msgID: try #require(all["msg_id"] as? String))
                #expect(status.counts.delivered == 2, "\(status.failures)")
                return androidReceived(gw)
            }

            let https = try await push(
                #"{"title":"","description":"秒杀开始","open_type":1,"url":"https://shop.example.com/sale?id=7"}"#)
            let huawei = try #require(https["huawei-baidu-7"]?.body["message"]?["android"]?["notification"])
            // The app's name, as for a message without a title (never `"title":""`).
            #expect(huawei["title"] == .string(gw.app.name) && huawei["body"] == "秒杀开始", "\(huawei)")
            #expect(huawei["click_action"] == ["type": 2, "url": "https://shop.example.com/sale?id=7"])
            let honor = try #require(https["honor-baidu-7"]?.body["android"]?["notification"])
            #expect(honor["title"] == .string(gw.app.name) && honor["body"] == "秒杀开始", "\(honor)")
            #expect(honor["clickAction"] == ["type": 2, "url": "https://shop.example.com/sale?id=7"])

            // Huawei opens https pages only: a plain http URL opens the app there; Honor takes it.
            let http = try await push(#"{"description":"D","open_type":1,"url":"http://shop.example.com/"}"#)
            #expect(
                http["huawei-baidu-7"]?.body["message"]?["android"]?["notification"]?["click_action"] == ["type": 3])
            #expect(
                http["honor-baidu-7"]?.body["android"]?["notification"]?["clickAction"]
                    == ["type": 2, "url": "http://shop.example.com/"])

            // open_type 0 with a url: the app, as before.
            let app = try await push(#"{"title":"T","description":"D","open_type":0,"url":"https://x.example/"}"#)
            #expect(app["huawei-baidu-7"]?.body["message"]?["android"]?["notification"]?["click_action"] == ["type": 3])
            #expect(app["huawei-baidu-7"]?.body["message"]?["android"]?["notification"]?["title"] == "T")
        }
    }
}
