import Foundation
import Testing

@testable import TuisongCore

@Suite struct PushTypeTests {
    @Test func prioritiesAndRawValues() {
        for type in PushType.allCases {
            #expect(type.defaultPriority == (type == .background ? .powerAware : .immediate))
        }
        #expect(PushType(rawValue: "liveactivity") == .liveactivity)
        #expect(PushType(rawValue: "Alert") == nil)
        #expect([PushPriority.immediate, .powerAware, .low].map(\.rawValue) == [10, 5, 1])
        #expect(PushPriority(rawValue: 7) == nil)
    }
}

@Suite struct PushContentCodableTests {
    @Test func roundTripsThroughJSONEncoderLeavingOutWhatIsUnset() throws {
        let contents = [
            PushContent(body: "plain", badge: 1, sound: "default"),
            PushContent(
                title: "t", body: "b", bodyLocArgs: ["x"], sound: "c", image: "https://ex.com/a.png", thread: "th",
                data: ["k": ["v": nil]], background: true, click: .url("https://ex.com"),
                services: [
                    "apns": [
                        "interruption_level": "passive", "relevance_score": 0.2, "critical_volume": 0.3,
                        "timestamp": 1_700_000_000, "event": "start", "content_state": ["a": 1],
                        "attributes_type": "T", "attributes": ["b": [true]],
                    ],
                    "other": ["k": 1.5],
                ]),
            PushContent(click: .openApp), PushContent(click: .intent("intent://x#Intent;end")),
        ]
        for content in contents {
            let data = try JSONEncoder().encode(content)
            #expect(try JSONDecoder().decode(PushContent.self, from: data) == content)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(
            String(decoding: try encoder.encode(PushContent(body: "hi", badge: 2)), as: UTF8.self)
                == #"{"badge":2,"body":"hi"}"#)
        // Nulls read as unset: the form the v13/pg7 migrations write. Their `apns` object, a
        // service's fields under its name beside the shared ones, is that service's entry, kept
        // as stored (its transport reads a null member as unset).
        let migrated =
            #"{"title":null,"body":"hi","data":{},"background":false,"apns":{"critical_volume":null,"mutable_content":false}}"#
        #expect(
            try JSONDecoder().decode(PushContent.self, from: Data(migrated.utf8))
                == PushContent(body: "hi", services: ["apns": ["critical_volume": nil, "mutable_content": false]]))
    }

    @Test func aServiceEntryOfAnOlderRowIsReadIntoServicesAndWrittenUnderIt() throws {
        // The layout before per-service content: a service's object beside the shared keys.
        let older = #"{"body":"hi","apns":{"mutable_content":true},"gone":null}"#
        let content = try JSONDecoder().decode(PushContent.self, from: Data(older.utf8))
        #expect(content == PushContent(body: "hi", services: ["apns": ["mutable_content": true]]))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(
            String(decoding: try encoder.encode(content), as: UTF8.self)
                == #"{"body":"hi","services":{"apns":{"mutable_content":true}}}"#)
        // An entry under `services` wins over the older spelling of the same service.
        let both = #"{"apns":{"mutable_content":true},"services":{"apns":{"event":"end"}}}"#
        #expect(
            try JSONDecoder().decode(PushContent.self, from: Data(both.utf8)).services == ["apns": ["event": "end"]])
    }

    @Test func settingAServiceFieldKeepsNumbersAsTheyReadBack() throws {
        let channel = PushChannel("example")
        var content = PushContent(body: "b")
        content.set("volume", .double(1), forService: channel)
        content.set("score", .double(0.5), forService: channel)
        content.set("on", true, forService: channel)
        #expect(content.services == ["example": ["volume": 1, "score": 0.5, "on": true]])
        let text = try JSONEncoder().encode(content)
        #expect(try JSONDecoder().decode(PushContent.self, from: text) == content)
        content.set("on", nil, forService: channel)
        #expect(content.services == ["example": ["volume": 1, "score": 0.5]])
        content.set("volume", nil, forService: channel)
        content.set("score", nil, forService: channel)
        #expect(content.services.isEmpty)
    }
}
