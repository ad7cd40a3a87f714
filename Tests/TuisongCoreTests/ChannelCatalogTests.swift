import Testing

@testable import TuisongCore

/// The catalog's order is the registry's, whichever list a process installed first: tests
/// share one process and install lists in no fixed order (a provider's tests install only
/// `[harmony]`), and the APIs list channels in this order.
@Suite struct ChannelCatalogTests {
    static let harmony = ChannelDeclaration(channel: PushChannel("harmony"), displayName: "HarmonyOS")
    static let registry: [ChannelDeclaration] =
        [.apns]
        + [PushChannel.fcm, .huawei, .honor, .vivo].map { ChannelDeclaration(channel: $0, displayName: $0.rawValue) }
        + [harmony]

    @Test func aPartialListInstalledFirstDoesNotChangeTheRegistrysOrder() {
        let catalog = ChannelCatalog()
        catalog.install([Self.harmony])
        catalog.install(Self.registry)
        #expect(catalog.declarations.map(\.channel.rawValue) == ["apns", "fcm", "huawei", "honor", "vivo", "harmony"])
    }

    @Test func aPartialListInstalledLaterChangesNothing() {
        let catalog = ChannelCatalog()
        catalog.install(Self.registry)
        catalog.install([Self.harmony, .apns])
        #expect(catalog.declarations.map(\.channel.rawValue) == ["apns", "fcm", "huawei", "honor", "vivo", "harmony"])
        #expect(catalog.declaration(of: PushChannel("harmony"))?.displayName == "HarmonyOS")
    }
}
