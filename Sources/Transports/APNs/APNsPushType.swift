import TuisongCore

/// What a push type means on APNs's wire: the `apns-push-type` header (the raw value), the
/// suffix Apple expects on the bundle id in `apns-topic`, and the largest payload it takes.
extension PushType {
    /// The suffix APNs expects on the bundle id in `apns-topic` for this push type.
    public var topicSuffix: String {
        switch self {
        case .alert, .background, .mdm: return ""
        case .voip: return ".voip"
        case .complication: return ".complication"
        case .fileprovider: return ".pushkit.fileprovider"
        case .location: return ".location-query"
        case .liveactivity: return ".push-type.liveactivity"
        case .pushtotalk: return ".voip-ptt"
        // Not in the reference table; WidgetKit and ControlKit pushes name their topic this way.
        case .widgets: return ".push-type.widgets"
        case .controls: return ".push-type.controls"
        }
    }

    /// `apns-topic` for an app: `com.example.app` + the type's suffix. A bundle id that
    /// already ends with the suffix is used as is. (MDM topics come from the MDM certificate
    /// and are passed through unchanged.)
    ///
    ///     PushType.voip.topic(forBundleID: "com.example.app")  // "com.example.app.voip"
    public func topic(forBundleID bundleID: String) -> String {
        let suffix = topicSuffix
        if suffix.isEmpty || bundleID.hasSuffix(suffix) { return bundleID }
        return bundleID + suffix
    }

    /// The largest payload APNs accepts for this type, in bytes (413 PayloadTooLarge above it).
    public var apnsPayloadLimit: Int { self == .voip ? 5120 : 4096 }
}

extension PayloadError.Code {
    /// No `aps` dictionary where the push type needs one (APNs answers 400).
    public static let missingAPS = PayloadError.Code(rawValue: "missingAPS")
}
