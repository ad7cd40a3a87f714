import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit
import TuisongTransportKit

@testable import EasemobProvider
@testable import TuisongGateway

/// One Easemob user with an iPhone and a Huawei phone: the binding's notifier name picks the
/// service, and Easemob's receiver rules decide both devices alike, each rendered for its own.
@Suite(.serialized) struct AndroidEndToEndTests {
    static let notifier = "HuaweiPush"

    /// The Huawei request bodies the look-alike received for this msg id, by token.
    func huawei(_ gw: EasemobGateway, msgID: String) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for message in gw.mock.receivedAndroidMessages() where message.service == .huawei {
            guard let body = try? JSONValue(parsing: message.body), let sent = body["message"],
                let dataText = sent["data"]?.stringValue, let data = try? JSONValue(parsing: Array(dataText.utf8)),
                data["m"]?.stringValue == msgID
            else { continue }
            for token in message.tokens { result[token] = sent }
        }
        return result
    }

    /// The Huawei message's `data` object.
    func data(_ sent: JSONValue?) -> JSONValue? {
        sent?["data"]?.stringValue.flatMap { try? JSONValue(parsing: Array($0.utf8)) }
    }

    /// HarmonyOS NEXT (#31): a binding whose notifier name is a HarmonyOS credential's (its Client
    /// ID, as in Easemob's console) puts the device on `harmony`; a user with an iPhone, a Huawei
    /// Android phone and a HarmonyOS phone gets one notification per message on each, with the
    /// same display-style body.
    @Test func aHarmonyDeviceByNotifierNameGetsOneNotificationBesideTheOthers() async throws {
        try await EasemobGateway.with { gw in
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "alice", "nickname": "小艾"], ["username": "bob"]])
            _ = try await gw.runtime.credentialBackend.addChannel(
                .oauthClient(
                    channel: .huawei, vendorAppID: "10086", clientID: "10086", clientSecret: "s3cret", badgeClass: nil),
                appID: gw.app.id, selector: Self.notifier)
            let harmonyClientID = "112233445"
            let account: JSONValue = [
                "project_id": "101888", "key_id": "0123abcd", "sub_account": "2001",
                "private_key": .string(try TestKeys.rsa(0).pkcs8PEM()),
            ]
            _ = try await gw.runtime.credentialBackend.addChannel(
                .form(channel: .harmony, CredentialFormInput(files: ["file": account.serialized()])),
                appID: gw.app.id, selector: harmonyClientID)

            #expect(try await gw.bind(token, user: "bob", device: "bob-iphone", apnsToken: apnsToken(1)).status == 200)
            let huaweiBound = try await gw.bind(
                token, user: "bob", device: "bob-huawei", apnsToken: "huawei-bob-token_1", notifier: Self.notifier)
            #expect(huaweiBound.status == 200, "\(huaweiBound.text)")
            let harmonyBound = try await gw.bind(
                token, user: "bob", device: "bob-harmony", apnsToken: "MAMzLg-bob-harmony", notifier: harmonyClientID)
            #expect(harmonyBound.status == 200, "\(harmonyBound.text)")
            let harmonyToken = try #require(DeviceToken(addressing: "MAMzLg-bob-harmony"))
            let device = try #require(try await gw.runtime.store.device(appID: gw.app.id, token: harmonyToken))
            #expect(device.channel == .harmony && device.credentialSelector == harmonyClientID)

            _ = try await gw.call("PUT", "/users/bob", ["notification_display_style": 1], token: token)
            let sent = try await gw.call(
                "POST", "/messages/users",
                ["from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "早"]], token: token)
            let id = try #require(sent.data["bob"] as? String)
            let outcome = try await gw.completed(msgID: id)
            #expect(outcome.status.counts.delivered == 3, "\(outcome.status.failures) \(outcome.status.skips)")
            #expect(try #require(gw.received(msgID: id)[apnsToken(1)]).body == "小艾:早")
            #expect(huawei(gw, msgID: id).count == 1)
            let harmony = gw.mock.receivedAndroidMessages().filter { $0.service == .harmony }
            #expect(harmony.count == 1)
            let received = try #require(harmony.first)
            #expect(received.tokens == ["MAMzLg-bob-harmony"])
            let notification = try #require(try JSONValue(parsing: received.body)["payload"]?["notification"])
            #expect(notification["body"] == "小艾:早")
            // No em_harmony_push_ext: the credential's default category and a tap that opens the app.
            #expect(notification["category"] == "MARKETING" && notification["clickAction"]?["actionType"] == 0)
            #expect(!received.harmonyTestMessage)

            // em_harmony_push_ext as Easemob documents it (server-side/push_extension.md): its
            // category, click action, test flag and notify id reach Push Kit; receipt_id has no
            // counterpart and is not sent. The iPhone and the Huawei phone are untouched.
            let extended = try await gw.call(
                "POST", "/messages/users",
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "晚"],
                    "ext": [
                        "em_harmony_push_ext": [
                            "click_action": "com.a.b.shot", "category": "IM", "notify_id": 1,
                            "receipt_id": "RCP78C959D4", "is_test_message": true,
                        ]
                    ],
                ],
                token: token)
            let extendedID = try #require(extended.data["bob"] as? String)
            let extendedOutcome = try await gw.completed(msgID: extendedID)
            #expect(extendedOutcome.status.counts.delivered == 3, "\(extendedOutcome.status.failures)")
            let (tested, testedBody) = try #require(harmonySent(gw, msgID: extendedID))
            #expect(tested.harmonyTestMessage && tested.harmonyPushType == 0)
            let shown = try #require(testedBody["payload"]?["notification"])
            #expect(shown["category"] == "IM" && shown["body"] == "小艾:晚")
            #expect(shown["clickAction"]?["actionType"] == 1 && shown["clickAction"]?["action"] == "com.a.b.shot")
            #expect(testedBody["pushOptions"]?["testMessage"] == true)
            #expect(shown["notifyId"] == 1 && testedBody["pushOptions"]?["receiptId"] == nil)
            let iphone = try #require(gw.received(msgID: extendedID)[apnsToken(1)])
            #expect(iphone.body == "小艾:晚" && iphone.aps["category"] == nil)
            let phone = try #require(huawei(gw, msgID: extendedID)["huawei-bob-token_1"])
            #expect(phone["android"]?["category"] == nil && !phone.serializedString.contains("com.a.b.shot"))

            // A category that is not one of Huawei's is ignored: the credential's default; a
            // notify_id Push Kit cannot take is ignored too, each member alone (the click action
            // beside them is kept).
            let unknown = try await gw.call(
                "POST", "/messages/users",
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "夜"],
                    "ext": [
                        "em_harmony_push_ext": [
                            "category": "CHAT", "is_test_message": false, "notify_id": "7",
                            "click_action": "com.a.b.night",
                        ]
                    ],
                ],
                token: token)
            let unknownID = try #require(unknown.data["bob"] as? String)
            #expect(try await gw.completed(msgID: unknownID).status.counts.delivered == 3)
            let (plain, plainBody) = try #require(harmonySent(gw, msgID: unknownID))
            #expect(plainBody["payload"]?["notification"]?["category"] == "MARKETING" && !plain.harmonyTestMessage)
            #expect(plainBody["payload"]?["notification"]?["notifyId"] == nil)
            #expect(plainBody["payload"]?["notification"]?["clickAction"]?["action"] == "com.a.b.night")
        }
    }

    /// The HarmonyOS request the look-alike received for this msg id (`m` of `clickAction.data`)
    /// and its body.
    func harmonySent(_ gw: EasemobGateway, msgID: String) -> (ReceivedAndroidMessage, JSONValue)? {
        for message in gw.mock.receivedAndroidMessages() where message.service == .harmony {
            guard let body = try? JSONValue(parsing: message.body),
                body["payload"]?["notification"]?["clickAction"]?["data"]?["m"]?.stringValue == msgID
            else { continue }
            return (message, body)
        }
        return nil
    }

    @Test func anAndroidDeviceIsDecidedAndRenderedLikeTheUsersIPhone() async throws {
        try await EasemobGateway.with { gw in
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "alice", "nickname": "小艾"], ["username": "bob"]])
            _ = try await gw.runtime.credentialBackend.addChannel(
                .oauthClient(
                    channel: .huawei, vendorAppID: "10086", clientID: "10086", clientSecret: "s3cret", badgeClass: nil),
                appID: gw.app.id, selector: Self.notifier)

            // The notifier name of the Huawei credential makes the device a Huawei one; its
            // token is checked as a Huawei token (an APNs-shaped one is refused, in Easemob's words).
            #expect(try await gw.bind(token, user: "bob", device: "bob-iphone", apnsToken: apnsToken(1)).status == 200)
            let refused = try await gw.bind(
                token, user: "bob", device: "bob-huawei", apnsToken: apnsToken(2), notifier: Self.notifier)
            #expect(refused.status == 400 && refused.error == "illegal_argument", "\(refused.text)")
            #expect(refused.jsonObject["exception"] as? String == "java.lang.IllegalArgumentException")
            #expect((refused.jsonObject["error_description"] as? String)?.contains("huawei") == true)
            let bound = try await gw.bind(
                token, user: "bob", device: "bob-huawei", apnsToken: "huawei-bob-token_1", notifier: Self.notifier)
            #expect(bound.status == 200, "\(bound.text)")
            #expect(bound.entities.compactMap { $0["device_token"] as? String }.contains("huawei-bob-token_1"))
            let huaweiToken = try #require(DeviceToken(addressing: "huawei-bob-token_1"))
            let device = try #require(try await gw.runtime.store.device(appID: gw.app.id, token: huaweiToken))
            #expect(device.channel == .huawei && device.credentialSelector == Self.notifier)

            // Display style 1: both show "小艾:早"; em_apns_ext's alert fields, category and sound
            // stay on the iPhone, the Android extension reaches Huawei as its channel, category
            // and click action.
            _ = try await gw.call("PUT", "/users/bob", ["notification_display_style": 1], token: token)
            let sent = try await gw.call(
                "POST", "/messages/users",
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "早"],
                    "ext": [
                        "em_apns_ext": [
                            "extern": "order-7", "em_push_category": "CHAT", "em_alert_subTitle": "iOS only",
                        ],
                        "em_android_push_ext": [
                            "huawei_channel_id": "im", "huawei_category": "IM",
                            "huawei_click_action": "com.example.chat.OPEN",
                        ],
                    ],
                ],
                token: token)
            let id = try #require(sent.data["bob"] as? String)
            let outcome = try await gw.completed(msgID: id)
            #expect(outcome.status.counts.delivered == 2, "\(outcome.status.failures) \(outcome.status.skips)")
            let iphone = try #require(gw.received(msgID: id)[apnsToken(1)])
            #expect(iphone.body == "小艾:早" && iphone["e"] as? String == "order-7")
            #expect(iphone.aps["category"] as? String == "CHAT" && iphone.alert["subtitle"] as? String == "iOS only")
            let phone = try #require(huawei(gw, msgID: id)["huawei-bob-token_1"])
            let notification = try #require(phone["android"]?["notification"])
            #expect(notification["body"] == "小艾:早")
            #expect(notification["click_action"]?["action"] == "com.example.chat.OPEN")
            #expect(notification["channel_id"] == "im")
            #expect(phone["android"]?["category"] == "IM")
            let fields = try #require(data(phone))
            #expect(fields["f"] == "alice" && fields["t"] == "bob" && fields["m"] == .string(id))
            // Easemob's Android docs: `e` is em_apns_ext.extern on Android too.
            #expect(fields["e"] == "order-7")
            #expect(!phone.serializedString.contains("iOS only"))

            // A template renders the same title and body on both.
            let template = try await gw.call(
                "POST", "/notification/template",
                ["name": "greet", "title_pattern": "{0}来信", "content_pattern": "{0}说:{1}"], token: token)
            #expect(template.status == 200, "\(template.text)")
            let templated = try await gw.call(
                "POST", "/messages/users",
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "x"],
                    "ext": [
                        "em_push_template": ["name": "greet", "title_args": ["小艾"], "content_args": ["小艾", "午饭?"]]
                    ],
                ],
                token: token)
            let templatedID = try #require(templated.data["bob"] as? String)
            _ = try await gw.completed(msgID: templatedID)
            let iphone2 = try #require(gw.received(msgID: templatedID)[apnsToken(1)])
            #expect(iphone2.alert["title"] as? String == "小艾来信" && iphone2.body == "小艾说:午饭?")
            let phone2 = try #require(huawei(gw, msgID: templatedID)["huawei-bob-token_1"])
            #expect(phone2["android"]?["notification"]?["title"] == "小艾来信")
            #expect(phone2["android"]?["notification"]?["body"] == "小艾说:午饭?")

            // Do-not-disturb silences both; so does the conversation's NONE once it ends.
            _ = try await gw.call(
                "PUT", "/users/bob/notification/user/bob", ["ignoreDuration": 3_600_000], token: token)
            for (setup, reason) in [("dnd", "dnd"), ("none", "mode_none")] {
                if setup == "none" {
                    _ = try await gw.call(
                        "PUT", "/users/bob/notification/user/bob", ["ignoreDuration": 0], token: token)
                    _ = try await gw.call("PUT", "/users/bob/notification/user/alice", ["type": "NONE"], token: token)
                }
                let quiet = try await gw.call(
                    "POST", "/messages/users", ["from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "嘘"]],
                    token: token)
                let quietID = try #require(quiet.data["bob"] as? String)
                let quietOutcome = try await gw.completed(msgID: quietID)
                #expect(quietOutcome.status.skips == [reason: 2], "\(setup)")
                #expect(gw.received(msgID: quietID).isEmpty && huawei(gw, msgID: quietID).isEmpty, "\(setup)")
            }

            // Unbinding the Huawei phone (empty token) leaves only the iPhone bound.
            let unbound = try await gw.call(
                "PUT", "/users/bob/push/binding",
                ["device_id": "bob-huawei", "device_token": "", "notifier_name": Self.notifier], token: token)
            #expect(unbound.status == 200)
            #expect(unbound.entities.compactMap { $0["device_id"] as? String } == ["bob-iphone"])
        }
    }

    /// Binds bob's iPhone (no notifier name) and Huawei phone (notifier `HuaweiPush`) and
    /// answers the app token.
    func bobWithAnIPhoneAndAHuaweiPhone(_ gw: EasemobGateway) async throws -> String {
        let token = try await gw.appToken()
        try await gw.register(token, [["username": "alice", "nickname": "小艾"], ["username": "bob"]])
        _ = try await gw.runtime.credentialBackend.addChannel(
            .oauthClient(
                channel: .huawei, vendorAppID: "10086", clientID: "10086", clientSecret: "s3cret", badgeClass: nil),
            appID: gw.app.id, selector: Self.notifier)
        #expect(try await gw.bind(token, user: "bob", device: "bob-iphone", apnsToken: apnsToken(1)).status == 200)
        let bound = try await gw.bind(
            token, user: "bob", device: "bob-huawei", apnsToken: "huawei-bob-token_1", notifier: Self.notifier)
        #expect(bound.status == 200, "\(bound.text)")
        return token
    }

    /// Easemob's "自定义显示": `em_apns_ext.em_push_title` / `em_push_content` are the push's
    /// title and content on every platform (over display style, template and `em_push_ext`);
    /// `em_alert_*` still win on the iPhone only.
    @Test func emPushTitleAndContentShowOnAndroidToo() async throws {
        try await EasemobGateway.with { gw in
            let token = try await bobWithAnIPhoneAndAHuaweiPhone(gw)
            _ = try await gw.call("PUT", "/users/bob", ["notification_display_style": 1], token: token)
            let sent = try await gw.call(
                "POST", "/messages/users",
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "早"],
                    "ext": [
                        "em_push_ext": ["title": "通用标题", "content": "通用内容"],
                        "em_apns_ext": [
                            "em_push_title": "custom push title", "em_push_content": "custom push content",
                            "extern": ["order": 9],
                        ],
                    ],
                ],
                token: token)
            let id = try #require(sent.data["bob"] as? String)
            let outcome = try await gw.completed(msgID: id)
            #expect(outcome.status.counts.delivered == 2, "\(outcome.status.failures) \(outcome.status.skips)")
            let iphone = try #require(gw.received(msgID: id)[apnsToken(1)])
            #expect(iphone.alert["title"] as? String == "custom push title")
            #expect(iphone.body == "custom push content")
            let phone = try #require(huawei(gw, msgID: id)["huawei-bob-token_1"])
            #expect(phone["android"]?["notification"]?["title"] == "custom push title")
            #expect(phone["android"]?["notification"]?["body"] == "custom push content")
            #expect(data(phone)?["e"] == #"{"order":9}"#)

            // em_alert_* are APNs's: the iPhone shows them, the phone keeps em_push_*.
            let alerted = try await gw.call(
                "POST", "/messages/users",
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "早"],
                    "ext": [
                        "em_apns_ext": [
                            "em_push_title": "T", "em_push_content": "C", "em_alert_title": "iOS T",
                            "em_alert_body": "iOS C",
                        ]
                    ],
                ],
                token: token)
            let alertedID = try #require(alerted.data["bob"] as? String)
            _ = try await gw.completed(msgID: alertedID)
            let iphone2 = try #require(gw.received(msgID: alertedID)[apnsToken(1)])
            #expect(iphone2.alert["title"] as? String == "iOS T" && iphone2.body == "iOS C")
            let phone2 = try #require(huawei(gw, msgID: alertedID)["huawei-bob-token_1"])
            #expect(phone2["android"]?["notification"]?["title"] == "T")
            #expect(phone2["android"]?["notification"]?["body"] == "C")
        }
    }

    /// `em_push_filter`: `ignore_notifier_name` ("不接收推送的证书名列表") and its siblings
    /// `accept_notifier_name`, `ignore_device_id`, `accept_device_id` pick which of bob's
    /// devices are pushed; the others are skipped as `push_filter`.
    @Test func emPushFilterPicksDevicesByNotifierNameAndDeviceID() async throws {
        try await EasemobGateway.with { gw in
            let token = try await bobWithAnIPhoneAndAHuaweiPhone(gw)
            let cases: [(filter: [String: Any], iphone: Bool, huawei: Bool)] = [
                (["ignore_notifier_name": [Self.notifier]], true, false),
                (["accept_notifier_name": [Self.notifier]], false, true),
                (["ignore_device_id": ["bob-iphone"]], false, true),
                (["accept_device_id": ["bob-iphone"]], true, false),
                (["accept_device_id": ["bob-iphone", "bob-huawei"], "ignore_notifier_name": ["Other"]], true, true),
                (
                    [
                        "accept_device_id": [String](), "ignore_device_id": [String](),
                        "accept_notifier_name": [String](), "ignore_notifier_name": [String](),
                    ], true, true
                ),
                (["accept_notifier_name": [Self.notifier], "ignore_device_id": ["bob-huawei"]], false, false),
            ]
            for (filter, toIPhone, toHuawei) in cases {
                let sent = try await gw.call(
                    "POST", "/messages/users",
                    [
                        "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "早"],
                        "ext": ["em_push_filter": filter],
                    ],
                    token: token)
                let id = try #require(sent.data["bob"] as? String)
                let outcome = try await gw.completed(msgID: id)
                let expectedSkips = [toIPhone, toHuawei].filter { !$0 }.count
                #expect(
                    outcome.status.skips == (expectedSkips == 0 ? [:] : ["push_filter": expectedSkips]),
                    "\(filter)")
                #expect(outcome.status.counts.delivered == 2 - expectedSkips, "\(filter)")
                #expect((gw.received(msgID: id)[apnsToken(1)] != nil) == toIPhone, "\(filter)")
                #expect((huawei(gw, msgID: id)["huawei-bob-token_1"] != nil) == toHuawei, "\(filter)")
            }
        }
    }
}
