import Foundation
import TuisongCore

/// Baidu's `device_type` of a push or a binding: 3 Android, 4 iOS (1 browser, 2 PC and 5
/// Windows Phone are not served). A push reaches only devices of its type: iOS ones through
/// APNs, Android ones through the service each registered on (FCM, Huawei, Honor).
enum BaiduDeviceType: Int, Sendable, Hashable {
    case android = 3
    case iOS = 4

    /// The label kept with a gateway message; `BaiduDeliveryPolicy` reads it back.
    static let label = "device_type"

    init(channel: PushChannel) {
        self = channel.isAndroid ? .android : .iOS
    }

    func matches(_ channel: PushChannel) -> Bool { channel.isAndroid == (self == .android) }

    /// `device_type` of a call: absent is 4, what this gateway always served (an iOS app's
    /// server sends it; Baidu's SDKs default to it per app).
    static func parse(_ parameters: BaiduParameters) throws(BaiduError) -> BaiduDeviceType {
        guard let type = try parameters.optionalInteger("device_type", in: 1...5) else { return .iOS }
        guard let parsed = BaiduDeviceType(rawValue: type) else {
            throw BaiduError.invalidParameter(
                "device_type", "must be 3 (Android) or 4 (iOS): this gateway serves no other, got \(type)")
        }
        return parsed
    }

    /// The type a stored message was sent to; messages from before Android was served are iOS.
    static func of(_ record: MessageRecord) -> BaiduDeviceType {
        record.labels[label].flatMap(Int.init).flatMap(BaiduDeviceType.init(rawValue:)) ?? .iOS
    }
}

/// Baidu pushes name a device type; audiences (a tag, all devices) do not: each device of the
/// other type is skipped `device_type`, so an iOS push never reaches an Android phone as a
/// rendering of an APNs payload it was not written for, nor the other way round.
struct BaiduDeliveryPolicy: DeliveryPolicy {
    static let skipReason = "device_type"

    func decide(_ recipients: [Recipient], message: MessageRecord) async throws -> [DeliveryDecision] {
        let type = BaiduDeviceType.of(message)
        return recipients.map { type.matches($0.channel) ? .send : .skip(reason: Self.skipReason) }
    }
}
