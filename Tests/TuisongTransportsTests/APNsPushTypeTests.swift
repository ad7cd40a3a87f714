import Testing
import TuisongAPNsTransport
import TuisongCore

/// What each push type means on APNs's wire: the topic's suffix and the payload limit.
@Suite struct APNsPushTypeTests {
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

    @Test func payloadLimitsFollowTheReference() {
        for type in PushType.allCases {
            #expect(type.apnsPayloadLimit == (type == .voip ? 5120 : 4096))
        }
    }

    /// The console's shared payload (the declaration's `sharedPayload`) carries the same limit.
    @Test func theSharedPayloadCarriesThePushTypesLimit() throws {
        let render = try #require(APNsPushTransport.declaration.sharedPayload)
        #expect(render(PushContent(body: "Hi"), .voip).limit == 5120)
        #expect(render(PushContent(body: "Hi"), .alert).limit == 4096)
        let tooLarge = render(PushContent(body: String(repeating: "x", count: 4200)), .alert)
        #expect(tooLarge.limit == 4096)
        #expect(tooLarge.refusal?.code == .tooLarge)
    }
}
