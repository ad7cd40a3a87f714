import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongHarmony
import TuisongPluginTestKit

@testable import TencentProvider

/// `OfflinePushInfo.AndroidInfo` read into `AndroidOptions`, and an Android device's payload
/// rendered from the common fields only.
@Suite struct AndroidInfoTests {
    /// The gateway declares its transports (and their options rules) before a plugin runs.
    init() { ChannelCatalog.shared.install([HarmonyService.declaration.channel]) }

    func info(_ json: String) throws -> OfflinePushInfo? {
        try OfflinePushInfo.parse(try JSONValue(parsing: json))
    }

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func everyFieldReachesItsService() throws {
        let parsed = try #require(
            try info(
                #"""
                {"AndroidInfo":{"Sound":"ring","GoogleChannelID":"g-chat","HuaWeiChannelID":"hw-im",
                 "XiaoMiChannelID":"mi-1","OPPOChannelID":"op-1","VIVOClassification":0,"HuaWeiImportance":"LOW",
                 "HonorImportance":"NORMAL","HuaWeiCategory":"IM","VIVOCategory":"ACCOUNT","ExtAsHuaweiIntentParam":1,
                 "PushStyle":1,"HuaWeiImage":"https://x/i.png","OPPOCategory":"IM"}}
                """#))
        #expect(
            parsed.android
                == AndroidOptions(
                    channelIDs: ["fcm": "g-chat", "huawei": "hw-im", "xiaomi": "mi-1", "oppo": "op-1"],
                    importance: ["huawei": "LOW", "honor": "NORMAL"], category: ["huawei": "IM", "vivo": "ACCOUNT"],
                    sound: "ring"))
        #expect(parsed.services == ["vivo": ["classification": 0]])
        #expect(parsed.extAsHuaweiIntentParam)
        // Empty strings leave a setting unset; Tencent's generated clients send "1" for vivo.
        let sparse = try #require(
            try info(#"{"AndroidInfo":{"Sound":"","HuaWeiChannelID":"","VIVOClassification":"1"}}"#))
        #expect(sparse.android.isEmpty && sparse.services == ["vivo": ["classification": 1]])
        #expect(!sparse.extAsHuaweiIntentParam)
        #expect(try info(#"{"AndroidInfo":null}"#)?.android.isEmpty == true)
    }

    /// `HarmonyInfo` (image, category, ignore badge) reaches the `harmony` transport (#31).
    @Test func harmonyInfoReachesTheHarmonyTransport() throws {
        let parsed = try #require(
            try info(#"{"HarmonyInfo":{"Image":"https://x/i.png","Category":"IM","IgnoreBadge":1}}"#))
        // The `harmony` transport's entry, in its documented keys, built without importing it.
        #expect(parsed.harmony == ["category": "IM", "image": "https://x/i.png", "ignore_badge": true])
        #expect(try info(#"{"HarmonyInfo":{"Image":"","Category":""}}"#)?.harmony == nil)
        #expect(try info(#"{"AndroidInfo":{"Sound":"x"}}"#)?.harmony == nil)
        // The category is checked by the rule the transport declares, worded in Tencent's names.
        do {
            _ = try info(#"{"HarmonyInfo":{"Category":"CHAT"}}"#)
            Issue.record("CHAT is no category of Huawei's")
        } catch {
            #expect(
                (error as? TencentError)?.info.contains(
                    "OfflinePushInfo.HarmonyInfo.Category must be one of ACCOUNT, ")
                    == true, "\(error)")
        }
        for bad in [
            #"{"HarmonyInfo":"x"}"#, #"{"HarmonyInfo":{"Image":"http://x/i.png"}}"#,
            #"{"HarmonyInfo":{"Category":"CHAT"}}"#, #"{"HarmonyInfo":{"IgnoreBadge":true}}"#,
        ] {
            #expect(throws: TencentError.self, "\(bad)") { try info(bad) }
        }
    }

    @Test func badTypesAnswerInTencentsDialect() throws {
        for bad in [
            #"{"AndroidInfo":"x"}"#, #"{"AndroidInfo":{"Sound":5}}"#, #"{"AndroidInfo":{"GoogleChannelID":true}}"#,
            #"{"AndroidInfo":{"HuaWeiImportance":"HIGH"}}"#, #"{"AndroidInfo":{"HonorImportance":1}}"#,
            #"{"AndroidInfo":{"VIVOClassification":2}}"#, #"{"AndroidInfo":{"VIVOClassification":"system"}}"#,
            #"{"AndroidInfo":{"ExtAsHuaweiIntentParam":"1"}}"#, #"{"AndroidInfo":{"HuaWeiCategory":["IM"]}}"#,
            #"{"AndroidInfo":{"OPPOChannelID":"\#(String(repeating: "o", count: 300))"}}"#,
        ] {
            #expect(throws: TencentError.self, "\(bad)") { try info(bad) }
            do {
                _ = try info(bad)
            } catch let error as TencentError {
                #expect(error.code == 90002, "\(bad)")
                #expect(error.info.contains("AndroidInfo"), "\(error.info)")
            }
        }
    }

    @Test func androidGetsTheCommonFieldsOnly() throws {
        let elements = try MessageElement.parseBody(
            try JSONValue(
                parsing:
                    #"[{"MsgType":"TIMTextElem","MsgContent":{"Text":"Hi"}},{"MsgType":"TIMImageElem","MsgContent":{"UUID":"u"}}]"#
            ))
        let pushInfo = try info(
            #"""
            {"Title":"Team","Ext":"{\"chat\":7}","AndroidInfo":{"Sound":"ring"},
             "ApnsInfo":{"Title":"iOS title","SubTitle":"S","Sound":"a.caf","BadgeMode":1,"Image":"https://x/i.png","MutableContent":1}}
            """#)
        let template = OfflinePushTemplate(
            sender: "bob", origin: .group(senderName: "Bobby", groupName: "Dev"), elements: elements, pushInfo: pushInfo
        )
        #expect(
            text(APNsPayload.render(template.content(badge: nil)))
                == #"{"aps":{"alert":{"body":"Bobby(Dev):Hi[图片]","subtitle":"S","title":"iOS title"},"mutable-content":1,"sound":"a.caf"},"ext":"{\"chat\":7}","image":"https://x/i.png"}"#
        )
        #expect(
            text(APNsPayload.render(template.content(badge: 3, android: true)))
                == #"{"aps":{"alert":{"body":"Bobby(Dev):Hi[图片]","title":"Team"},"badge":3},"ext":"{\"chat\":7}"}"#)
        // Kept with the message, the Android title comes back.
        #expect(OfflinePushTemplate(vendorContext: template.vendorContext) == template)

        // No Title: a plain alert; a custom element's Sound (an iOS file) stays off Android.
        let custom = try MessageElement.parseBody(
            try JSONValue(
                parsing:
                    #"[{"MsgType":"TIMCustomElem","MsgContent":{"Data":"d","Desc":"hello","Ext":"e","Sound":"s.aiff"}}]"#
            ))
        let plain = OfflinePushTemplate(
            sender: "a", origin: .oneToOne(senderNick: "Ann"), elements: custom, pushInfo: nil)
        #expect(
            text(APNsPayload.render(plain.content(badge: 1, android: true)))
                == #"{"aps":{"alert":"Ann:hello","badge":1},"ext":"e"}"#)
    }

    @Test func extAsHuaweiIntentParamAppendsExtToTheAppsIntent() throws {
        var app = App(
            id: 1, name: "a", bundleID: "com.example.a", apiKeyHash: "h", createdAt: Date(), updatedAt: Date())
        let pushInfo = try info(#"{"Ext":"{\"id\":7}","AndroidInfo":{"ExtAsHuaweiIntentParam":1,"Sound":"ring"}}"#)
        // Without the app's intent (Tencent's precondition) nothing changes but AndroidInfo.
        #expect(TencentProvider.androidOptions(pushInfo) == AndroidOptions(sound: "ring"))
        #expect(TencentProvider.androidIntent(pushInfo, ext: "{\"id\":7}", app: app) == nil)
        #expect(TencentProvider.androidOptions(nil) == nil)
        let intent = "intent://chat/open#Intent;scheme=tuisong;launchFlags=0x4000000;end"
        app.vendorSettings["tencent"] = ["huawei_intent": intent]
        let appended = "intent://chat/open#Intent;scheme=tuisong;launchFlags=0x4000000;S.ext=%7B%22id%22%3A7%7D;end"
        #expect(TencentProvider.androidIntent(pushInfo, ext: "{\"id\":7}", app: app) == appended)
        // ExtAsHuaweiIntentParam 0: the intent as configured, Ext only as data.
        #expect(TencentProvider.androidIntent(try info(#"{"Ext":"x"}"#), ext: "x", app: app) == intent)
        // The intent is an Android device's click, the one place "open this" is said (#29),
        // kept with the message's template; an iPhone's content has none.
        var template = OfflinePushTemplate(
            sender: "a", origin: .oneToOne(senderNick: nil), elements: [], pushInfo: pushInfo)
        template.androidIntent = appended
        let kept = try #require(OfflinePushTemplate(vendorContext: template.vendorContext))
        #expect(kept.content(badge: nil, android: true).click == .intent(appended))
        #expect(kept.content(badge: nil, android: false).click == nil)
        #expect(
            HuaweiIntent.appending(stringExtra: "ext", value: "订单 a;b", to: intent).hasSuffix(
                "S.ext=%E8%AE%A2%E5%8D%95%20a%3Bb;end"))
        #expect(HuaweiIntent.problem(intent) == nil)
        #expect(HuaweiIntent.problem("https://example.com") != nil)
        #expect(HuaweiIntent.problem("intent://x#Intent;scheme=a") != nil)
    }
}
