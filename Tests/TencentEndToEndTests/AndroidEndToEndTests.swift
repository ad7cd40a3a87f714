import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TencentProvider
@testable import TuisongGateway

extension TencentGatewayEndToEndTests {
    /// One account with an iPhone, a Huawei and an FCM phone, each reporting its token with
    /// its certificate's BusiId: a sendmsg with ApnsInfo and AndroidInfo reaches APNs with the
    /// iOS overrides and each Android look-alike with the common fields, the AndroidInfo of
    /// its service, the intent carrying Ext, and the account's counter.
    @Test func androidDevicesByBusiIdGetTheCommonRendering() async throws {
        try await withGateway { gw in
            _ = try await gw.runtime.credentialBackend.addChannel(
                .oauthClient(
                    channel: .huawei, vendorAppID: "10086", clientID: "10086", clientSecret: "s3cret",
                    badgeClass: "com.example.tencent.MainActivity"),
                appID: gw.app.id, selector: "2001")
            let rsa = try TestKeys.rsa(0)
            let account: JSONValue = [
                "type": "service_account", "project_id": "tencent-project", "private_key_id": "k1",
                "private_key": .string(try rsa.pkcs8PEM()),
                "client_email": "push@tencent-project.iam.gserviceaccount.com",
                "token_uri": "https://oauth2.googleapis.com/token",
            ]
            _ = try await gw.runtime.credentialBackend.addChannel(
                .fcm(serviceAccountJSON: account.serialized()), appID: gw.app.id, selector: "2002")
            // The console's "open a page in the app" for Huawei notifications.
            var app = try #require(try await gw.runtime.store.app(id: gw.app.id))
            let intent = "intent://chat/open#Intent;scheme=tuisong;launchFlags=0x4000000;end"
            app.vendorSettings["tencent"]?["huawei_intent"] = intent
            try await gw.runtime.store.updateApp(app)

            try await gw.importAccounts([("alice", "Alice"), ("bob", nil)])
            try await gw.setToken("bob", Self.token(1))
            try await gw.setToken("bob", "huawei-bob-1", busiID: 2001)
            try await gw.setToken("bob", "fcm-bob:APA91b-1", busiID: 2002)
            let devices = try await gw.runtime.store.devices(appID: gw.app.id, account: "bob")
            #expect(devices.map(\.channel) == [.apns, .huawei, .fcm])
            #expect(devices.map(\.credentialSelector) == [nil, "2001", "2002"])

            // A token that is not its certificate's service's is refused in Tencent's words.
            for (token, busiID) in [(Self.token(2), 2001), ("bad token", 2002), ("huawei-bob-2", 0)] {
                let refused = try await gw.call(
                    "offline_push/set_token", #"{"Token":"\#(token)","BusiId":\#(busiID)}"#, as: "bob")
                #expect(refused.status == 200 && refused.actionStatus == "FAIL" && refused.errorCode == 70402)
            }
            try await gw.background("bob", unread: 4)

            let sent = try await gw.ok(
                "openim/sendmsg",
                #"""
                {"From_Account":"alice","To_Account":"bob","MsgRandom":8,"MsgBody":[
                  {"MsgType":"TIMTextElem","MsgContent":{"Text":"Hi"}},{"MsgType":"TIMImageElem","MsgContent":{"UUID":"u"}}],
                 "OfflinePushInfo":{"Title":"Team","Ext":"{\"chat\":7}",
                  "AndroidInfo":{"Sound":"ring","HuaWeiChannelID":"hw-im","GoogleChannelID":"g-chat","HuaWeiImportance":"LOW",
                   "HuaWeiCategory":"IM","ExtAsHuaweiIntentParam":1,"VIVOClassification":1},
                  "ApnsInfo":{"Title":"iOS","SubTitle":"S","Sound":"a.caf","Image":"https://x/i.png","MutableContent":1}}}
                """#)
            let status = try await gw.completed(try #require(sent["MsgKey"] as? String))
            #expect(status.counts.delivered == 3, "\(status.failures) \(status.counts)")

            #expect(
                gw.payloads()
                    == [
                        Self.token(1):
                            #"{"aps":{"alert":{"body":"Alice:Hi[图片]","subtitle":"S","title":"iOS"},"badge":5,"mutable-content":1,"sound":"a.caf"},"ext":"{\"chat\":7}","image":"https://x/i.png"}"#
                    ])
            let android = gw.mock.receivedAndroidMessages()
            let huawei = try #require(android.first { $0.service == .huawei })
            #expect(huawei.tokens == ["huawei-bob-1"] && huawei.target == "10086")
            let huaweiMessage = try #require(try JSONValue(parsing: huawei.body)["message"])
            #expect(huaweiMessage["android"]?["category"] == "IM")
            let notification = try #require(huaweiMessage["android"]?["notification"])
            #expect(notification["title"] == "Team")
            #expect(notification["body"] == "Alice:Hi[图片]")
            #expect(notification["channel_id"] == "hw-im")
            #expect(notification["importance"] == "LOW")
            #expect(notification["sound"] == "ring")
            #expect(notification["badge"]?["set_num"] == 5)
            #expect(
                notification["click_action"]
                    == [
                        "type": 1,
                        "intent":
                            "intent://chat/open#Intent;scheme=tuisong;launchFlags=0x4000000;S.ext=%7B%22chat%22%3A7%7D;end",
                    ])
            #expect(huaweiMessage["data"] == #"{"ext":"{\"chat\":7}"}"#)

            let fcm = try #require(android.first { $0.service == .fcm })
            #expect(fcm.tokens == ["fcm-bob:APA91b-1"] && fcm.target == "tencent-project")
            let fcmMessage = try #require(try JSONValue(parsing: fcm.body)["message"])
            #expect(fcmMessage["notification"] == ["title": "Team", "body": "Alice:Hi[图片]"])
            #expect(fcmMessage["android"]?["notification"]?["channel_id"] == "g-chat")
            #expect(fcmMessage["android"]?["notification"]?["sound"] == "ring")
            #expect(fcmMessage["android"]?["notification"]?["notification_count"] == 5)
            #expect(fcmMessage["data"] == ["ext": #"{"chat":7}"#])
            // Nothing of ApnsInfo reached Android.
            for body in [huawei.body, fcm.body] {
                let text = String(decoding: body, as: UTF8.self)
                #expect(!text.contains("iOS") && !text.contains("a.caf") && !text.contains("i.png"), "\(text)")
            }

            // An all-member push with BadgeMode 1: the iPhone gets no badge, the Android phones
            // still carry the counter (BadgeMode is ApnsInfo's).
            gw.mock.resetRecorded()
            let task = try await gw.ok(
                "all_member_push/im_push",
                #"""
                {"MsgRandom":9,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"News"}}],
                 "OfflinePushInfo":{"ApnsInfo":{"BadgeMode":1},"AndroidInfo":{"HonorImportance":"LOW"}}}
                """#)
            let broadcast = try await gw.completed(try #require(task["TaskId"] as? String))
            #expect(broadcast.counts.delivered == 3, "\(broadcast.failures) \(broadcast.counts)")
            #expect(gw.payloads() == [Self.token(1): #"{"aps":{"alert":"News"}}"#])
            let second = gw.mock.receivedAndroidMessages()
            let fcmAgain = try #require(second.first { $0.service == .fcm })
            let again = try #require(try JSONValue(parsing: fcmAgain.body)["message"])
            #expect(again["notification"] == ["body": "News"])
            #expect(again["android"]?["notification"]?["notification_count"] == 6)
            #expect(again["android"]?["notification"]?["channel_id"] == nil)
        }
    }

    /// One account with an iPhone, an FCM phone and a HarmonyOS NEXT phone, the last reporting
    /// its token with the BusiId of a HarmonyOS credential (#31): the device is on `harmony`, and
    /// one sendmsg reaches each phone once, the HarmonyOS one through Push Kit v3 with the common
    /// title and body, `HarmonyInfo`'s category, and `Ext` in the click action's data.
    @Test func harmonyDeviceByBusiIdGetsOneNotificationBesideTheOthers() async throws {
        try await withGateway { gw in
            let rsa = try TestKeys.rsa(0)
            let fcmAccount: JSONValue = [
                "type": "service_account", "project_id": "tencent-project", "private_key_id": "k1",
                "private_key": .string(try rsa.pkcs8PEM()),
                "client_email": "push@tencent-project.iam.gserviceaccount.com",
                "token_uri": "https://oauth2.googleapis.com/token",
            ]
            _ = try await gw.runtime.credentialBackend.addChannel(
                .fcm(serviceAccountJSON: fcmAccount.serialized()), appID: gw.app.id, selector: "2002")
            let harmonyAccount: JSONValue = [
                "project_id": "101888", "key_id": "0123abcd", "sub_account": "2001",
                "private_key": .string(try TestKeys.rsa(1).pkcs8PEM()),
            ]
            _ = try await gw.runtime.credentialBackend.addChannel(
                .form(channel: .harmony, CredentialFormInput(files: ["file": harmonyAccount.serialized()])),
                appID: gw.app.id, selector: "2003")

            try await gw.importAccounts([("alice", "Alice"), ("bob", nil)])
            try await gw.setToken("bob", Self.token(1))
            try await gw.setToken("bob", "fcm-bob:APA91b-1", busiID: 2002)
            try await gw.setToken("bob", "MAMzLg-bob-harmony", busiID: 2003)
            let devices = try await gw.runtime.store.devices(appID: gw.app.id, account: "bob")
            #expect(devices.map(\.channel) == [.apns, .fcm, .harmony])
            #expect(devices.map(\.credentialSelector) == [nil, "2002", "2003"])
            try await gw.background("bob", unread: 1)

            let sent = try await gw.ok(
                "openim/sendmsg",
                #"""
                {"From_Account":"alice","To_Account":"bob","MsgRandom":11,"MsgBody":[
                  {"MsgType":"TIMTextElem","MsgContent":{"Text":"鸿蒙"}}],
                 "OfflinePushInfo":{"Title":"Team","Ext":"{\"chat\":7}","HarmonyInfo":{"Category":"IM"}}}
                """#)
            let status = try await gw.completed(try #require(sent["MsgKey"] as? String))
            #expect(status.counts.delivered == 3, "\(status.failures) \(status.counts)")
            #expect(gw.payloads().keys.sorted() == [Self.token(1)])
            let android = gw.mock.receivedAndroidMessages()
            #expect(android.filter { $0.service == .fcm }.count == 1)
            let harmony = android.filter { $0.service == .harmony }
            #expect(harmony.count == 1)
            let received = try #require(harmony.first)
            #expect(received.tokens == ["MAMzLg-bob-harmony"] && received.harmonyPushType == 0)
            let notification = try #require(try JSONValue(parsing: received.body)["payload"]?["notification"])
            #expect(notification["title"] == "Team")
            #expect(notification["body"] == "Alice:鸿蒙")
            #expect(notification["category"] == "IM")
        }
    }

    /// `a=1&b=%7B…` as the look-alike received it.
    static func form(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String {
                String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
            }
            fields[decoded(parts[0])] = parts.count > 1 ? decoded(parts[1]) : ""
        }
        return fields
    }

    /// One account with a Xiaomi, an OPPO and a vivo phone, each reporting its token with its
    /// certificate's BusiId: AndroidInfo's `XiaoMiChannelID`, `OPPOChannelID`, `VIVOCategory`
    /// and `VIVOClassification` reach their services, with the common title, body and `Ext`.
    @Test func xiaomiOppoAndVivoDevicesByBusiIdGetTheirAndroidInfo() async throws {
        try await withGateway { gw in
            let backend = gw.runtime.credentialBackend
            _ = try await backend.addChannel(
                .oauthClient(
                    channel: .xiaomi, vendorAppID: "com.example.tencent", clientID: "2882303761517",
                    clientSecret: "xiaomi-secret", badgeClass: nil),
                appID: gw.app.id, selector: "3001")
            _ = try await backend.addChannel(
                .oauthClient(
                    channel: .oppo, vendorAppID: "30012345", clientID: "oppo-app-key", clientSecret: "oppo-master",
                    badgeClass: nil),
                appID: gw.app.id, selector: "3002")
            _ = try await backend.addChannel(
                .oauthClient(
                    channel: .vivo, vendorAppID: "105123456", clientID: "vivo-app-key", clientSecret: "vivo-secret",
                    badgeClass: nil),
                appID: gw.app.id, selector: "3003")

            try await gw.importAccounts([("alice", "Alice"), ("bob", nil)])
            try await gw.setToken("bob", "xiaomi-bob-1", busiID: 3001)
            try await gw.setToken("bob", "oppo-bob-1", busiID: 3002)
            try await gw.setToken("bob", "vivo-bob-1", busiID: 3003)
            let devices = try await gw.runtime.store.devices(appID: gw.app.id, account: "bob")
            #expect(devices.map(\.channel) == [.xiaomi, .oppo, .vivo])
            #expect(devices.map(\.credentialSelector) == ["3001", "3002", "3003"])
            // An APNs-shaped token is no Xiaomi token.
            let refused = try await gw.call(
                "offline_push/set_token", #"{"Token":"\#(Self.token(3))","BusiId":3001}"#, as: "bob")
            #expect(refused.actionStatus == "FAIL" && refused.errorCode == 70402)
            try await gw.background("bob", unread: 0)

            let sent = try await gw.ok(
                "openim/sendmsg",
                #"""
                {"From_Account":"alice","To_Account":"bob","MsgRandom":11,"MsgBody":[
                  {"MsgType":"TIMTextElem","MsgContent":{"Text":"Hi"}}],
                 "OfflinePushInfo":{"Title":"Team","Ext":"{\"chat\":7}",
                  "AndroidInfo":{"XiaoMiChannelID":"mi-im","OPPOChannelID":"oppo-im","VIVOCategory":"IM",
                   "VIVOClassification":1,"HuaWeiChannelID":"hw-im"}}}
                """#)
            let status = try await gw.completed(try #require(sent["MsgKey"] as? String))
            #expect(status.counts.delivered == 3, "\(status.failures) \(status.counts)")
            let android = gw.mock.receivedAndroidMessages()
            #expect(Set(android.map(\.service)) == [.xiaomi, .oppo, .vivo])

            let xiaomi = try #require(android.first { $0.service == .xiaomi })
            #expect(xiaomi.tokens == ["xiaomi-bob-1"] && xiaomi.target == "com.example.tencent")
            let mi = Self.form(xiaomi.body)
            #expect(mi["title"] == "Team" && mi["description"] == "Alice:Hi")
            #expect(mi["extra.channel_id"] == "mi-im")
            #expect(mi["payload"] == #"{"ext":"{\"chat\":7}"}"#)

            let oppo = try #require(android.first { $0.service == .oppo })
            #expect(oppo.tokens == ["oppo-bob-1"] && oppo.target == "oppo-app-key")
            let batch = try JSONValue(parsing: Array(try #require(Self.form(oppo.body)["messages"]).utf8))
            let oppoNotification = try #require(batch.arrayValue?.first?["notification"])
            #expect(oppoNotification["title"] == "Team" && oppoNotification["content"] == "Alice:Hi")
            #expect(oppoNotification["channel_id"] == "oppo-im")
            #expect(oppoNotification["action_parameters"] == #"{"ext":"{\"chat\":7}"}"#)

            let vivo = try #require(android.first { $0.service == .vivo })
            #expect(vivo.tokens == ["vivo-bob-1"] && vivo.target == "105123456")
            let vivoBody = try JSONValue(parsing: vivo.body)
            #expect(vivoBody["title"] == "Team" && vivoBody["content"] == "Alice:Hi")
            #expect(vivoBody["category"] == "IM" && vivoBody["classification"] == 1)
            #expect(vivoBody["clientCustomMap"] == ["ext": #"{"chat":7}"#])

            // No service got another's settings.
            for message in android {
                let text = String(decoding: message.body, as: UTF8.self)
                #expect(!text.contains("hw-im"), "\(message.service)")
            }
            #expect(!String(decoding: xiaomi.body, as: UTF8.self).contains("oppo-im"))
            #expect(!String(decoding: vivo.body, as: UTF8.self).contains("mi-im"))
        }
    }
}
