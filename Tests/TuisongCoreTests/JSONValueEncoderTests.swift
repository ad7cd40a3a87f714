import Foundation
import Testing

@testable import TuisongCore

/// `JSONValue(encoding:)` must mean what `JSONEncoder` means: the store's JSON columns and the
/// APIs' answers moved from one to the other.
@Suite struct JSONValueEncoderTests {
    /// Both texts, parsed and written again by JSONValue, are the same bytes: same keys, same
    /// values (a double `1.0` and an integer `1` read back as the same number).
    private func expectSameMeaning<T: Encodable>(_ value: T, sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let foundation = try JSONEncoder().encode(value)
        let ours = try JSONValue.encodedText(value)
        let parsedFoundation = try #require(JSONValue(jsonObject: try JSONSerialization.jsonObject(with: foundation)))
        let parsedOurs = try #require(JSONValue(jsonObject: try JSONSerialization.jsonObject(with: Data(ours))))
        #expect(
            parsedOurs.serializedString == parsedFoundation.serializedString, sourceLocation: sourceLocation)
    }

    private static let fullContent = PushContent(
        title: "T", subtitle: "S", body: "B/ä \"q\"\n", titleLocKey: "TK", titleLocArgs: ["t1"], subtitleLocKey: "SK",
        subtitleLocArgs: ["s1", "s2"], bodyLocKey: "BK", bodyLocArgs: ["b1"], badge: 0, sound: "default",
        image: "https://example.com/i.png", category: "REPLY", thread: "chat-7",
        data: ["order": ["id": 42, "paid": true, "total": 9.5], "z": nil, "list": [1, "two"]], background: true,
        click: .url("https://example.com/x"),
        services: [
            "apns": [
                "interruption_level": "time-sensitive", "relevance_score": 0.75, "mutable_content": true,
                "target_content_id": "win-1", "timestamp": 1_700_000_000, "event": "update",
                "content_state": ["home": 2], "stale_date": 1_700_003_600, "attributes_type": "Match",
                "attributes": ["m": "A"],
            ]
        ])

    @Test func pushContentOptionsAudienceAndLabelsMeanTheSame() throws {
        try expectSameMeaning(Self.fullContent)
        try expectSameMeaning(PushContent())
        try expectSameMeaning(PushContent(body: "x", click: .intent("intent://open#Intent;end")))
        try expectSameMeaning(
            PushOptions(
                pushType: .alert, priority: .immediate, expiration: Date(timeIntervalSince1970: 1_800_000_000.5)))
        try expectSameMeaning(Audience.tag("vip"))
        try expectSameMeaning(Audience.tokens(["a", "b"]))
        try expectSameMeaning(Audience.all)
        try expectSameMeaning(["vendor": "baidu", "timer_id": "t-1"])
        try expectSameMeaning([String: String]())
        try expectSameMeaning([Int: String](uniqueKeysWithValues: [(1, "one"), (20, "twenty")]))
    }

    @Test func storedContentDecodesBackUnchanged() throws {
        let text = try JSONValue.encodedText(Self.fullContent)
        #expect(try JSONDecoder().decode(PushContent.self, from: Data(text)) == Self.fullContent)
    }

    @Test func keysAreSortedAndSlashesUnescaped() throws {
        struct Record: Encodable {
            let zeta = 1
            let alpha = "a/b"
            let middle: Int? = nil
            let flag = false
        }
        #expect(
            String(decoding: try JSONValue.encodedText(Record()), as: UTF8.self)
                == #"{"alpha":"a/b","flag":false,"zeta":1}"#)
    }

    @Test func dataAndURLFallBackToJSONEncoder() throws {
        struct Blob: Encodable {
            let bytes = Data([0, 1, 2, 250])
            let link = URL(string: "https://example.com/a?b=1")!
        }
        #expect(throws: JSONValue.EncodingUnsupported.self) { try JSONValue(encoding: Blob()) }
        let text = String(decoding: try JSONValue.encodedText(Blob()), as: UTF8.self)
        #expect(text == #"{"bytes":"AAEC+g==","link":"https://example.com/a?b=1"}"#)
    }

    @Test func nonFiniteNumbersAreRefusedLikeJSONEncoder() {
        #expect(throws: EncodingError.self) { try JSONValue.encodedText(["x": Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONValue.encodedText([Double.infinity]) }
    }

    @Test func superEncoderWritesUnderSuperAsJSONEncoderDoes() throws {
        class Base: Encodable {
            var base = 1
        }
        final class Derived: Base {
            let own = "x"
            private enum Keys: String, CodingKey { case own }
            override func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                try container.encode(own, forKey: .own)
                try super.encode(to: container.superEncoder())
            }
        }
        try expectSameMeaning(Derived())
        #expect(
            String(decoding: try JSONValue.encodedText(Derived()), as: UTF8.self) == #"{"own":"x","super":{"base":1}}"#)
    }

    @Test func swiftScalarsInAnObjectKeepTheirJSONType() throws {
        let object: [String: Any] = [
            "bool": true, "int": 1, "double": 1.5, "null": NSNull(), "list": ["x", 2], "int64": Int64(7),
            "nested": ["false": false],
        ]
        let value = try #require(JSONValue(jsonObject: object))
        #expect(
            value.serializedString
                == #"{"bool":true,"double":1.5,"int":1,"int64":7,"list":["x",2],"nested":{"false":false},"null":null}"#)
    }

    /// A message's stored content and options build their JSON themselves
    /// (`JSONValueRepresentable`): the stored text is pinned here, the same through
    /// `JSONValue.encodedText` (the store) and `JSONEncoder` (anything encoding them whole).
    @Test func storedContentAndOptionsKeepTheirText() throws {
        var content = PushContent(title: "Hi", body: "好", badge: 3, sound: "ding")
        content.titleLocArgs = ["a", "b"]
        content.data = ["order": ["id": 42, "paid": true]]
        content.background = true
        content.click = .intent("intent://x#Intent;end")
        content.services = ["huawei": ["importance": "NORMAL"]]
        var android = AndroidOptions(channelIDs: ["xiaomi": "chat"], sound: "ring")
        android.olderFields = ["classification": 1]
        android.legacyClick = .url("https://example.com/a")
        let options = PushOptions(
            pushType: .alert, priority: .powerAware, expiration: Date(timeIntervalSinceReferenceDate: 1_000.5),
            collapseID: "c", environment: .production, android: android, services: ["vivo": ["category": "IM"]])
        let expectations: [(any Encodable, String)] = [
            (
                content,
                #"{"background":true,"badge":3,"body":"好","click":{"intent":"intent://x#Intent;end"},"#
                    + #""data":{"order":{"id":42,"paid":true}},"services":{"huawei":{"importance":"NORMAL"}},"#
                    + #""sound":"ding","title":"Hi","title_loc_args":["a","b"]}"#
            ),
            (PushContent(), "{}"),
            (PushContent.ClickAction.openApp, #""app""#),
            (
                options,
                #"{"android":{"category":{},"channelIDs":{"xiaomi":"chat"},"classification":1,"importance":{},"#
                    + #""sound":"ring","url":"https://example.com/a"},"collapseID":"c","environment":"production","#
                    + #""expiration":1000.5,"priority":5,"pushType":"alert","services":{"vivo":{"category":"IM"}}}"#
            ),
            (PushOptions(), #"{"pushType":"alert"}"#),
        ]
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for (value, text) in expectations {
            #expect(String(decoding: try JSONValue.encodedText(value), as: UTF8.self) == text)
            #expect(String(decoding: try foundation.encode(value), as: UTF8.self) == text)
        }
        let storedContent = try JSONDecoder().decode(PushContent.self, from: Data(JSONValue.encodedText(content)))
        #expect(storedContent == content)
        let storedOptions = try JSONDecoder().decode(PushOptions.self, from: Data(JSONValue.encodedText(options)))
        #expect(storedOptions == options)
    }

    /// A message's stored audience and labels are written without the tree encoder too; the
    /// text stays what Swift's synthesized `Codable` wrote (stored rows are read back by it).
    @Test func storedAudiencesAndLabelsKeepTheirText() throws {
        let expectations: [(Audience, String)] = [
            (.tokens(["a1", "b2"]), #"{"tokens":{"_0":["a1","b2"]}}"#),
            (.devices([7, 42]), #"{"devices":{"_0":[7,42]}}"#),
            (.tag("vip 好"), #"{"tag":{"_0":"vip 好"}}"#),
            (.all, #"{"all":{}}"#),
            (.accounts(["u1"]), #"{"accounts":{"_0":["u1"]}}"#),
            (.allAccounts, #"{"allAccounts":{}}"#),
            (
                .tagSelection(TagSelection(anyOf: ["a"], allOf: [], noneOf: ["n"])),
                #"{"tagSelection":{"_0":{"allOf":[],"anyOf":["a"],"noneOf":["n"]}}}"#
            ),
        ]
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for (audience, text) in expectations {
            #expect(String(decoding: try JSONValue.encodedText(audience), as: UTF8.self) == text)
            #expect(String(decoding: try foundation.encode(audience), as: UTF8.self) == text)
            #expect(try JSONDecoder().decode(Audience.self, from: Data(text.utf8)) == audience)
        }
        let labels = ["topic_id": "t/1", "好": "x"]
        #expect(String(decoding: try JSONValue.encodedText(labels), as: UTF8.self) == #"{"topic_id":"t/1","好":"x"}"#)
        #expect(String(decoding: try JSONValue.encodedText([String: String]()), as: UTF8.self) == "{}")
    }
}
