import TuisongAPNsTransport
import TuisongCore

/// The names of the transports the gateway ships, for tests: outside its folder (and its
/// declaration, `<Transport>.channel`) the platform names no transport, so tests that build
/// rows, pushes or credentials of a channel without linking its transport say `.huawei` here.
extension PushChannel {
    /// APNs's channel, as its folder declares it; reading it declares APNs process-wide
    /// (`StandardChannels.declare()`), as the gateway's registry would.
    public static let apns: PushChannel = {
        StandardChannels.declare()
        return APNsPushTransport.channel
    }()
    public static let fcm = PushChannel("fcm")
    public static let huawei = PushChannel("huawei")
    public static let honor = PushChannel("honor")
    public static let xiaomi = PushChannel("xiaomi")
    public static let oppo = PushChannel("oppo")
    public static let vivo = PushChannel("vivo")
    public static let harmony = PushChannel("harmony")
}

/// What tests need declared process-wide before a store, a policy or an API asks a channel's
/// traits: APNs, the channel bare hex tokens are taken for and the one Apple-style channel.
/// Core declares no service; the gateway's transport registry installs every transport's
/// declaration, and tests that start no gateway install APNs's here (idempotent; the kit's
/// stores and `PushChannel.apns` call it).
public enum StandardChannels {
    private static let declared: Void = ChannelCatalog.shared.install([APNsPushTransport.channelDeclaration])

    public static func declare() { _ = declared }
}
