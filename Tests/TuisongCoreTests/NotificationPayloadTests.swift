import Foundation
import Testing

@testable import TuisongCore

// Foundation has a `PushNotification` too; a client importing both must say which (or use the
// `PushNotification` alias). The tests check that this works.

private func rendered(_ notification: PushNotification) -> String {
    String(decoding: APNsPayload.render(notification), as: UTF8.self)
}

@Suite struct APNsPayloadRenderTests {
    @Test func plainStringAlertVersusBodyOnlyFields() {
        #expect(rendered(PushNotification(alert: .plain("Hi"))) == #"{"aps":{"alert":"Hi"}}"#)
        #expect(rendered(PushNotification(alert: .fields(.init(body: "Hi")))) == #"{"aps":{"alert":{"body":"Hi"}}}"#)
        #expect(rendered(PushNotification()) == #"{"aps":{}}"#)
    }

    @Test func everyApsKeyWithApplesNames() {
        let notification = PushNotification(
            alert: .fields(
                .init(
                    title: "T", subtitle: "S", body: "B", launchImage: "L.png", titleLocKey: "TK", titleLocArgs: ["t1"],
                    subtitleLocKey: "SK", subtitleLocArgs: ["s1", "s2"], locKey: "BK", locArgs: ["b1"],
                    actionLocKey: "AK",
                    summaryArg: "Ann", summaryArgCount: 2)),
            badge: 0, sound: .named("default"), contentAvailable: true, mutableContent: true, category: "REPLY",
            threadID: "chat-7", targetContentID: "win-1", interruptionLevel: .timeSensitive, relevanceScore: 0.75,
            custom: ["order": ["id": 42], "z": "last"])
        let expected: String = [
            #"{"aps":{"alert":{"action-loc-key":"AK","body":"B","launch-image":"L.png","loc-args":["b1"],"loc-key":"BK","#,
            #""subtitle":"S","subtitle-loc-args":["s1","s2"],"subtitle-loc-key":"SK","summary-arg":"Ann","summary-arg-count":2,"#,
            #""title":"T","title-loc-args":["t1"],"title-loc-key":"TK"},"badge":0,"category":"REPLY","content-available":1,"#,
            #""interruption-level":"time-sensitive","mutable-content":1,"relevance-score":0.75,"sound":"default","#,
            #""target-content-id":"win-1","thread-id":"chat-7"},"order":{"id":42},"z":"last"}"#,
        ].joined()
        #expect(rendered(notification) == expected)
    }

    @Test func criticalSoundAndFalseFlagsOmitted() {
        let notification = PushNotification(
            alert: .plain("Fire"), sound: .critical(name: "alarm.caf", volume: 0.5), contentAvailable: false,
            mutableContent: false, interruptionLevel: .critical)
        #expect(
            rendered(notification)
                == #"{"aps":{"alert":"Fire","interruption-level":"critical","sound":{"critical":1,"name":"alarm.caf","volume":0.5}}}"#
        )
    }

    @Test func liveActivityFields() {
        let notification = PushNotification(
            alert: .fields(.init(title: "Score", body: "2-1")), timestamp: Date(timeIntervalSince1970: 1_700_000_000.9),
            event: .update, contentState: ["home": 2, "away": 1], staleDate: Date(timeIntervalSince1970: 1_700_003_600),
            dismissalDate: Date(timeIntervalSince1970: 1_700_007_200), attributesType: "MatchAttributes",
            attributes: ["match": "A-B"])
        let expected: String = [
            #"{"aps":{"alert":{"body":"2-1","title":"Score"},"attributes":{"match":"A-B"},"attributes-type":"MatchAttributes","#,
            #""content-state":{"away":1,"home":2},"dismissal-date":1700007200,"event":"update","stale-date":1700003600,"#,
            #""timestamp":1700000000}}"#,
        ].joined()
        #expect(rendered(notification) == expected)
        #expect(notification.suggestedPushType == .liveactivity)
    }

    @Test func customApsNeverOverridesTheRealOne() throws {
        let notification = PushNotification(alert: .plain("real"), custom: ["aps": ["alert": "fake"], "k": 1])
        #expect(rendered(notification) == #"{"aps":{"alert":"real"},"k":1}"#)
        #expect(throws: PayloadError.self) { try notification.validate() }
        do {
            try notification.validate()
        } catch {
            #expect(error.code == .reservedKey)
        }
    }

    @Test func renderedPayloadIsValidJSONForFoundation() throws {
        let notification = PushNotification(
            alert: .fields(.init(title: "标题 \"quoted\"", body: "line\nbreak\u{7}")), badge: 5,
            custom: ["emoji": "😀", "nested": ["list": [1, 2.5, nil]]])
        let object = try JSONSerialization.jsonObject(with: Data(APNsPayload.render(notification))) as? [String: Any]
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
        let base = APNsPayload.render(PushNotification(alert: .plain("x"), custom: ["p": ""])).count
        let bytes = APNsPayload.render(
            PushNotification(alert: .plain("x"), custom: ["p": .string(String(repeating: "a", count: size - base))]))
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
        let chinese = PushNotification(alert: .plain(String(repeating: "推", count: 1400)))
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

    @Test func notificationValueRanges() {
        func code(_ notification: PushNotification) -> PayloadError.Code? {
            do {
                try notification.validate()
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code(PushNotification(badge: -1)) == .invalidValue)
        #expect(code(PushNotification(badge: 0)) == nil)
        #expect(code(PushNotification(relevanceScore: 1.5)) == .invalidValue)
        #expect(code(PushNotification(relevanceScore: 1)) == nil)
        #expect(code(PushNotification(sound: .critical(name: "a", volume: 2))) == .invalidValue)
        #expect(code(PushNotification(sound: .critical(name: "a", volume: 1))) == nil)
    }

    @Test func buildReturnsTheRenderedBytes() throws {
        let notification = PushNotification(contentAvailable: true, custom: ["sync": true])
        #expect(notification.isBackgroundOnly)
        #expect(notification.suggestedPushType == .background)
        #expect(try APNsPayload.build(notification, pushType: .background) == APNsPayload.render(notification))
        #expect(PushNotification(alert: .plain("x"), contentAvailable: true).suggestedPushType == .alert)
    }
}

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
        #expect([APNsPriority.immediate, .powerAware, .low].map(\.rawValue) == [10, 5, 1])
        #expect(APNsPriority(rawValue: 7) == nil)
    }
}

@Suite struct NotificationCodableTests {
    @Test func roundTripsThroughJSONEncoder() throws {
        let notifications = [
            PushNotification(alert: .plain("plain"), badge: 1, sound: .named("default")),
            PushNotification(
                alert: .fields(.init(title: "t", body: "b", locArgs: ["x"])), sound: .critical(name: "c", volume: 0.3),
                contentAvailable: true, interruptionLevel: .passive, relevanceScore: 0.2,
                timestamp: Date(timeIntervalSince1970: 1_700_000_000), event: .start, contentState: ["a": 1],
                attributesType: "T", attributes: ["b": [true]], custom: ["k": ["v": nil]]),
        ]
        for notification in notifications {
            let data = try JSONEncoder().encode(notification)
            #expect(try JSONDecoder().decode(PushNotification.self, from: data) == notification)
        }
        let plain = try JSONEncoder().encode(PushNotification.Alert.plain("hello"))
        #expect(String(decoding: plain, as: UTF8.self) == #""hello""#)
        #expect(PushNotification.Alert.plain("b").body == "b")
        #expect(PushNotification.Alert.fields(.init(title: "t", body: "b")).title == "t")
        #expect(PushNotification.Sound.critical(name: "n", volume: 1).name == "n")
        let alias: PushNotification = PushNotification(badge: 1)
        #expect(alias.badge == 1)
    }
}
