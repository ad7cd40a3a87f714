import Foundation
import TuisongCore

/// `ext.em_android_push_ext`, Easemob's per-message settings for Android's push services, as
/// the message's `AndroidOptions` (the same for every Android device of the message):
///
/// - `fcm_channel_id`, `huawei_channel_id`, `xiaomi_channel_id`, `oppo_channel_id` → that
///   service's notification channel; the older `em_push_channel_id` → every service's that
///   names none of its own;
/// - `honor_importance` → Honor's importance (`LOW`, `NORMAL`);
/// - `huawei_category`, `oppo_category`, `vivo_category` → that service's category;
/// - `em_push_sound` (older clients, `/raw/ring`) → the Android sound.
///
/// `huawei_click_action` / `honor_click_action` differ per device's service and are rendered
/// into each device's payload (`EasemobPushContent`). Other keys (`fcm_options`,
/// `*_target_user_type`, `huawei_receipt_id`, Meizu's, vivo's and OPPO's activities, OPPO's
/// notify level) have no counterpart in the gateway and are ignored.
enum EasemobAndroidOptions {
    static func options(ext: JSONValue?) -> AndroidOptions? {
        guard let android = ext?["em_android_push_ext"], case .object(let fields) = android else { return nil }
        func text(_ key: String) -> String? {
            guard let value = fields[key]?.stringValue, !value.isEmpty else { return nil }
            return value
        }
        var options = AndroidOptions()
        let shared = text("em_push_channel_id")
        for service in ["fcm", "huawei", "honor", "xiaomi", "oppo", "vivo"] {
            if let id = text("\(service)_channel_id") ?? shared { options.channelIDs[service] = id }
        }
        if let importance = text("honor_importance") { options.importance["honor"] = importance }
        for service in ["huawei", "oppo", "vivo"] {
            if let category = text("\(service)_category") { options.category[service] = category }
        }
        options.sound = text("em_push_sound")
        return options.isEmpty ? nil : options
    }
}
