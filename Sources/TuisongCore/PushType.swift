import Foundation

/// `apns-push-type`. The raw value is the header value.
public enum PushType: String, Sendable, Hashable, Codable, CaseIterable {
    case alert
    case background
    case location
    case voip
    case complication
    case fileprovider
    case mdm
    case liveactivity
    case pushtotalk
    case widgets
    case controls

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

    /// The largest payload APNs accepts for this type, in bytes.
    public var payloadLimit: Int { self == .voip ? 5120 : 4096 }

    /// The priority to send with when the caller names none: background pushes must not
    /// use 10 (APNs rejects it), everything else is delivered immediately.
    public var defaultPriority: PushPriority { self == .background ? .powerAware : .immediate }
}

/// How urgently a push should reach the device: 10 now, 5 when the device's power allows, 1
/// lowest (the native API's `priority`, Apple's scale). Each transport says it in its service's
/// words: a header, an urgency, an importance.
public enum PushPriority: Int, Sendable, Hashable, Codable, CaseIterable {
    /// 10: deliver now.
    case immediate = 10
    /// 5: deliver when power considerations allow.
    case powerAware = 5
    /// 1: lowest; may be grouped and delayed.
    case low = 1
}

/// Why a payload cannot be sent.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        /// Over the push type's limit (`size` and `limit` are set). APNs: 413 PayloadTooLarge.
        case tooLarge
        /// Not a JSON object. APNs: 400 (or PayloadEmpty).
        case invalidJSON
        /// No `aps` dictionary where the push type needs one.
        case missingAPS
        /// A custom key that collides with `aps`.
        case reservedKey
        /// A value out of range (badge, relevance score, volume).
        case invalidValue
        /// Contents the push type does not allow (an alert in a background push, a Live
        /// Activity update without `event`/`timestamp`).
        case invalidForPushType
    }

    public let code: Code
    public let message: String
    /// The payload size in bytes, for `tooLarge`.
    public let size: Int?
    /// The push type's limit in bytes, for `tooLarge`.
    public let limit: Int?

    public init(_ code: Code, _ message: String, size: Int? = nil, limit: Int? = nil) {
        self.code = code
        self.message = message
        self.size = size
        self.limit = limit
    }

    public var description: String { message }
}
