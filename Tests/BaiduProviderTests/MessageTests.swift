import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongPluginTestKit

@testable import BaiduProvider

/// Baidu `msg` / `messages` → the APNs payload.
@Suite struct MessageTests {
    func payload(_ text: String, _ type: BaiduMessageType = .notification) throws -> [String: Any] {
        let message = try BaiduMessage(text: text, type: type, parameter: "msg")
        let bytes = try APNsPayload.build(message.content, pushType: message.content.suggestedPushType)
        return try JSONSerialization.jsonObject(with: Data(bytes)) as! [String: Any]
    }

    func error(_ text: String, _ type: BaiduMessageType = .notification) -> BaiduError? {
        do {
            _ = try BaiduMessage(text: text, type: type, parameter: "msg")
            return nil
        } catch {
            return error
        }
    }

    @Test func iOSFormatKeepsApsAndCustomKeys() throws {
        let json = try payload(
            #"{"aps":{"alert":{"title":"订单","body":"已发货","loc-args":["a",2]},"badge":3,"sound":"ping.caf","mutable-content":1,"thread-id":"orders","category":"ORDER","content-available":1},"order_id":42,"extra":{"a":[1,2]}}"#
        )
        let aps = json["aps"] as! [String: Any]
        #expect((aps["alert"] as! [String: Any])["title"] as? String == "订单")
        #expect((aps["alert"] as! [String: Any])["body"] as? String == "已发货")
        #expect((aps["alert"] as! [String: Any])["loc-args"] as? [String] == ["a", "2"])
        #expect(aps["badge"] as? Int == 3)
        #expect(aps["sound"] as? String == "ping.caf")
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["content-available"] as? Int == 1)
        #expect(aps["thread-id"] as? String == "orders")
        #expect(aps["category"] as? String == "ORDER")
        #expect(json["order_id"] as? Int == 42)
        #expect((json["extra"] as? [String: Any])?["a"] as? [Int] == [1, 2])
        #expect(json.count == 3)
    }

    @Test func baiduSampleWithEmptySound() throws {
        // The iOS sample of Baidu's SDK docs.
        let json = try payload(
            #"{"aps":{"alert":"iOS Message from Push","sound":"","badge":1},"key1":"value1","key2":"value2"}"#)
        let aps = json["aps"] as! [String: Any]
        #expect(aps["alert"] as? String == "iOS Message from Push")
        #expect(aps["sound"] == nil)
        #expect(aps["badge"] as? Int == 1)
        #expect(json["key1"] as? String == "value1" && json["key2"] as? String == "value2")
    }

    @Test func plainStringIsTheAlert() throws {
        #expect((try payload(#""你好""#)["aps"] as? [String: Any])?["alert"] as? String == "你好")
        // JSON text wrapped in a JSON string (Python SDK's json.dumps of a str) is unwrapped.
        let wrapped = try payload(#""{\"aps\":{\"alert\":\"hi\"},\"k\":1}""#)
        #expect((wrapped["aps"] as? [String: Any])?["alert"] as? String == "hi")
        #expect(wrapped["k"] as? Int == 1)
    }

    @Test func androidStyleBecomesTitleAndBody() throws {
        let json = try payload(#"{"title":"T","description":"D","custom_content":{"url":"x"}}"#)
        let alert = (json["aps"] as! [String: Any])["alert"] as! [String: Any]
        #expect(alert["title"] as? String == "T" && alert["body"] as? String == "D")
        #expect(json["url"] as? String == "x")
    }

    @Test func passThroughMessageIsSilent() throws {
        let object = try payload(#"{"aps":{"alert":"dropped"},"cmd":"sync","n":2}"#, .message)
        #expect(object["aps"] as? [String: Int] == ["content-available": 1])
        #expect(object["cmd"] as? String == "sync" && object["n"] as? Int == 2)
        let message = try BaiduMessage(text: #""refresh""#, type: .message, parameter: "msg")
        #expect(message.content.suggestedPushType == .background)
        let text = try payload(#""refresh""#, .message)
        #expect(text["message"] as? String == "refresh")
        #expect(text["aps"] as? [String: Int] == ["content-available": 1])
    }

    @Test func refusals() {
        #expect(error("not json{")?.code == .invalidParameters)
        #expect(error("not json{")?.message.contains("msg is not valid JSON") == true)
        #expect(error("42")?.code == .invalidParameters)
        #expect(error(#"{"aps":"x"}"#)?.message.contains("aps must be an object") == true)
        #expect(error(#"{"aps":{"badge":-1}}"#)?.message.contains("aps.badge") == true)
        #expect(error(#"{"aps":{"alert":{"title":5}}}"#)?.message.contains("aps.alert.title") == true)
        #expect(error(#"{"aps":{"interruption-level":"loud","alert":"x"}}"#) != nil)
        #expect(error(#"{"aps":{}}"#)?.message.contains("nothing to show") == true)
        #expect(error(#"{"k":1}"#)?.message.contains("needs \"aps\"") == true)
        #expect(error(#"{"aps":{"alert":"x"}}"#) == nil)
    }
}
