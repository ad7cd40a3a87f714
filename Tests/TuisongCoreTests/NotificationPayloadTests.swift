import Foundation
import Testing

@testable import TuisongCore

@Suite struct PushTypeTests {
    @Test func topicsFollowTheReference() {
        let expected: [PushType: String] = [
            .alert: "com.example.app", .background: "com.example.app", .mdm: "com.example.app",
            .voip: "com.example.app.voip", .complication: "com.example.app.complication",
            .fileprovider: "com.example.app.pushkit.fileprovider", .location: "com.example.app.location-query",
            .liveactivity: "com.example.app.push-type.liveactivity", .pushtotalk: "com.example.app.voip-ptt",
            .widgets: "com.example.app.push-type.widgets", .controls: "com.example.app.push-type.controls",
        ]
        #expect(Set(expected.keys) == Set(PushType.allCases))
        for (type, topic) in expected {
            #expect(type.topic(forBundleID: "com.example.app") == topic)
            // Already suffixed (a topic taken from a certificate) stays as it is.
            #expect(type.topic(forBundleID: topic) == topic)
        }
    }

    @Test func limitsPrioritiesAndRawValues() {
        for type in PushType.allCases {
            #expect(type.payloadLimit == (type == .voip ? 5120 : 4096))
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
                apns: .init(
                    interruptionLevel: .passive, relevanceScore: 0.2, criticalVolume: 0.3,
                    timestamp: Date(timeIntervalSince1970: 1_700_000_000), event: .start, contentState: ["a": 1],
                    attributesType: "T", attributes: ["b": [true]])),
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
        // Nulls read as unset: the form the v13/pg7 migrations write.
        let migrated =
            #"{"title":null,"body":"hi","data":{},"background":false,"apns":{"critical_volume":null,"mutable_content":false}}"#
        #expect(try JSONDecoder().decode(PushContent.self, from: Data(migrated.utf8)) == PushContent(body: "hi"))
    }
}
