import Foundation
import TuisongCore

/// `ext.em_harmony_push_ext`, Easemob's per-message settings for HarmonyOS NEXT ("鸿蒙推送扩展
/// 配置"), as the message's `HarmonyOptions` (the same for every HarmonyOS device of the
/// message). Easemob documents five members (easemob/easemob-doc,
/// docs/document/server-side/push_extension.md, "`em_harmony_push_ext` 结构"; docs/easemob.md):
///
/// - `category` (String, 消息分类) → `notification.category`; a name that is not one of
///   Huawei's categories is ignored (the credential's default category applies), as
///   `em_android_push_ext`'s unknown values are;
/// - `click_action` (String, 点击跳转应用内页) → `clickAction` `{actionType 1, action}`;
/// - `is_test_message` (Boolean, 是否是推送测试消息) → `pushOptions.testMessage`;
/// - `notify_id` (Integer, 通知 ID，相同的 ID 通知替换) and `receipt_id` (String, 回执 ID) have
///   no counterpart in `HarmonyOptions` (the transport sends no `notifyId` and Tuisong takes
///   no delivery receipts) and are ignored.
enum EasemobHarmonyOptions {
    static func options(ext: JSONValue?) -> HarmonyOptions? {
        guard let harmony = ext?["em_harmony_push_ext"], case .object(let fields) = harmony else { return nil }
        func text(_ key: String) -> String? {
            guard let value = fields[key]?.stringValue, !value.isEmpty else { return nil }
            return value
        }
        var options = HarmonyOptions()
        if let category = text("category"), HarmonyOptions.categories.contains(category) {
            options.category = category
        }
        options.clickAction = text("click_action")
        options.testMessage = EasemobMessageRules.flag(fields["is_test_message"])
        return options.isEmpty ? nil : options
    }
}
