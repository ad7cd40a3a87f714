import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore

private func rendered(_ content: PushContent) -> String {
    String(decoding: APNsPayload.render(content), as: UTF8.self)
}

extension PushContent {
    /// The content with `apns` as its APNs entry.
    fileprivate func with(apns: APNsContent) -> PushContent {
        var content = self
        content.apns = apns
        return content
    }
}

/// The APNs transport's rendering of neutral content (`APNsPayload.render`).
@Suite struct APNsPayloadRenderTests {
    @Test func aBodyAloneIsThePlainStringAlert() {
        #expect(rendered(PushContent(body: "Hi")) == #"{"aps":{"alert":"Hi"}}"#)
        #expect(rendered(PushContent(title: "T", body: "Hi")) == #"{"aps":{"alert":{"body":"Hi","title":"T"}}}"#)
        #expect(rendered(PushContent()) == #"{"aps":{}}"#)
        #expect(
            rendered(PushContent(body: "Hi").with(apns: .init(alertAsObject: true)))
                == #"{"aps":{"alert":{"body":"Hi"}}}"#)
    }

    @Test func everyApsKeyWithApplesNames() {
        let content = PushContent(
            title: "T", subtitle: "S", body: "B", titleLocKey: "TK", titleLocArgs: ["t1"], subtitleLocKey: "SK",
            subtitleLocArgs: ["s1", "s2"], bodyLocKey: "BK", bodyLocArgs: ["b1"], badge: 0, sound: "default",
            category: "REPLY", thread: "chat-7", data: ["order": ["id": 42], "z": "last"], background: true
        ).with(
            apns: .init(
                interruptionLevel: .timeSensitive, relevanceScore: 0.75, mutableContent: true, targetContentID: "win-1",
                launchImage: "L.png", actionLocKey: "AK", summaryArg: "Ann", summaryArgCount: 2))
        let expected: String = [
            #"{"aps":{"alert":{"action-loc-key":"AK","body":"B","launch-image":"L.png","loc-args":["b1"],"loc-key":"BK","#,
            #""subtitle":"S","subtitle-loc-args":["s1","s2"],"subtitle-loc-key":"SK","summary-arg":"Ann","summary-arg-count":2,"#,
            #""title":"T","title-loc-args":["t1"],"title-loc-key":"TK"},"badge":0,"category":"REPLY","content-available":1,"#,
            #""interruption-level":"time-sensitive","mutable-content":1,"relevance-score":0.75,"sound":"default","#,
            #""target-content-id":"win-1","thread-id":"chat-7"},"order":{"id":42},"z":"last"}"#,
        ].joined()
        #expect(rendered(content) == expected)
    }

    @Test func criticalSoundAndFalseFlagsOmitted() {
        let content = PushContent(
            body: "Fire", sound: "alarm.caf", background: false
        ).with(apns: .init(interruptionLevel: .critical, mutableContent: false, criticalVolume: 0.5))
        #expect(
            rendered(content)
                == #"{"aps":{"alert":"Fire","interruption-level":"critical","sound":{"critical":1,"name":"alarm.caf","volume":0.5}}}"#
        )
    }

    @Test func liveActivityFields() {
        let content = PushContent(title: "Score", body: "2-1").with(
            apns: .init(
                timestamp: Date(timeIntervalSince1970: 1_700_000_000.9), event: .update,
                contentState: ["home": 2, "away": 1], staleDate: Date(timeIntervalSince1970: 1_700_003_600),
                dismissalDate: Date(timeIntervalSince1970: 1_700_007_200), attributesType: "MatchAttributes",
                attributes: ["match": "A-B"]))
        let expected: String = [
            #"{"aps":{"alert":{"body":"2-1","title":"Score"},"attributes":{"match":"A-B"},"attributes-type":"MatchAttributes","#,
            #""content-state":{"away":1,"home":2},"dismissal-date":1700007200,"event":"update","stale-date":1700003600,"#,
            #""timestamp":1700000000}}"#,
        ].joined()
        #expect(rendered(content) == expected)
    }

    @Test func customApsNeverOverridesTheRealOne() throws {
        let content = PushContent(body: "real", data: ["aps": ["alert": "fake"], "k": 1])
        #expect(rendered(content) == #"{"aps":{"alert":"real"},"k":1}"#)
        #expect(throws: PayloadError.self) { try content.validate() }
        do {
            try content.validate()
        } catch {
            #expect(error.code == .reservedKey)
        }
    }

    @Test func renderedPayloadIsValidJSONForFoundation() throws {
        let content = PushContent(
            title: "标题 \"quoted\"", body: "line\nbreak\u{7}", badge: 5,
            data: ["emoji": "😀", "nested": ["list": [1, 2.5, nil]]])
        let object = try JSONSerialization.jsonObject(with: Data(APNsPayload.render(content))) as? [String: Any]
        let aps = try #require(object?["aps"] as? [String: Any])
        let alert = try #require(aps["alert"] as? [String: Any])
        #expect(alert["title"] as? String == "标题 \"quoted\"")
        #expect(alert["body"] as? String == "line\nbreak\u{7}")
        #expect(object?["emoji"] as? String == "😀")
    }
}

@Suite struct APNsPayloadValidationTests {
    /// A payload of exactly `size` bytes: `{"aps":{"alert":"x"},"p":"…"}` padded.
    private func payload(ofSize size: Int) -> [UInt8] {
        let base = APNsPayload.render(PushContent(body: "x", data: ["p": ""])).count
        let bytes = APNsPayload.render(
            PushContent(body: "x", data: ["p": .string(String(repeating: "a", count: size - base))]))
        precondition(bytes.count == size)
        return bytes
    }

    @Test func sizeLimits() throws {
        try APNsPayload.validate(payload(ofSize: 4096), pushType: .alert)
        do {
            try APNsPayload.validate(payload(ofSize: 4097), pushType: .alert)
            Issue.record("4097 bytes accepted")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(error.size == 4097)
            #expect(error.limit == 4096)
            #expect(error.description.contains("4097") && error.description.contains("4096"))
        }
        try APNsPayload.validate(payload(ofSize: 5120), pushType: .voip)
        #expect(throws: PayloadError.self) { try APNsPayload.validate(payload(ofSize: 5121), pushType: .voip) }
        // Multi-byte characters count as bytes, not characters.
        let chinese = PushContent(body: String(repeating: "推", count: 1400))
        #expect(APNsPayload.render(chinese).count > 4096)
        #expect(throws: PayloadError.self) { try APNsPayload.build(chinese, pushType: .alert) }
    }

    @Test func shapeAndPushTypeRules() {
        func code(_ bytes: String, _ type: PushType) -> PayloadError.Code? {
            do {
                try APNsPayload.validate(Array(bytes.utf8), pushType: type)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code("", .alert) == .invalidJSON)
        #expect(code("not json", .alert) == .invalidJSON)
        #expect(code("[1]", .alert) == .invalidJSON)
        #expect(code(#"{"k":1}"#, .alert) == .missingAPS)
        #expect(code(#"{"aps":"x"}"#, .voip) == .missingAPS)
        #expect(code(#"{"k":1}"#, .voip) == nil)
        #expect(code(#"{"mdm":"magic"}"#, .mdm) == nil)
        #expect(code(#"{"aps":{"content-available":1},"data":1}"#, .background) == nil)
        #expect(code(#"{"aps":{}}"#, .background) == .invalidForPushType)
        #expect(code(#"{"aps":{"content-available":1,"alert":"x"}}"#, .background) == .invalidForPushType)
        #expect(code(#"{"aps":{"content-available":1,"badge":1}}"#, .background) == .invalidForPushType)
        #expect(code(#"{"aps":{"alert":"x","content-available":1}}"#, .alert) == nil)
        #expect(code(#"{"aps":{"event":"update"}}"#, .liveactivity) == .invalidForPushType)
        #expect(code(#"{"aps":{"event":"update","timestamp":1}}"#, .liveactivity) == nil)
    }

    @Test func contentValueRanges() {
        func refusal(_ content: PushContent) -> PayloadError? {
            do {
                _ = try APNsPayload.build(content, pushType: .alert)
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal(PushContent(body: "x", badge: -1))?.code == .invalidValue)
        #expect(refusal(PushContent(body: "x", badge: 0)) == nil)
        #expect(refusal(PushContent(body: "x").with(apns: .init(relevanceScore: 1.5)))?.code == .invalidValue)
        #expect(refusal(PushContent(body: "x").with(apns: .init(relevanceScore: 1))) == nil)
        #expect(refusal(PushContent(body: "x", sound: "a").with(apns: .init(criticalVolume: 2)))?.code == .invalidValue)
        #expect(refusal(PushContent(body: "x", sound: "a").with(apns: .init(criticalVolume: 1))) == nil)
        // The sentences callers pass on (the native API's invalid_notification, a vendor's error).
        #expect(
            refusal(PushContent(body: "x").with(apns: .init(relevanceScore: 1.5)))?.message
                == "relevance-score must be within 0…1, got 1.5")
        #expect(
            refusal(PushContent(body: "x", sound: "a").with(apns: .init(criticalVolume: 2)))?.message
                == "critical sound volume must be within 0…1, got 2.0")
    }

    /// The entry as the native API and the plugins write it (`PushContent.services["apns"]`):
    /// checked by the transport when a message is accepted, read leniently when it renders.
    @Test func theAPNsEntryIsCheckedOnAcceptAndReadLeniently() {
        func refusal(_ entry: JSONValue) -> String? {
            do {
                _ = try APNsPayload.build(PushContent(body: "x", services: ["apns": entry]), pushType: .alert)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refusal(["mutable_content": true, "relevance_score": 1, "summary_arg_count": 2]) == nil)
        #expect(refusal(["sound_volume": 1]) == #"unknown APNs content field "sound_volume""#)
        #expect(refusal(["mutable_content": 1]) == #"APNs content field "mutable_content" must be true or false"#)
        #expect(
            refusal(["interruption_level": "loud"])
                == #"APNs content field "interruption_level" must be one of passive, active, time-sensitive, critical"#)
        #expect(refusal(["summary_arg_count": 1.5]) == #"APNs content field "summary_arg_count" must be an integer"#)
        #expect(refusal("on") == "the APNs fields of the content must be an object")
        // A null is unset, as the rows the v13/pg7 migrations wrote have them.
        #expect(refusal(["critical_volume": nil, "mutable_content": false]) == nil)
        // Rendering never refuses: a value of the wrong type reads as unset.
        let odd = PushContent(body: "x", services: ["apns": ["mutable_content": 1, "interruption_level": "loud"]])
        #expect(rendered(odd) == #"{"aps":{"alert":"x"}}"#)
        // The typed fields and the entry say the same, whole numbers as they read back.
        let fields = APNsContent(
            interruptionLevel: .active, relevanceScore: 1, mutableContent: true, alertAsObject: true,
            summaryArgCount: 3, criticalVolume: 0.25, timestamp: Date(timeIntervalSince1970: 1_700_000_000),
            event: .start, contentState: ["s": 1], attributesType: "A", attributes: ["a": "b"])
        #expect(
            fields.entry
                == [
                    "interruption_level": "active", "relevance_score": 1, "mutable_content": true,
                    "alert_as_object": true, "summary_arg_count": 3, "critical_volume": 0.25,
                    "timestamp": 1_700_000_000, "event": "start", "content_state": ["s": 1], "attributes_type": "A",
                    "attributes": ["a": "b"],
                ])
        #expect(APNsContent(fields.entry) == fields)
        #expect(APNsContent().entry == nil && PushContent(body: "x").with(apns: APNsContent()).services.isEmpty)
    }

    @Test func buildReturnsTheRenderedBytes() throws {
        let content = PushContent(data: ["sync": true], background: true)
        #expect(content.isBackgroundOnly)
        #expect(content.suggestedPushType == .background)
        #expect(try APNsPayload.build(content, pushType: .background) == APNsPayload.render(content))
        #expect(PushContent(body: "x", background: true).suggestedPushType == .alert)
        #expect(PushContent(badge: 1, background: true).suggestedPushType == .alert)
    }
}
