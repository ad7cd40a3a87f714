import Foundation
import TuisongCore
import TuisongTransportKit

extension HarmonyService {
    /// Its channel's name, written here once: what devices, the store, the APIs, config
    /// (`transports.harmony`) and the CLI (`--channel harmony`) call it.
    public static let channel = PushChannel("harmony")

    /// HarmonyOS NEXT as the gateway's transport registry knows it: Huawei Push Kit's scenario
    /// API v3, HarmonyOS push tokens, `transports.harmony.url`, the service-account key file as
    /// its credential (docs/reference/harmony.md).
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(
            channel: HarmonyService.channel, displayName: "HarmonyOS", displayNameZH: "鸿蒙", withArticle: "a HarmonyOS",
            tokenRule: tokenRule,
            options: HarmonyOptions.rule),
        configKeys: [TransportConfigKey("url", .url(required: true), default: HarmonyService.defaultSendURL)],
        credentialForm: CredentialForm(
            fields: [
                .init(
                    "file", .file, label: .init(en: "Service account key JSON", zh: "服务账号密钥 JSON"),
                    help:
                        "the service-account key file Huawei's API Console downloads (project_id, key_id, private_key, sub_account)",
                    helpZH: "华为 API Console 下载的服务账号密钥文件（含 project_id、key_id、private_key、sub_account）",
                    accept: ".json,application/json", cliName: "service-account"),
                .init(
                    "category", required: false, label: .init(en: "Default category", zh: "默认消息类别"),
                    help: "the notification category of messages that name none (IM, WORK, …; MARKETING when empty)",
                    helpZH: "未指明类别的消息所用的通知类别（IM、WORK 等；留空为 MARKETING）",
                    placeholder: "IM", rule: .init(.identifier, 1...32)),
                .init(
                    "receipt_id", required: false, label: .init(en: "Receipt id", zh: "回执 ID"),
                    help:
                        "the receipt id AppGallery Connect shows for the receipt configuration this app's receipts go to (empty: the project's default)",
                    helpZH: "AppGallery Connect 为本应用回执所用的回执配置显示的回执 ID（留空为项目的默认配置）",
                    placeholder: "RCP1234", rule: .identifier(1...64)),
            ],
            validate: { (input, _) throws(CredentialFormError) -> ValidatedCredential in
                try validate(input)
            }),
        make: { context in
            try .tokenBatch(
                HarmonyService(baseURL: context.url("url"), receipts: context.receipts), context, hasQuota: false)
        },
        receipts: HarmonyReceipts.declaration,
        serviceCodes: serviceCodes,
        renderBody: { HarmonyService().serviceBody($0) })

    /// Push Kit v3's codes for HarmonyOS NEXT (docs/reference/harmony.md §4).
    static let serviceCodes: [String: LocalizedText] = [
        "80200001": LocalizedText(
            en: "authentication failed: Push Kit did not take the service account's JWT (wrong key, key ID or project)",
            zh: "鉴权失败：Push Kit 不接受服务账号的 JWT（密钥、密钥 ID 或项目不对）"),
        "80200003": LocalizedText(
            en: "the token expired",
            zh: "令牌已过期"),
        "80200005": LocalizedText(
            en: "the JWT expired",
            zh: "JWT 已过期"),
        "80300002": LocalizedText(
            en: "no permission to send to these tokens (push not enabled for the project)",
            zh: "无权向这些令牌发送（项目未开通推送）"),
        "80300007": LocalizedText(
            en: "every token was refused",
            zh: "所有令牌均被拒绝"),
        "80300008": LocalizedText(
            en: "the message body is larger than 4,096 bytes",
            zh: "消息体超过 4,096 字节"),
        "80300010": LocalizedText(
            en: "the number of tokens is out of range",
            zh: "令牌数量超出范围"),
        "80100001": LocalizedText(
            en: "a parameter is wrong",
            zh: "参数错误"),
        "80100003": LocalizedText(
            en: "the payload structure is illegal",
            zh: "消息结构非法"),
        "81000001": LocalizedText(
            en: "internal error; retried later",
            zh: "内部错误，稍后重试"),
        "invalid_service_account": LocalizedText(
            en: "the service account key cannot sign (not an RSA key of the right kind)",
            zh: "服务账号密钥无法签名（不是所需类型的 RSA 密钥）"),
    ]

    /// A HarmonyOS push token: opaque, 1–4,096 bytes of base64 and URL-safe characters (letters,
    /// digits, `-_.:~+/=`), never the hex shape of another channel's tokens (docs/reference/harmony.md §5: Huawei documents
    /// no alphabet; observed tokens are base64-like).
    public static let tokenRule = DeviceToken.Rule { raw in
        let bytes = raw.utf8
        guard (1...DeviceToken.maximumOpaqueLength).contains(bytes.count) else { return nil }
        let allowed = bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"):
                true
            default: "-_.:~+/=".utf8.contains(byte)
            }
        }
        guard allowed else { return nil }
        // 64–200 hex digits of even length is a hex-token channel's token sent with the wrong channel.
        let hex = bytes.allSatisfy {
            ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
                || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F"))
        }
        if hex, (64...200).contains(bytes.count), bytes.count % 2 == 0 { return nil }
        return raw
    }

    /// The form's check: the key file loads (every field, an RSA key), its ids have the shapes
    /// Huawei gives them, and the default category is one of Huawei's.
    static func validate(_ input: CredentialFormInput) throws(CredentialFormError) -> ValidatedCredential {
        guard let json = input.files["file"], !json.isEmpty else {
            throw CredentialFormError(
                "invalid_service_account", field: "file",
                "choose the service-account key file Huawei's API Console downloads",
                zh: "请选择华为 API 控制台下载的服务账号密钥文件")
        }
        let account: HarmonyServiceAccount
        do {
            account = try HarmonyServiceAccount(json: json)
        } catch {
            throw CredentialFormError("invalid_service_account", field: "file", error.description, zh: error.zh)
        }
        // project_id goes into the send URL's path; the ids into the JWT and the console.
        let digits = { (text: String) in
            (1...32).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        }
        guard digits(account.projectID) else {
            throw CredentialFormError(
                "invalid_service_account", field: "file",
                "the key file's project_id must be the AppGallery Connect project id (digits)",
                zh: "密钥文件的 project_id 须为 AppGallery Connect 的项目 ID（数字）")
        }
        // key_id is a UUID-like id, sub_account a number: both go into the JWT's header and
        // claims and the console, so nothing beyond the letters, digits and marks of an id.
        for (name, value) in [("key_id", account.keyID), ("sub_account", account.subAccount)] {
            if let problem = CredentialFieldRule.identifier(1...128).problemText(value) {
                throw CredentialFormError(
                    "invalid_service_account", field: "file",
                    "the key file's \(name) is not an id Huawei issues: it \(problem.en)",
                    zh: "密钥文件的 \(name) 不是华为签发的 ID：\(problem.zh)")
            }
        }
        var options: [String: String] = [:]
        let category = input.text("category")
        if !category.isEmpty {
            guard HarmonyOptions.categories.contains(category) else {
                throw CredentialFormError(
                    "invalid_category", field: "category",
                    "the category is one of Huawei's: \(HarmonyOptions.categories.sorted().joined(separator: ", "))",
                    zh: "类别须为华为定义的类别之一：\(HarmonyOptions.categories.sorted().joined(separator: "、"))")
            }
            options["category"] = category
        }
        let receiptID = input.text("receipt_id")
        if !receiptID.isEmpty {
            guard receiptID.count <= 64,
                receiptID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
            else {
                throw CredentialFormError(
                    "invalid_receipt_id", field: "receipt_id",
                    "the receipt id is the one AppGallery Connect shows (letters, digits, '-', '_', '.'; at most 64)",
                    zh: "回执 ID 是 AppGallery Connect 显示的 ID（字母、数字和 -、_、.，最多 64 个字符）")
            }
            options[HarmonyReceipts.receiptIDOption] = receiptID
        }
        return ValidatedCredential(
            vendorAppID: account.projectID, clientID: account.subAccount, secret: account.json, options: options)
    }
}
