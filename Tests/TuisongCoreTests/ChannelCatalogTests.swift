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

    /// A provider's tests install `[harmony]`, a test kit then APNs alone (appended after it),
    /// then the registry: the registry's order still, not `[fcm, …, harmony, apns]`.
    @Test func partialListsOutOfTheRegistrysOrderBeforeItDoNotChangeIt() {
        let catalog = ChannelCatalog()
        catalog.install([Self.harmony])
        catalog.install([.apns])
        #expect(catalog.declarations.map(\.channel.rawValue) == ["harmony", "apns"])
        catalog.install(Self.registry)
        #expect(catalog.declarations.map(\.channel.rawValue) == ["apns", "fcm", "huawei", "honor", "vivo", "harmony"])
        #expect(catalog.declaration(of: .vivo)?.displayName == "vivo")
        #expect(catalog.bareTokenChannel?.channel == .apns)
    }

    @Test func aPartialListInstalledLaterChangesNothing() {
        let catalog = ChannelCatalog()
        catalog.install(Self.registry)
        catalog.install([Self.harmony, .apns])
        #expect(catalog.declarations.map(\.channel.rawValue) == ["apns", "fcm", "huawei", "honor", "vivo", "harmony"])
        #expect(catalog.declaration(of: PushChannel("harmony"))?.displayName == "HarmonyOS")
    }
}

/// What the rest of the gateway asks of a channel is what its transport declared: which channel
/// a bare token is taken for, whose credentials serve an environment, which is Android-style.
@Suite struct ChannelTraitTests {
    @Test func aChannelDeclaredWithNoTraitsIsAndroidStyleWithOpaqueTokens() {
        let plain = ChannelDeclaration(channel: PushChannel("plain"), displayName: "Plain")
        #expect(plain.isAndroidStyle && !plain.takesBareTokens && !plain.credentialsServeEnvironments)
        #expect(plain.tokenRule.validate("abc-DEF_1") == "abc-DEF_1")
        #expect(plain.tokenRule.validate(String(repeating: "ab", count: 32)) == nil, "hex is never opaque")
        #expect(PushChannel("undeclared-here").isAndroid)
    }

    @Test func theBareTokenChannelAndTheEnvironmentChannelsAreTheDeclaredOnes() {
        let catalog = ChannelCatalog()
        // Core declares no channel: until a transport is installed no channel takes bare
        // tokens, and an entry naming no device is recorded under `unregistered`.
        #expect(catalog.declarations.isEmpty && catalog.bareTokenChannel == nil)
        #expect(catalog.environmentChannels.isEmpty && catalog.unregisteredChannel == .unregistered)
        catalog.install([.apns])
        #expect(catalog.bareTokenChannel?.channel == .apns && catalog.unregisteredChannel == .apns)
        #expect(catalog.environmentChannels == [.apns])

        // Another channel whose credentials serve an environment; APNs declared again taking no
        // bare tokens, and a channel that takes them.
        let regional = ChannelDeclaration(
            channel: PushChannel("regional"), displayName: "Regional", credentialsServeEnvironments: true)
        let hexes = ChannelDeclaration(
            channel: PushChannel("hexes"), displayName: "Hexes", tokenRule: .hex, takesBareTokens: true,
            isAndroidStyle: false)
        var apns = ChannelDeclaration.apns
        apns.takesBareTokens = false
        catalog.install([apns, regional, hexes])
        #expect(catalog.environmentChannels == [.apns, PushChannel("regional")])
        #expect(catalog.bareTokenChannel?.channel == PushChannel("hexes"))
    }

    @Test func theSharedCatalogTakesHexBareTokensForTheChannelDeclaringThem() throws {
        ChannelDeclaration.declareAPNs()
        let hex = String(repeating: "AB", count: 32)
        #expect(PushChannel.takingBareToken(hex) == .apns)
        #expect(try #require(DeviceToken(hex)).value == hex.lowercased())
        #expect(PushChannel.takingBareToken("not-hex") == nil && DeviceToken("not-hex") == nil)
        #expect(!PushChannel.apns.isAndroid)
        #expect(DeviceToken.Rule.hex.requirement == "hexadecimal, an even number of 64–200 characters")
    }

    @Test func whetherAChannelIsAndroidStyleIsWhatItsDeclarationSays() {
        let catalog = ChannelCatalog()
        let appleLike = PushChannel("apple-like")
        #expect(catalog.isAndroidStyle(.apns), "undeclared here: Android-style")
        catalog.install([.apns])
        #expect(!catalog.isAndroidStyle(.apns))
        #expect(catalog.isAndroidStyle(appleLike), "undeclared: Android-style")
        catalog.install([ChannelDeclaration(channel: appleLike, displayName: "Apple-like", isAndroidStyle: false)])
        #expect(!catalog.isAndroidStyle(appleLike))
        #expect(catalog.isAndroidStyle(PushChannel("opaque-one")))
    }

    /// A page's recipients asked in turn, runs of one channel and changes between them: the
    /// memo answers each as `isAndroid` does, not the answer of the channel before.
    @Test func theMemoAnswersEachChannelAsTheCatalogDoes() {
        ChannelDeclaration.declareAPNs()
        let other = PushChannel("memo-other")
        let channels: [PushChannel] = [.apns, .apns, other, other, .apns, other, .apns]
        var memo = AndroidStyleMemo()
        #expect(channels.map { memo.isAndroid($0) } == [false, false, true, true, false, true, false])
        #expect(channels.map { memo.isAndroid($0) } == channels.map(\.isAndroid))
    }
}
