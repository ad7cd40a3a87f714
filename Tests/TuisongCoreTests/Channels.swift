import TuisongCore

/// Android-style channel names for Core's tests: Core names no transport but APNs (each
/// declares its own name in its folder), and these tests link no transport.
extension PushChannel {
    static let fcm = PushChannel("fcm")
    static let huawei = PushChannel("huawei")
    static let honor = PushChannel("honor")
    static let vivo = PushChannel("vivo")
}
