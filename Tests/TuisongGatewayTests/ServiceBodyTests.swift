import Foundation
import Testing
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

@testable import TuisongGateway

/// Each transport renders its own service's body for the console (#41 item 9), through the
/// rendering it sends with: no service's body is another's.
@Suite struct ServiceBodyTests {
    /// What only each service's own body has.
    static let markers: [PushChannel: String] = [
        .apns: #""aps""#, .fcm: #""priority""#, .huawei: #""validate_only""#, .honor: #""importance""#,
        .xiaomi: "restricted_package_name", .oppo: "target_value", .vivo: #""regId""#, .harmony: #""actionType""#,
    ]

    static func render(
        _ declaration: TransportDeclaration, _ content: PushContent, environment: PushEnvironment = .production
    ) -> ServiceBody? {
        guard let render = declaration.renderBody else { return nil }
        let channel = declaration.channel.channel
        let credential = ChannelCredential(id: 0, channel: channel, vendorAppID: "10086", clientID: "c", secret: [])
        let request = ServiceBodyRequest(
            content: content, headers: PushHeaders(), environment: environment, appName: "订单助手",
            token: "the-device-token", credential: credential, now: Date(timeIntervalSince1970: 1_800_000_000))
        return render(request)
    }

    @Test func everyStandardTransportRendersItsOwnBody() throws {
        let content = PushContent(title: "订单", body: "已发货", data: ["order": 17])
        let declarations = TransportRegistry.standard.declarations
        #expect(Set(declarations.map(\.channel.channel)) == Set(Self.markers.keys))
        for declaration in declarations {
            let channel = declaration.channel.channel
            let rendered = try #require(Self.render(declaration, content), "\(channel) renders no body")
            let text = rendered.body?.serializedString ?? ""
            #expect(text.contains(Self.markers[channel] ?? "?"), "\(channel): \(text)")
            #expect(text.contains("已发货"), "\(channel): \(text)")
            #expect(channel == .apns || !text.contains(#""aps""#), "\(channel): \(text)")
            #expect(channel == .huawei || !text.contains(#""urgency""#), "\(channel): \(text)")
            #expect(channel == .apns || text.contains("the-device-token"), "\(channel): \(text)")
            #expect(rendered.skipReason == nil && rendered.bytes > 0, "\(channel)")
        }
    }

    @Test func aBackgroundPushIsShownSkippedWhereTheServiceCannotCarryIt() throws {
        let content = PushContent(data: ["sync": true], background: true)
        for declaration in TransportRegistry.standard.declarations {
            let channel = declaration.channel.channel
            let rendered = try #require(Self.render(declaration, content))
            if channel == .oppo || channel == .vivo {
                #expect(rendered.skipReason == "unsupported_content", "\(channel)")
                #expect(rendered.body == nil, "\(channel)")
            } else {
                #expect(rendered.skipReason == nil, "\(channel): \(rendered.skipReason ?? "")")
            }
        }
    }

    @Test func aSandboxHarmonyPushIsShownAsATestMessage() throws {
        let harmony = try #require(TransportRegistry.standard.declaration(of: .harmony))
        let sandbox = Self.render(harmony, PushContent(title: "t", body: "b"), environment: .sandbox)
        #expect(sandbox?.body?.serializedString.contains(#""testMessage":true"#) == true)
    }
}
