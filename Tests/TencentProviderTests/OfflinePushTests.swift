import Testing
import TuisongAPNsTransport
import TuisongCore

@testable import TencentProvider

/// Seed 003's rendering rules and OfflinePushInfo, from plain inputs.
@Suite struct OfflinePushTests {
    func body(_ json: String) throws -> [MessageElement] {
        try MessageElement.parseBody(try JSONValue(parsing: json))
    }

    func info(_ json: String) throws -> OfflinePushInfo? {
        try OfflinePushInfo.parse(try JSONValue(parsing: json))
    }

    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func theSeedExampleByteForByte() throws {
        let elements = try body(
            #"[{"MsgType":"TIMCustomElem","MsgContent":{"Data":"{\"order\":1}","Desc":"helloworld","Ext":"www.qq.com","Sound":"dingdong.aiff"}}]"#
        )
        let template = OfflinePushTemplate(
            sender: "alice", origin: .oneToOne(senderNick: "Alice"), elements: elements, pushInfo: nil)
        #expect(template.suppressed == nil)
        #expect(
            text(APNsPayload.render(template.content(badge: 5)))
                == #"{"aps":{"alert":"Alice:helloworld","badge":5,"sound":"dingdong.aiff"},"ext":"www.qq.com"}"#)
        // Data never reaches APNs.
        #expect(!text(APNsPayload.render(template.content(badge: 5))).contains("order"))
        // What is kept with the message gives back the same template.
        #expect(OfflinePushTemplate(vendorContext: template.vendorContext) == template)
    }

    @Test func contentJoinsElementWords() throws {
        let elements = try body(
            #"""
            [{"MsgType":"TIMTextElem","MsgContent":{"Text":"Test"}},
             {"MsgType":"TIMImageElem","MsgContent":{"UUID":"1","ImageFormat":1,"ImageInfoArray":[]}},
             {"MsgType":"TIMSoundElem","MsgContent":{"UUID":"2","Size":10,"Second":3}},
             {"MsgType":"TIMFileElem","MsgContent":{"UUID":"3","FileSize":10,"FileName":"a.txt"}},
             {"MsgType":"TIMFaceElem","MsgContent":{"Index":1,"Data":"x"}},
             {"MsgType":"TIMLocationElem","MsgContent":{"Desc":"here","Latitude":22.5,"Longitude":113.9}},
             {"MsgType":"TIMVideoFileElem","MsgContent":{"VideoUUID":"4"}},
             {"MsgType":"TIMCustomElem","MsgContent":{"Data":"d","Desc":"!"}}]
            """#)
        #expect(MessageElement.pushContent(elements) == "Test[图片][语音][文件][表情][位置][视频]!")
        let plain = OfflinePushTemplate(
            sender: "a", origin: .oneToOne(senderNick: nil), elements: Array(elements.prefix(2)), pushInfo: nil)
        #expect(plain.alert == "Test[图片]")
    }

    @Test func groupPrefixAndNoNick() throws {
        let elements = try body(#"[{"MsgType":"TIMTextElem","MsgContent":{"Text":"大家好"}}]"#)
        let group = OfflinePushTemplate(
            sender: "bob", origin: .group(senderName: "Bobby", groupName: "Team"), elements: elements, pushInfo: nil)
        #expect(text(APNsPayload.render(group.content(badge: 1))) == #"{"aps":{"alert":"Bobby(Team):大家好","badge":1}}"#)
        let anonymous = OfflinePushTemplate(
            sender: "bob", origin: .oneToOne(senderNick: ""), elements: elements, pushInfo: nil)
        #expect(anonymous.alert == "大家好")
    }

    @Test func longContentIsShortenedToFitAPNs() throws {
        let long = String(repeating: "长", count: 2_500)
        let elements = try body(#"[{"MsgType":"TIMTextElem","MsgContent":{"Text":"\#(long)"}}]"#)
        let template = OfflinePushTemplate(
            sender: "alice", origin: .oneToOne(senderNick: "Alice"), elements: elements, pushInfo: nil)
        #expect(template.alert.hasPrefix("Alice:长长") && template.alert.hasSuffix("长…"))
        #expect(template.alert.utf8.count == "Alice:".utf8.count + 665 * 3 + "…".utf8.count)
        #expect(APNsPayload.render(template.content(badge: 99_999)).count <= 4096)
        #expect(OfflinePushTemplate.shortened("短", toBytes: 2_000) == "短")
    }

    @Test func emptyContentAndPushFlagSuppress() throws {
        let emptyDesc = try body(#"[{"MsgType":"TIMCustomElem","MsgContent":{"Data":"x","Desc":""}}]"#)
        #expect(
            OfflinePushTemplate(sender: "a", origin: .oneToOne(senderNick: "A"), elements: emptyDesc, pushInfo: nil)
                .suppressed == "empty_content")
        // OfflinePushInfo.Desc gives it content again.
        #expect(
            OfflinePushTemplate(
                sender: "a", origin: .oneToOne(senderNick: "A"), elements: emptyDesc,
                pushInfo: try info(#"{"Desc":"你有新消息"}"#)
            ).alert == "A:你有新消息")
        let text = try body(#"[{"MsgType":"TIMTextElem","MsgContent":{"Text":"hi"}}]"#)
        #expect(
            OfflinePushTemplate(
                sender: "a", origin: .oneToOne(senderNick: "A"), elements: text, pushInfo: try info(#"{"PushFlag":1}"#)
            ).suppressed == "push_flag")
    }

    @Test func offlinePushInfoOverridesTheCustomElement() throws {
        let elements = try body(
            #"[{"MsgType":"TIMCustomElem","MsgContent":{"Data":"x","Desc":"d","Ext":"elem-ext","Sound":"elem.aiff"}}]"#)
        let pushInfo = try info(
            #"""
            {"PushFlag":0,"Title":"T","Desc":"New order","Ext":"{\"id\":7}",
             "ApnsInfo":{"Sound":"apns.aiff","BadgeMode":1,"SubTitle":"S","Image":"https://x/y.png","MutableContent":1}}
            """#)
        let template = OfflinePushTemplate(
            sender: "alice", origin: .oneToOne(senderNick: "Alice"), elements: elements, pushInfo: pushInfo)
        #expect(!template.countsBadge)
        #expect(
            text(APNsPayload.render(template.content(badge: nil)))
                == #"{"aps":{"alert":{"body":"Alice:New order","subtitle":"S","title":"T"},"mutable-content":1,"sound":"apns.aiff"},"ext":"{\"id\":7}","image":"https://x/y.png"}"#
        )
        // ApnsInfo.Title wins over Title.
        let titled = OfflinePushTemplate(
            sender: "alice", origin: .oneToOne(senderNick: "Alice"), elements: elements,
            pushInfo: try info(#"{"Title":"T","ApnsInfo":{"Title":"iOS"}}"#))
        #expect(
            text(APNsPayload.render(titled.content(badge: 2)))
                == #"{"aps":{"alert":{"body":"Alice:d","title":"iOS"},"badge":2,"sound":"elem.aiff"},"ext":"elem-ext"}"#
        )
    }

    @Test func badBodiesAnswerTencentsCodes() throws {
        func code(_ json: String) -> Int? {
            do {
                _ = try MessageElement.parseBody(try JSONValue(parsing: json)["MsgBody"])
                return nil
            } catch let error as TencentError {
                return error.code
            } catch {
                return -1
            }
        }
        #expect(code(#"{}"#) == 90007)
        #expect(code(#"{"MsgBody":{"MsgType":"TIMTextElem"}}"#) == 90007)
        #expect(code(#"{"MsgBody":[]}"#) == 90002)
        #expect(code(#"{"MsgBody":[1]}"#) == 90002)
        #expect(code(#"{"MsgBody":[{"MsgType":"TIMUnknown","MsgContent":{}}]}"#) == 90002)
        #expect(code(#"{"MsgBody":[{"MsgType":"TIMTextElem"}]}"#) == 90002)
        #expect(code(#"{"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":5}}]}"#) == 90002)
        #expect(code(#"{"MsgBody":[{"MsgType":"TIMLocationElem","MsgContent":{"Desc":"x"}}]}"#) == 90002)
        #expect(code(#"{"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"ok"}}]}"#) == nil)
        #expect(throws: TencentError.self) { try info(#"{"PushFlag":3}"#) }
        #expect(throws: TencentError.self) { try info(#"{"ApnsInfo":"x"}"#) }
    }

    @Test func perRecipientDecision() {
        func reason(
            suppressed: String? = nil, account: String = "bob", sender: String? = "alice", disabled: Bool = false,
            state: AppState? = .background
        ) -> String? {
            OfflinePushRules.skipReason(
                suppressed: suppressed, account: account, sender: sender, pushDisabled: disabled, appState: state)
        }
        #expect(reason() == nil)
        #expect(reason(state: nil) == nil)
        #expect(reason(state: .foreground) == "foreground")
        #expect(reason(disabled: true) == "push_disabled")
        #expect(reason(account: "alice") == "sender")
        #expect(reason(suppressed: "push_flag") == "push_flag")
        #expect(reason(sender: nil) == nil)
    }
}
