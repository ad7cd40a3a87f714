import Foundation
import Testing
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

@testable import TuisongOPPO
@testable import TuisongVivo
@testable import TuisongXiaomi

/// Xiaomi, OPPO and vivo: what each is sent for a push and what their answers mean
/// (docs/reference/android.md §8–11). Plain rendering, no sockets.
@Suite struct OEMRenderingTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    static let alert = PushContent(title: "Hi", body: "New message", sound: "a.caf", data: ["order": ["id": 42]])

    @Test func xiaomiFormFields() throws {
        let headers = PushHeaders(
            expiration: now.addingTimeInterval(60), android: AndroidOptions(channelIDs: ["xiaomi": "chat"]))
        let fields = Dictionary(
            XiaomiMessage.fields(content: Self.alert, headers: headers, packageName: "com.ex", now: now)
        ) { $1 }
        #expect(fields["restricted_package_name"] == "com.ex")
        #expect(fields["title"] == "Hi")
        #expect(fields["description"] == "New message")
        #expect(fields["pass_through"] == "0")
        #expect(fields["payload"] == #"{"order":"{\"id\":42}"}"#)
        #expect(fields["time_to_live"] == "60000")
        #expect(fields["extra.channel_id"] == "chat")
        #expect(fields["extra.notify_effect"] == "1")
        let data = Dictionary(
            XiaomiMessage.fields(
                content: PushContent(data: ["k": "v"], background: true), headers: PushHeaders(),
                packageName: "com.ex", now: now)
        ) { $1 }
        #expect(data["pass_through"] == "1")
        #expect(data["title"] == nil)
    }

    /// The content's `click` (the one spelling of "open this": Baidu's `open_type` 1/2, the
    /// native API's `android.intent` and Tencent's Huawei intent land there, #29): a URL is each
    /// service's open-a-web-page click, an intent its intent click; a URL over a service's length
    /// limit opens the app instead. A message stored before #29 said it in its `AndroidOptions`
    /// (`url`, `intent`; the intent won): it renders the same.
    @Test func anOpenURLClickOnXiaomiOPPOAndVivo() throws {
        let url = "https://shop.example.com/sale?id=7"
        var alert = Self.alert
        alert.click = .url(url)
        let headers = PushHeaders()
        let xiaomi = Dictionary(XiaomiMessage.fields(content: alert, headers: headers, packageName: "p", now: now)) {
            $1
        }
        #expect(xiaomi["extra.notify_effect"] == "3" && xiaomi["extra.web_uri"] == url)
        let oppo = OPPOMessage.notification(content: alert, headers: headers, now: now)
        #expect(oppo["click_action_type"] == 2 && oppo["click_action_url"] == .string(url))
        let vivo = VivoMessage.fields(content: alert, headers: headers, now: now)
        #expect(vivo["skipType"] == 2 && vivo["skipContent"] == .string(url))

        var opens = Self.alert
        opens.click = .intent("intent://x#Intent;end")
        let intent = Dictionary(XiaomiMessage.fields(content: opens, headers: headers, packageName: "p", now: now)) {
            $1
        }
        #expect(intent["extra.notify_effect"] == "2" && intent["extra.web_uri"] == nil)
        #expect(OPPOMessage.notification(content: opens, headers: headers, now: now)["click_action_type"] == 5)
        #expect(VivoMessage.fields(content: opens, headers: headers, now: now)["skipType"] == 4)

        var long = Self.alert
        long.click = .url("https://x.example/" + String(repeating: "a", count: 1000))
        #expect(OPPOMessage.notification(content: long, headers: headers, now: now)["click_action_type"] == 0)
        #expect(VivoMessage.fields(content: long, headers: headers, now: now)["skipType"] == 1)

        // A row stored before #29: the click in its Android options, read as the content's.
        let stored = try JSONDecoder().decode(
            AndroidOptions.self, from: Data(#"{"intent":"intent://x#Intent;end","url":"\#(url)"}"#.utf8))
        #expect(stored.legacyClick == .intent("intent://x#Intent;end"))
        let old = PushHeaders(android: stored)
        func form(_ content: PushContent, _ headers: PushHeaders) -> [String] {
            XiaomiMessage.fields(content: content, headers: headers, packageName: "p", now: now).map { "\($0)=\($1)" }
        }
        #expect(form(Self.alert, old) == form(opens, headers))
        #expect(
            OPPOMessage.notification(content: Self.alert, headers: old, now: now)
                == OPPOMessage.notification(content: opens, headers: headers, now: now))
        #expect(
            VivoMessage.fields(content: Self.alert, headers: old, now: now)
                == VivoMessage.fields(content: opens, headers: headers, now: now))
        // Written back, it keeps its old key; the content's own click wins over it.
        #expect(
            try JSONValue(parsing: try JSONValue.encodedText(stored))
                == ["channelIDs": [:], "importance": [:], "category": [:], "intent": "intent://x#Intent;end"])
        #expect(VivoMessage.fields(content: alert, headers: old, now: now)["skipType"] == 2)
        let onlyURL = try JSONDecoder().decode(AndroidOptions.self, from: Data(#"{"url":"\#(url)"}"#.utf8))
        #expect(onlyURL.legacyClick == .url(url))
    }

    @Test func xiaomiAnswers() {
        func read(_ json: String, status: Int = 200) -> TokenBatchAnswer {
            XiaomiAnswer.read(status: status, body: Array(json.utf8), tokens: ["a", "b", "c"])
        }
        #expect(
            read(#"{"result":"ok","code":0,"data":{"id":"m1","bad_regids":"b,c"}}"#)
                == .outcomes([
                    .delivered(serviceMessageID: "m1"), .invalidate(.service("bad_regid"), since: nil),
                    .invalidate(.service("bad_regid"), since: nil),
                ]))
        #expect(
            read(#"{"result":"error","code":20301}"#)
                == .outcomes(Array(repeating: .invalidate(.service("20301"), since: nil), count: 3)))
        #expect(read(#"{"result":"error","code":200001}"#) == .dailyQuota(.service("200001")))
        #expect(read(#"{"result":"error","code":21301}"#) == .credentialRefused(.service("21301")))
        #expect(
            read(#"{"result":"error","code":10002}"#)
                == .outcomes(Array(repeating: .retry(.service("10002"), after: nil), count: 3)))
        #expect(
            read(#"{"result":"error","code":21305}"#)
                == .outcomes(Array(repeating: .failed(.service("21305")), count: 3)))
    }

    @Test func oppoNotification() throws {
        let headers = PushHeaders(
            expiration: now.addingTimeInterval(10 * 86_400),
            android: AndroidOptions(channelIDs: ["oppo": "im"]))
        var alert = Self.alert
        alert.click = .intent("intent://x#Intent;end")
        let notification = OPPOMessage.notification(content: alert, headers: headers, now: now)
        #expect(notification["title"] == "Hi")
        #expect(notification["content"] == "New message")
        #expect(notification["click_action_type"] == 5)
        #expect(notification["click_action_url"] == "intent://x#Intent;end")
        #expect(notification["channel_id"] == "im")
        // At most three days offline.
        #expect(notification["off_line_ttl"] == 259_200)
        #expect(notification["action_parameters"] == .string(#"{"order":"{\"id\":42}"}"#))
    }

    @Test func oppoAnswers() {
        func read(_ json: String, status: Int = 200) -> TokenBatchAnswer {
            OPPOAnswer.read(status: status, body: Array(json.utf8), tokens: ["a", "b"])
        }
        #expect(
            read(
                #"{"code":0,"message":"Success","data":[{"messageId":"m1","registrationId":"a"},{"registrationId":"b","errorCode":10000,"errorMessage":"Invalid RegistrationId"}]}"#
            ) == .outcomes([.delivered(serviceMessageID: "m1"), .invalidate(.service("10000"), since: nil)]))
        #expect(read(#"{"code":11,"message":"Invalid AuthToken"}"#) == .refreshAuth(.service("11")))
        #expect(read(#"{"code":33,"message":"exceeds the daily limit"}"#) == .dailyQuota(.service("33")))
        #expect(read(#"{"code":14,"message":"Invalid App Key"}"#) == .credentialRefused(.service("14")))
        #expect(read(#"{"code":-1}"#) == .outcomes(Array(repeating: .retry(.service("-1"), after: nil), count: 2)))
    }

    @Test func vivoFieldsAndTruncation() throws {
        let headers = PushHeaders(
            expiration: now.addingTimeInterval(60),
            android: AndroidOptions(category: ["vivo": "IM"]), services: ["vivo": ["classification": 1]])
        let fields = VivoMessage.fields(content: Self.alert, headers: headers, now: now)
        #expect(fields["title"] == "Hi")
        #expect(fields["content"] == "New message")
        #expect(fields["classification"] == 1)
        #expect(fields["category"] == "IM")
        #expect(fields["skipType"] == 1)
        #expect(fields["notifyType"] == 4)
        // At least 15 minutes.
        #expect(fields["timeToLive"] == 900)
        #expect(fields["clientCustomMap"] == ["order": #"{"id":42}"#])
        // A Chinese character counts two of the title's 40.
        #expect(
            VivoMessage.truncated(String(repeating: "好", count: 30), units: 40) == String(repeating: "好", count: 20))
        #expect(VivoMessage.truncated("abc", units: 40) == "abc")
    }

    @Test func vivoAnswers() {
        func read(_ json: String, status: Int = 200) -> TokenBatchAnswer {
            VivoAnswer.read(status: status, body: Array(json.utf8), tokens: ["a", "b"])
        }
        #expect(
            read(#"{"result":0,"desc":"请求成功","taskId":"t1","invalidUsers":[{"status":1,"userid":"b"}]}"#)
                == .outcomes([.delivered(serviceMessageID: "t1"), .invalidate(.service("10302"), since: nil)]))
        #expect(
            read(#"{"result":10302,"desc":"regId不合法"}"#)
                == .outcomes(Array(repeating: .invalidate(.service("10302"), since: nil), count: 2)))
        #expect(read(#"{"result":10000,"desc":"权限认证失败"}"#) == .refreshAuth(.service("10000")))
        #expect(read(#"{"result":10070,"desc":"发送总量超出限制"}"#) == .dailyQuota(.service("10070")))
        #expect(read(#"{"result":10073}"#) == .dailyQuota(.service("10073")))
        #expect(
            read("Internet server error!", status: 500)
                == .outcomes(Array(repeating: .retry(.service("HTTP500"), after: nil), count: 2)))
    }
}
