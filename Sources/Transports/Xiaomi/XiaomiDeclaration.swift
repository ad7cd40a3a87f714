import TuisongCore
import TuisongTransportKit

extension XiaomiService {
    /// Its channel's name, written here once: what devices, the store, the APIs, config
    /// (`transports.xiaomi`) and the CLI (`--channel xiaomi`) call it.
    public static let channel = PushChannel("xiaomi")

    /// Xiaomi as the gateway's transport registry knows it: the package name, AppID and AppSecret as its credential (the secret is the key of every request: a push to no id checks it).
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(
            channel: XiaomiService.channel, displayName: "Xiaomi", displayNameZH: "小米", withArticle: "a Xiaomi"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: XiaomiService.defaultSendURL)
        ],
        credentialForm: .appClient(
            XiaomiService.channel, appID: .init(en: "Package name", zh: "包名"),
            clientID: .init(en: "AppID", zh: "AppID"),
            secret: .init(en: "AppSecret", zh: "AppSecret"), packageName: true),
        make: { context in
            try .tokenBatch(XiaomiService(baseURL: context.url("url"), receipts: context.receipts), context)
        },
        receipts: XiaomiReceipts.declaration,
        serviceCodes: serviceCodes,
        renderBody: { XiaomiService().serviceBody($0) })

    /// MiPush's codes (docs/reference/android.md §8).
    static let serviceCodes: [String: LocalizedText] = [
        "21301": LocalizedText(
            en: "authentication failed: the AppSecret is not this app's (认证失败)",
            zh: "认证失败：AppSecret 不属于此应用"),
        "20301": LocalizedText(
            en: "every registration id is invalid",
            zh: "所有注册 ID 均无效"),
        "200001": LocalizedText(
            en: "the app's daily push limit is reached",
            zh: "已达到应用的每日推送上限"),
        "21305": LocalizedText(
            en: "a required parameter is missing",
            zh: "缺少必填参数"),
        "10017": LocalizedText(
            en: "a parameter value is invalid (the package name may not belong to the app)",
            zh: "参数值无效（包名可能不属于该应用）"),
        "10002": LocalizedText(
            en: "Xiaomi is busy; retried later",
            zh: "小米服务繁忙，稍后重试"),
        "10003": LocalizedText(
            en: "Xiaomi is busy; retried later",
            zh: "小米服务繁忙，稍后重试"),
    ]
}
