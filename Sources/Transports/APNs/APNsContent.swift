import Foundation
import TuisongCore

/// What only APNs takes of a push's content: iOS's presentation hints, the alert fields no other
/// service has, critical sounds and Live Activities. It travels as the content's entry
/// `PushContent.services["apns"]`, whose keys are the native API's names of these fields in its
/// `notification` object (docs/api.md): `mutable_content`, `target_content_id`,
/// `interruption_level`, `relevance_score`, and of its `alert` object `launch_image`,
/// `action_loc_key`, `summary_arg`, `summary_arg_count`; `critical_volume` is its `sound`'s
/// `volume`, and `alert_as_object` says the alert was given as an object. The Live Activity keys
/// (`timestamp`, `event`, `content_state`, `stale_date`, `dismissal_date`, `attributes_type`,
/// `attributes`; dates as epoch seconds) have no native spelling yet. A row stored before the
/// entry had the same object under the content's `apns` key, which Core reads into the entry.
/// The native API and the vendor plugins fill it; only this transport reads it.
public struct APNsContent: Sendable, Hashable {
    /// `aps.interruption-level` (iOS 15+).
    public enum InterruptionLevel: String, Sendable, Hashable, CaseIterable {
        case passive
        case active
        case timeSensitive = "time-sensitive"
        case critical
    }

    /// `aps.event` of a Live Activity push.
    public enum LiveActivityEvent: String, Sendable, Hashable, CaseIterable {
        case start
        case update
        case end
    }

    public var interruptionLevel: InterruptionLevel?
    /// 0…1; the system's ordering hint in notification summaries.
    public var relevanceScore: Double?
    /// `mutable-content: 1`: let a notification service extension modify it.
    public var mutableContent: Bool
    public var targetContentID: String?
    public var launchImage: String?
    public var actionLocKey: String?
    /// Render an alert that has only a body as `{"body": …}` rather than the plain string
    /// (the form a vendor's API gave, e.g. Easemob's; iOS shows both alike).
    public var alertAsObject: Bool
    public var summaryArg: String?
    public var summaryArgCount: Int?
    /// With a sound: play it as a critical alert (Apple's entitlement) at this volume, 0…1.
    public var criticalVolume: Double?
    // Live Activity (push type `liveactivity`).
    /// When the content state was produced; rendered as epoch seconds.
    public var timestamp: Date?
    public var event: LiveActivityEvent?
    public var contentState: [String: JSONValue]?
    public var staleDate: Date?
    public var dismissalDate: Date?
    /// With `event == .start`: the ActivityAttributes type name and its values.
    public var attributesType: String?
    public var attributes: [String: JSONValue]?

    public init(
        interruptionLevel: InterruptionLevel? = nil, relevanceScore: Double? = nil, mutableContent: Bool = false,
        targetContentID: String? = nil, launchImage: String? = nil, actionLocKey: String? = nil,
        alertAsObject: Bool = false, summaryArg: String? = nil, summaryArgCount: Int? = nil,
        criticalVolume: Double? = nil,
        timestamp: Date? = nil, event: LiveActivityEvent? = nil, contentState: [String: JSONValue]? = nil,
        staleDate: Date? = nil, dismissalDate: Date? = nil, attributesType: String? = nil,
        attributes: [String: JSONValue]? = nil
    ) {
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.mutableContent = mutableContent
        self.targetContentID = targetContentID
        self.launchImage = launchImage
        self.actionLocKey = actionLocKey
        self.alertAsObject = alertAsObject
        self.summaryArg = summaryArg
        self.summaryArgCount = summaryArgCount
        self.criticalVolume = criticalVolume
        self.timestamp = timestamp
        self.event = event
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.attributesType = attributesType
        self.attributes = attributes
    }

    /// Nothing set.
    public var isEmpty: Bool { self == APNsContent() }

    /// The entry's name in `PushContent.services`: the channel's.
    public static let service = APNsPushTransport.channel

    /// The entry's keys.
    static let keys: Set<String> = [
        "interruption_level", "relevance_score", "mutable_content", "target_content_id", "launch_image",
        "action_loc_key", "alert_as_object", "summary_arg", "summary_arg_count", "critical_volume", "timestamp",
        "event", "content_state", "stale_date", "dismissal_date", "attributes_type", "attributes",
    ]

    /// The fields of a content's entry; none for no entry. A value of the wrong type, and a
    /// null (as rows stored by the v13/pg7 migrations have), reads as unset: what is sent was
    /// checked when it was accepted (`checked(_:)`), and a stored row renders as it always did.
    public init(_ entry: JSONValue?) {
        self.init()
        guard case .object(let members)? = entry else { return }
        // The entry's members, not a look-up per field: a per-recipient push renders a content
        // per device, whose entry holds one or two fields (Tencent's `mutable_content`).
        func date(_ value: JSONValue) -> Date? { value.doubleValue.map(Date.init(timeIntervalSince1970:)) }
        for (key, value) in members {
            switch key {
            case "interruption_level": interruptionLevel = value.stringValue.flatMap(InterruptionLevel.init(rawValue:))
            case "relevance_score": relevanceScore = value.doubleValue
            case "mutable_content": mutableContent = value.boolValue ?? false
            case "target_content_id": targetContentID = value.stringValue
            case "launch_image": launchImage = value.stringValue
            case "action_loc_key": actionLocKey = value.stringValue
            case "alert_as_object": alertAsObject = value.boolValue ?? false
            case "summary_arg": summaryArg = value.stringValue
            case "summary_arg_count": summaryArgCount = value.intValue.flatMap { Int(exactly: $0) }
            case "critical_volume": criticalVolume = value.doubleValue
            case "timestamp": timestamp = date(value)
            case "event": event = value.stringValue.flatMap(LiveActivityEvent.init(rawValue:))
            case "content_state": contentState = value.objectValue
            case "stale_date": staleDate = date(value)
            case "dismissal_date": dismissalDate = date(value)
            case "attributes_type": attributesType = value.stringValue
            case "attributes": attributes = value.objectValue
            default: continue
            }
        }
    }

    /// The entry, without the fields left unset; nil when every one is.
    public var entry: JSONValue? {
        var members: [String: JSONValue] = [:]
        func set(_ key: String, _ value: String?) { if let value { members[key] = .string(value) } }
        func set(_ key: String, _ date: Date?) { if let date { members[key] = .number(date.timeIntervalSince1970) } }
        set("interruption_level", interruptionLevel?.rawValue)
        if let relevanceScore { members["relevance_score"] = .number(relevanceScore) }
        if mutableContent { members["mutable_content"] = true }
        set("target_content_id", targetContentID)
        set("launch_image", launchImage)
        set("action_loc_key", actionLocKey)
        if alertAsObject { members["alert_as_object"] = true }
        set("summary_arg", summaryArg)
        if let summaryArgCount { members["summary_arg_count"] = .int(Int64(summaryArgCount)) }
        if let criticalVolume { members["critical_volume"] = .number(criticalVolume) }
        set("timestamp", timestamp)
        set("event", event?.rawValue)
        if let contentState { members["content_state"] = .object(contentState) }
        set("stale_date", staleDate)
        set("dismissal_date", dismissalDate)
        set("attributes_type", attributesType)
        if let attributes { members["attributes"] = .object(attributes) }
        return members.isEmpty ? nil : .object(members)
    }

    /// The fields of an entry about to be accepted, or what APNs would refuse or misread in it: a
    /// key this transport does not know, a value of the wrong type, a relevance score or critical
    /// volume outside 0…1. Each caller words the refusal in its own dialect (the native API's
    /// `invalid_notification`, a vendor's parameter error). A null is unset.
    public static func checked(_ entry: JSONValue?) throws(PayloadError) -> APNsContent {
        guard let entry, !entry.isNull else { return APNsContent() }
        guard case .object(let members) = entry else {
            throw PayloadError(.invalidValue, "the APNs fields of the content must be an object")
        }
        if let unknown = members.keys.sorted().first(where: { !keys.contains($0) }) {
            throw PayloadError(.invalidValue, "unknown APNs content field \"\(unknown)\"")
        }
        for (key, value) in members where !value.isNull {
            let fits: Bool =
                switch key {
                case "mutable_content", "alert_as_object": value.boolValue != nil
                case "relevance_score", "critical_volume", "timestamp", "stale_date", "dismissal_date":
                    value.doubleValue != nil
                case "summary_arg_count": value.intValue.flatMap { Int(exactly: $0) } != nil
                case "content_state", "attributes": value.objectValue != nil
                case "interruption_level":
                    value.stringValue.flatMap(InterruptionLevel.init(rawValue:)) != nil
                case "event": value.stringValue.flatMap(LiveActivityEvent.init(rawValue:)) != nil
                default: value.stringValue != nil
                }
            guard fits else { throw PayloadError(.invalidValue, "APNs content field \"\(key)\" \(expected(key))") }
        }
        let content = APNsContent(entry)
        if let relevanceScore = content.relevanceScore, !(0...1).contains(relevanceScore) {
            throw PayloadError(.invalidValue, "relevance-score must be within 0…1, got \(relevanceScore)")
        }
        if let volume = content.criticalVolume, !(0...1).contains(volume) {
            throw PayloadError(.invalidValue, "critical sound volume must be within 0…1, got \(volume)")
        }
        return content
    }

    private static func expected(_ key: String) -> String {
        switch key {
        case "mutable_content", "alert_as_object": "must be true or false"
        case "relevance_score", "critical_volume": "must be a number within 0…1"
        case "timestamp", "stale_date", "dismissal_date": "must be epoch seconds"
        case "summary_arg_count": "must be an integer"
        case "content_state", "attributes": "must be an object"
        case "interruption_level":
            "must be one of \(InterruptionLevel.allCases.map(\.rawValue).joined(separator: ", "))"
        case "event": "must be one of \(LiveActivityEvent.allCases.map(\.rawValue).joined(separator: ", "))"
        default: "must be a string"
        }
    }
}

extension PushContent {
    /// The content's APNs fields, read from and written to its entry (`APNsContent`). Reading
    /// parses the entry: a renderer reads it once per content, not once per device.
    public var apns: APNsContent {
        get { APNsContent(services[APNsContent.service.rawValue]) }
        set { services[APNsContent.service.rawValue] = newValue.entry }
    }
}
