import TuisongCore

/// The names of the transports the gateway ships, for tests: outside its folder (and its
/// declaration, `<Transport>.channel`) the platform names no transport, so tests that build
/// rows, pushes or credentials of a channel without linking its transport say `.huawei` here.
extension PushChannel {
    public static let fcm = PushChannel("fcm")
    public static let huawei = PushChannel("huawei")
    public static let honor = PushChannel("honor")
    public static let xiaomi = PushChannel("xiaomi")
    public static let oppo = PushChannel("oppo")
    public static let vivo = PushChannel("vivo")
    public static let harmony = PushChannel("harmony")
}
