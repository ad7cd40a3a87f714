import Foundation
import TuisongCore

/// `ext.em_harmony_push_ext`, Easemob's per-message settings for HarmonyOS NEXT ("鸿蒙推送扩展
/// 配置"), as the `harmony` transport's entry of the message's per-service options
/// (`PushOptions.services["harmony"]`, the native API's `harmony` keys, checked by the rule the
/// transport declares; the same for every HarmonyOS device of the message). Easemob documents five members (easemob/easemob-doc,
/// docs/document/server-side/push_extension.md, "`em_harmony_push_ext` 结构"; docs/easemob.md):
///
/// - `category` (String, 消息分类) → `notification.category`; a name that is not one of
///   Huawei's categories is ignored (the credential's default category applies), as
///   `em_android_push_ext`'s unknown values are;
/// - `click_action` (String, 点击跳转应用内页) → `clickAction` `{actionType 1, action}`;
/// - `is_test_message` (Boolean, 是否是推送测试消息) → `pushOptions.testMessage`;
/// - `notify_id` (Integer, 通知 ID，相同的 ID 通知替换) → `notification.notifyId` (the
///   options' `notify_id`); a value Push Kit cannot take (not an integer, outside
///   -1…2147483647) is ignored, and the notification gets Push Kit's own id;
/// - `receipt_id` (String, 回执 ID) has no counterpart (Tuisong takes no delivery receipts)
///   and is ignored.
enum EasemobHarmonyOptions {
    /// The entry, or nil when the extension asks for nothing. Easemob is lenient with its
    /// extensions (an unknown value is ignored, never refused), so a member the transport's
    /// rule refuses is dropped, one member at a time, rather than failing the message.
    static func entry(ext: JSONValue?) -> JSONValue? {
        guard let harmony = ext?["em_harmony_push_ext"], case .object(let fields) = harmony else { return nil }
        var members: [String: JSONValue] = [:]
        if let category = fields["category"]?.stringValue, !category.isEmpty { members["category"] = .string(category) }
        if let action = fields["click_action"]?.stringValue, !action.isEmpty {
            members["click_action"] = .string(action)
        }
        if EasemobMessageRules.flag(fields["is_test_message"]) { members["test_message"] = true }
        if let id = fields["notify_id"], id != .null { members["notify_id"] = id }
        var accepted: [String: JSONValue] = [:]
        for (key, value) in members {
            // Each member alone: a category Huawei does not have leaves the credential's default,
            // a notify_id the rule refuses leaves Push Kit's own id.
            if let checked = try? PushChannel.harmony.normaliseOptions(.object([key: value])),
                case .object(let kept) = checked
            {
                accepted.merge(kept) { _, new in new }
            }
        }
        return accepted.isEmpty ? nil : .object(accepted)
    }
}

/// The services this vendor's fields map to, by the channel names their transports declare (a
/// plugin links no transport).
extension PushChannel {
    fileprivate static let harmony = PushChannel("harmony")
}
