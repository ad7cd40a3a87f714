import TuisongCore
import TuisongTransportKit

extension APNsPushTransport {
    /// The native API's `notification` keys only APNs takes, read into the content's APNs entry
    /// (`APNsContent`) under the same names, and its own reading of two shared keys: an alert
    /// given as an object stays one (`alert_as_object`), a sound given as `{"name", "volume"}`
    /// is a critical alert's (`critical_volume`, 1 when no volume is given). The entry is
    /// checked when the message is submitted (`APNsContent.checked`: a value out of range is
    /// `invalid_notification`); these check only the JSON types, in the API's words.
    static let notificationFields: [NotificationField] = [
        NotificationField("alert", key: "alert_as_object", isShared: true) { value in
            value.objectValue == nil ? nil : true
        },
        NotificationField("sound", key: "critical_volume", isShared: true) { value in
            guard let sound = value.objectValue, sound["name"]?.stringValue != nil else { return nil }
            switch sound["volume"] {
            case .int(let number)?: return .double(Double(number))
            case .double(let number)?: return .double(number)
            case .bool(let on)?: return .double(on ? 1 : 0)
            default: return .double(1)
            }
        },
        NotificationField("mutable_content") { value throws(NotificationFieldError) in
            switch value {
            case .bool(let on): return on ? true : nil
            case .int(0), .double(0): return nil
            case .int(1), .double(1): return true
            default: throw NotificationFieldError("\"notification.mutable_content\" must be true or false")
            }
        },
        // Named without `notification.` in its refusal, as the API always has.
        string("target_content_id", refusalPath: "target_content_id"),
        NotificationField("interruption_level") { value throws(NotificationFieldError) in
            guard let level = value.stringValue, interruptionLevels.contains(level) else {
                throw NotificationFieldError(
                    "\"notification.interruption_level\" must be passive, active, time-sensitive or critical")
            }
            return .string(level)
        },
        NotificationField("relevance_score") { value throws(NotificationFieldError) in
            guard let number = value.doubleValue else {
                throw NotificationFieldError("\"notification.relevance_score\" must be a number 0…1")
            }
            return .double(number)
        },
        string("alert.launch_image"),
        string("alert.action_loc_key"),
        string("alert.summary_arg"),
        NotificationField("alert.summary_arg_count") { value throws(NotificationFieldError) in
            guard let number = value.doubleValue, number.rounded() == number, abs(number) < 9e15 else {
                throw NotificationFieldError("\"notification.alert.summary_arg_count\" must be an integer")
            }
            return .int(Int64(number))
        },
    ]

    /// `notification.interruption_level`'s values (Apple's `interruption-level`).
    static let interruptionLevels: Set<String> = ["passive", "active", "time-sensitive", "critical"]

    /// A string field, refused as `"notification.<path>" must be a string`.
    private static func string(_ path: String, refusalPath: String? = nil) -> NotificationField {
        let shown = refusalPath ?? "notification.\(path)"
        return NotificationField(path) { value throws(NotificationFieldError) in
            guard let text = value.stringValue else { throw NotificationFieldError("\"\(shown)\" must be a string") }
            return .string(text)
        }
    }
}
