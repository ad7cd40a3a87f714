import Foundation

/// What kind of push a message is: a notification, a silent background update, a VoIP call, a
/// Live Activity update, … (the native API's `push_type`; the names are Apple's, which the
/// other services' kinds map onto). Each transport says what a type means on its wire: a
/// header and topic, a data-only message, a skip with its own reason; and how large a payload
/// of the type its service takes (`SharedPayload.limit`).
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

    /// The priority to send with when the caller names none: a background push is never
    /// urgent (a service that wakes apps refuses one that is), everything else is delivered
    /// immediately.
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
    /// What kind of refusal it is; the raw value is what the APIs answer. The kinds every
    /// service shares are here; a transport names its own (a missing envelope of its wire).
    public struct Code: RawRepresentable, Sendable, Hashable {
        public let rawValue: String

        public init(rawValue: String) { self.rawValue = rawValue }

        /// Over the push type's limit (`size` and `limit` are set): the service would refuse it
        /// as too large.
        public static let tooLarge = Code(rawValue: "tooLarge")
        /// Not a JSON object, or empty.
        public static let invalidJSON = Code(rawValue: "invalidJSON")
        /// A custom key that collides with a key the service keeps for the notification itself.
        public static let reservedKey = Code(rawValue: "reservedKey")
        /// A value out of range (badge, relevance score, volume).
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// Contents the push type does not allow (an alert in a background push, a Live
        /// Activity update without `event`/`timestamp`).
        public static let invalidForPushType = Code(rawValue: "invalidForPushType")
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
