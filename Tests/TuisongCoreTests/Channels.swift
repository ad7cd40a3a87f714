import TuisongCore

/// Channel names for Core's tests: Core names no transport (each declares its own name in its
/// folder), and these tests link no transport.
extension PushChannel {
    static let apns = PushChannel("apns")
    static let fcm = PushChannel("fcm")
    static let huawei = PushChannel("huawei")
    static let honor = PushChannel("honor")
    static let vivo = PushChannel("vivo")
}

extension ChannelDeclaration {
    /// An Apple-style channel as the APNs transport declares it (`APNsPushTransport.channelDeclaration`):
    /// hex tokens taken bare, credentials per environment.
    static let apns = ChannelDeclaration(
        channel: .apns, displayName: "APNs", withArticle: "an APNs", tokenRule: .hex, takesBareTokens: true,
        credentialsServeEnvironments: true, isAndroidStyle: false)

    /// Declares `apns` process-wide, as the gateway's registry would, for tests of the shared
    /// catalog (Core declares no channel of its own).
    static func declareAPNs() { ChannelCatalog.shared.install([.apns]) }
}
