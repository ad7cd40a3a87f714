import TuisongCore
import TuisongDelivery

/// A message's settings for vivo alone, the same for every device of the message: its entry
/// `PushOptions.services["vivo"]`, which the native API's `vivo` object (and its
/// `android.vivo_classification`), Tencent IM's `VIVOClassification` and JPush's
/// `third_party_channel.vivo.classification` fill. One key: `classification`.
enum VivoOptions {
    /// The entry's key: vivo's `classification`, 0 an operation message (vivo's default), 1 a
    /// system message (IM, account, …: sent without the operation-message limits).
    static let classificationKey = "classification"

    /// The rule the vivo declaration gives: an object of `classification` 0 or 1; an entry
    /// asking nothing (`{}`) is none.
    static let rule = ServiceOptionsRule { value throws(ServiceOptionsError) in
        let reader = try ServiceOptionsReader(value, known: [classificationKey])
        guard let raw = reader.members[classificationKey] else { return nil }
        guard let classification = raw.intValue, classification == 0 || classification == 1 else {
            throw ServiceOptionsError(field: classificationKey, "must be 0 (operation) or 1 (system)")
        }
        return .object([classificationKey: .int(classification)])
    }

    /// The native API's shared `android` object carries vivo's classification as
    /// `vivo_classification`: read into this entry.
    static let androidFields = [ChannelDeclaration.AndroidField(name: "vivo_classification", key: classificationKey)]

    /// The message's classification: its entry's, else what a row stored before per-service
    /// options had in its Android object (`vivoClassification`), else 0.
    static func classification(_ headers: PushHeaders) -> Int64 {
        if let value = headers.options(for: VivoService.channel)?[classificationKey]?.intValue { return value }
        return headers.android?.olderFields["vivoClassification"]?.intValue ?? 0
    }
}
