import Foundation
import Testing

@testable import TuisongCore

@Suite struct DeviceTokenTests {
    init() { ChannelDeclaration.declareAPNs() }

    @Test func acceptsHexAndLowercases() throws {
        let raw = String(repeating: "AB", count: 32)
        let token = try #require(DeviceToken(raw))
        #expect(token.hex == String(repeating: "ab", count: 32))
    }

    @Test(arguments: [
        "", String(repeating: "a", count: 62), String(repeating: "a", count: 65),
        String(repeating: "a", count: 202), String(repeating: "g", count: 64),
        String(repeating: "a", count: 63) + " ",
    ])
    func rejects(_ raw: String) {
        #expect(DeviceToken(raw) == nil)
    }

    @Test func acceptsBounds() {
        #expect(DeviceToken(String(repeating: "0", count: 64)) != nil)
        #expect(DeviceToken(String(repeating: "f", count: 200)) != nil)
    }
}

@Suite struct ChannelTokenTests {
    init() { ChannelDeclaration.declareAPNs() }

    /// Real-looking tokens of each Android service: FCM's registration token (base64url with a
    /// colon), Huawei's and Honor's.
    static let fcm = "dGVzdC1pbnN0YW5jZQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx1l8ELEtGjyL4UbCk7xMWIG_ZzfEKVLNs"
    static let huawei = "AFcSAHhhnxdrMCYBxth2QOG9IgY2VydAM61DTThqNux3KBC_hgzQQT_tyDbb3ipcw7GrA8v8BgLsHjmN5eN6"

    @Test func androidTokensAreKeptAsGiven() throws {
        #expect(try #require(DeviceToken(Self.fcm, channel: .fcm)).value == Self.fcm)
        #expect(try #require(DeviceToken(Self.huawei, channel: .huawei)).value == Self.huawei)
        #expect(try #require(DeviceToken("0.1-2_3~4:5", channel: .honor)).value == "0.1-2_3~4:5")
    }

    @Test(arguments: ["", "has space", "slash/", "percent%20", "plus+", "é", String(repeating: "x", count: 4097)])
    func androidTokensRefuse(_ raw: String) {
        #expect(DeviceToken(raw, channel: .fcm) == nil)
    }

    @Test func anAPNsTokenOnAnAndroidChannelIsRefused() {
        let apns = String(repeating: "ab", count: 32)
        #expect(DeviceToken(apns, channel: .fcm) == nil)
        #expect(DeviceToken(apns, channel: .apns) != nil)
        #expect(DeviceToken(Self.fcm, channel: .apns) == nil)
    }

    @Test func addressingNormalisesAPNsTokensAndKeepsOthers() throws {
        #expect(
            try #require(DeviceToken(addressing: String(repeating: "AB", count: 32))).value
                == String(repeating: "ab", count: 32))
        #expect(try #require(DeviceToken(addressing: Self.fcm)).value == Self.fcm)
        #expect(DeviceToken(addressing: "no spaces") == nil)
        #expect(DeviceToken(addressing: String(repeating: "x", count: 4096)) != nil)
    }

    /// A channel is an open name: a declared one is what its declaration says (here an
    /// Apple-style one, as the APNs transport declares), and a name nobody declared is an
    /// Android-style service with opaque tokens. The gateway's transport registry declares
    /// every transport (TransportRegistryTests).
    @Test func channels() throws {
        #expect(PushChannel.declared("apns") == .apns && !PushChannel.apns.isAndroid)
        #expect(PushChannel.apns.displayName == "APNs" && PushChannel.apns.withArticle == "an APNs")
        let undeclared = try #require(PushChannel(rawValue: "core_test_service"))
        #expect(undeclared.isAndroid && undeclared.displayName == "core_test_service")
        #expect(PushChannel.declared("core_test_service") == nil)
        #expect(DeviceToken("opaque-1", channel: undeclared)?.value == "opaque-1")
        #expect(PushChannel(rawValue: "dash-ed")?.rawValue == "dash-ed")
        for bad in ["", "FCM", "has space", "9lives", "_x", "-x", String(repeating: "a", count: 33)] {
            #expect(PushChannel(rawValue: bad) == nil, "\(bad)")
        }
        let decoded = try JSONDecoder().decode([PushChannel].self, from: Data(#"["vivo"]"#.utf8))
        #expect(decoded == [.vivo])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([PushChannel].self, from: Data(#"["V!"]"#.utf8))
        }
    }
}

@Suite struct TagNameTests {
    @Test(arguments: [
        "a", "vip_2024", "beta-users.cn", "北京", "用户-组_1", String(repeating: "x", count: 128),
        "a@b!c#d$e&f*g+h=i|j", "￥100",
    ])
    func accepts(_ raw: String) {
        #expect(TagName(raw) != nil)
    }

    @Test(arguments: [
        "", "has space", "semi;colon", "slash/", "comma,list", "pct%", "q?", String(repeating: "x", count: 129),
        "emoji😀",
    ])
    func rejects(_ raw: String) {
        #expect(TagName(raw) == nil)
    }
}
