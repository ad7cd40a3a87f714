import Testing
import TuisongCore

@testable import TuisongDelivery

@Suite struct AndroidContentTests {
    private func read(_ json: String) throws -> AndroidContent {
        try AndroidContent(apnsPayload: Array(json.utf8))
    }

    @Test func aPlainAlertIsTheBody() throws {
        let content = try read(#"{"aps":{"alert":"你好","badge":3,"sound":"default"},"msg_id":"42"}"#)
        #expect(content.title == nil)
        #expect(content.body == "你好")
        #expect(content.badge == 3)
        #expect(content.sound == "default")
        #expect(!content.isDataOnly)
        #expect(content.data == [.init(key: "msg_id", value: "42")])
    }

    @Test func anAlertObjectGivesTitleBodyAndLocalisation() throws {
        let content = try read(
            #"""
            {"aps":{"alert":{"title":"T","subtitle":"S","body":"B","loc-key":"MSG","loc-args":["a",1],
            "title-loc-key":"TT"},"thread-id":"chat-7","category":"OPEN_CHAT",
            "sound":{"critical":1,"name":"alarm.caf","volume":1}}}
            """#)
        #expect(content.title == "T")
        #expect(content.subtitle == "S")
        #expect(content.body == "B")
        #expect(content.bodyLocKey == "MSG")
        #expect(content.bodyLocArgs == ["a", "1"])
        #expect(content.titleLocKey == "TT")
        #expect(content.threadID == "chat-7")
        #expect(content.category == "OPEN_CHAT")
        #expect(content.sound == "alarm.caf")
    }

    @Test func noAlertIsADataMessageAndCustomValuesBecomeStrings() throws {
        let content = try read(
            #"{"aps":{"content-available":1},"z":{"k":[1,true]},"a":7,"b":null,"c":false,"d":"text"}"#)
        #expect(content.isDataOnly)
        #expect(
            content.data == [
                .init(key: "a", value: "7"), .init(key: "b", value: "null"), .init(key: "c", value: "false"),
                .init(key: "d", value: "text"), .init(key: "z", value: #"{"k":[1,true]}"#),
            ])
    }

    @Test(arguments: ["", "[]", #"{"alert":"x"}"#, #"{"aps":"x"}"#, "{"])
    func notAnAPNsPayload(_ json: String) {
        #expect(throws: AndroidContent.NotAnAPNsPayload.self) { try read(json) }
    }
}
