import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore

@testable import EasemobProvider

/// The payload Easemob sends, per receiver: fields f/t/g/m/e, display styles, em_apns_ext,
/// templates, languages.
@Suite struct PushContentTests {
    func message(
        from: String = "6001", group: String? = nil, type: String = "txt", body: JSONValue = ["msg": "早"],
        ext: JSONValue? = nil
    ) -> EasemobMessage {
        EasemobMessage(
            msgID: "373360335316321408", from: from, chatType: group == nil ? .users : .chatgroups, groupID: group,
            type: type, body: body, ext: ext)
    }

    func payload(
        _ message: EasemobMessage, style: Int = 0, language: String? = nil, nickname: String? = nil,
        template: PushTemplate? = nil, badge: Int = 1, channel: PushChannel = .apns
    ) -> String {
        let notification = EasemobPushContent.notification(
            message, receiver: EasemobReceiverDisplay(username: "6006", displayStyle: style, language: language),
            senderNickname: nickname, template: template, badge: badge, channel: channel)
        return String(decoding: APNsPayload.render(notification), as: UTF8.self)
    }

    @Test func simpleBannerOneToOne() {
        #expect(
            payload(message())
                == #"{"aps":{"alert":{"body":"你有一条新消息"},"badge":1,"sound":"default"},"f":"6001","m":"373360335316321408","t":"6006"}"#
        )
    }

    @Test func groupCarriesGAndTheReceiverAsT() {
        #expect(
            payload(message(group: "1421300621769"), badge: 3)
                == #"{"aps":{"alert":{"body":"你有一条新消息"},"badge":3,"sound":"default"},"f":"6001","g":"1421300621769","m":"373360335316321408","t":"6006"}"#
        )
    }

    @Test func messageSummaryUsesNicknameElseUsername() {
        #expect(payload(message(), style: 1, nickname: "小明").contains(#""body":"小明:早""#))
        #expect(payload(message(), style: 1).contains(#""body":"6001:早""#))
        #expect(payload(message(), style: 1, nickname: "").contains(#""body":"6001:早""#))
        #expect(payload(message(type: "img", body: ["filename": "a.jpg"]), style: 1).contains(#""body":"6001:[图片]""#))
    }

    @Test func languageWithTranslationElseOriginal() {
        let translated = message(body: ["msg": "早", "translations": ["en": "Morning", "EU": "Egun on"]])
        #expect(payload(translated, style: 1, language: "en").contains(#""body":"6001:Morning""#))
        #expect(payload(translated, style: 1, language: "eu").contains(#""body":"6001:Egun on""#))
        #expect(payload(translated, style: 1, language: "fr").contains(#""body":"6001:早""#))
        #expect(payload(message(), style: 1, language: "en").contains(#""body":"6001:早""#))
    }

    @Test func apnsExtMapsEveryField() {
        let ext: JSONValue = [
            "em_apns_ext": [
                "extern": "custom string", "em_alert_title": "customTitle", "em_alert_subTitle": "customSubTitle",
                "em_alert_body": "customBody", "em_push_sound": "custom.caf", "em_push_mutable_content": true,
                "em_push_category": "chat",
            ]
        ]
        #expect(
            payload(message(ext: ext))
                == #"{"aps":{"alert":{"body":"customBody","subtitle":"customSubTitle","title":"customTitle"},"badge":1,"category":"chat","mutable-content":1,"sound":"custom.caf"},"e":"custom string","f":"6001","m":"373360335316321408","t":"6006"}"#
        )
        // Only extern: the body stays the display style's.
        #expect(payload(message(ext: ["em_apns_ext": ["extern": ["k": 1]]])).contains(#""e":{"k":1}"#))
        #expect(!payload(message()).contains(#""e":"#))
    }

    @Test func templateRendersPlaceholders() {
        let template = PushTemplate(id: 1, appID: 1, name: "t1", titlePattern: "你好,{0}", bodyPattern: "{0}说：{1}")
        let ext: JSONValue = ["em_push_template": ["name": "t1", "title_args": ["环信"], "content_args": ["小明", "早"]]]
        #expect(payload(message(ext: ext), template: template).contains(#""alert":{"body":"小明说：早","title":"你好,环信"}"#))
        // em_apns_ext's own alert fields beat the template.
        let both: JSONValue = [
            "em_push_template": ["name": "t1", "title_args": ["环信"], "content_args": ["小明", "早"]],
            "em_apns_ext": ["em_alert_body": "自定义"],
        ]
        #expect(payload(message(ext: both), template: template).contains(#""alert":{"body":"自定义","title":"你好,环信"}"#))
        // A missing argument shows its placeholder.
        let short: JSONValue = ["em_push_template": ["name": "t1", "title_args": [], "content_args": ["小明"]]]
        #expect(payload(message(ext: short), template: template).contains(#""body":"小明说：{1}""#))
    }

    @Test func vendorContextRoundTrips() {
        let original = message(group: "99", type: "txt", ext: ["em_at_list": "all"])
        #expect(EasemobMessage(context: original.context) == original)
        #expect(EasemobMessage(context: ["from": "x"]) == nil)
        #expect(EasemobMessage(context: nil) == nil)
        #expect(original.conversation == ("chatgroup", "99"))
        #expect(message().conversation == ("user", "6001"))
    }

    /// An Android device: the same text, `em_push_ext` applies, of `em_apns_ext` only `extern`
    /// (as `e`) and `em_push_title` / `em_push_content`; the device's own service's click action.
    @Test func androidDevicesLeaveOutEmApnsExtsAPNsFields() {
        let ext: JSONValue = [
            "em_apns_ext": [
                "extern": "x", "em_alert_title": "iOS", "em_push_sound": "ring.caf", "em_push_category": "C",
                "em_push_mutable_content": true,
            ],
            "em_push_ext": ["custom": ["order": 7]],
            "em_android_push_ext": ["huawei_click_action": "com.example.OPEN", "honor_click_action": "com.example.H"],
        ]
        #expect(
            payload(message(ext: ext), style: 1, channel: .huawei)
                == #"{"aps":{"alert":{"body":"6001:早"},"badge":1,"category":"com.example.OPEN","sound":"default"},"e":"x","f":"6001","m":"373360335316321408","t":"6006"}"#
        )
        #expect(
            payload(message(ext: ext), channel: .fcm).contains(
                #""aps":{"alert":{"body":"你有一条新消息"},"badge":1,"sound":"default"}"#))
        #expect(payload(message(ext: ext), channel: .honor).contains(#""category":"com.example.H""#))
        // The iPhone keeps em_apns_ext (its extern wins over em_push_ext's custom).
        let iphone = payload(message(ext: ext))
        #expect(
            iphone.contains(#""title":"iOS""#) && iphone.contains(#""e":"x""#) && iphone.contains(#""category":"C""#))
    }

    /// Easemob's "自定义显示": `em_apns_ext.em_push_title` / `em_push_content` on every platform,
    /// over the style, the template and `em_push_ext`; an empty one changes nothing.
    @Test func emPushTitleAndContentForEveryPlatform() {
        let ext: JSONValue = [
            "em_push_ext": ["title": "通用", "content": "通用内容"],
            "em_apns_ext": ["em_push_title": "custom push title", "em_push_content": "custom push content"],
        ]
        for channel in [PushChannel.apns, .fcm, .huawei, .xiaomi] {
            #expect(
                payload(message(ext: ext), style: 1, channel: channel).contains(
                    #""alert":{"body":"custom push content","title":"custom push title"}"#), "\(channel)")
        }
        let empty: JSONValue = ["em_apns_ext": ["em_push_title": "", "em_push_content": ""]]
        #expect(payload(message(ext: empty), channel: .fcm).contains(#""alert":{"body":"你有一条新消息"}"#))
    }

    @Test func emPushExtTitleAndContentForEveryPlatform() {
        let ext: JSONValue = ["em_push_ext": ["title": "群组名", "content": "张三:发来一条消息"]]
        for channel in [PushChannel.apns, .fcm] {
            #expect(
                payload(message(ext: ext), channel: channel).contains(
                    #""alert":{"body":"张三:发来一条消息","title":"群组名"}"#), "\(channel)")
        }
    }

    @Test func androidExtensionBecomesTheMessagesAndroidOptions() {
        #expect(EasemobAndroidOptions.options(ext: ["em_apns_ext": ["extern": "x"]]) == nil)
        let options = EasemobAndroidOptions.options(ext: [
            "em_android_push_ext": [
                "em_push_channel_id": "shared", "fcm_channel_id": "chat", "huawei_category": "IM",
                "honor_importance": "LOW", "vivo_category": "IM", "em_push_sound": "/raw/ring",
                "fcm_options": ["k": "v"],
                "huawei_channel_id": "",
            ]
        ])
        #expect(options?.channelIDs["fcm"] == "chat")
        #expect(options?.channelIDs["huawei"] == "shared" && options?.channelIDs["oppo"] == "shared")
        #expect(options?.category == ["huawei": "IM", "vivo": "IM"])
        #expect(options?.importance == ["honor": "LOW"])
        #expect(options?.sound == "/raw/ring" && options?.legacyClick == nil)
    }
}
