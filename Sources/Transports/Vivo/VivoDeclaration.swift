import TuisongCore
import TuisongTransportKit

extension VivoService {
    /// Its channel's name, written here once: what devices, the store, the APIs, config
    /// (`transports.vivo`) and the CLI (`--channel vivo`) call it.
    public static let channel = PushChannel("vivo")

    /// vivo as the gateway's transport registry knows it: AppID, AppKey and AppSecret as its credential.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(
            channel: VivoService.channel, displayName: "vivo", withArticle: "a vivo", options: VivoOptions.rule,
            androidFields: VivoOptions.androidFields),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: VivoService.defaultSendURL)
        ],
        credentialForm: .appClient(
            VivoService.channel, appID: .init(en: "App ID", zh: "App ID"), clientID: .init(en: "AppKey", zh: "AppKey"),
            secret: .init(en: "AppSecret", zh: "AppSecret"), receiptID: true),
        make: { context in
            try .tokenBatch(VivoService(baseURL: context.url("url"), receipts: context.receipts), context)
        },
        receipts: VivoReceipts.declaration,
        serviceCodes: serviceCodes,
        renderBody: { VivoService().serviceBody($0) })

    /// vivo Push's codes (docs/reference/android.md §10).
    static let serviceCodes: [String: LocalizedText] = [
        "10000": LocalizedText(
            en: "authentication failed: the auth token is missing, unknown or expired (权限认证失败)",
            zh: "权限认证失败：鉴权令牌缺失、未知或已过期"),
        "10200": LocalizedText(
            en: "the App ID is empty",
            zh: "App ID 为空"),
        "10201": LocalizedText(
            en: "the AppKey is empty",
            zh: "AppKey 为空"),
        "10204": LocalizedText(
            en: "the timestamp is out of range: this server's clock is off",
            zh: "时间戳超出范围：本服务器时钟不准"),
        "10205": LocalizedText(
            en: "the App ID does not exist",
            zh: "App ID 不存在"),
        "10206": LocalizedText(
            en: "the AppKey is wrong",
            zh: "AppKey 错误"),
        "10207": LocalizedText(
            en: "the signature is wrong: the AppSecret is wrong",
            zh: "签名错误：AppSecret 错误"),
        "10094": LocalizedText(
            en: "the App ID does not match the auth token's app",
            zh: "App ID 与鉴权令牌所属应用不一致"),
        "10302": LocalizedText(
            en: "invalid registration id",
            zh: "注册 ID 无效"),
        "10054": LocalizedText(
            en: "invalid registration id",
            zh: "注册 ID 无效"),
        "10070": LocalizedText(
            en: "the total sent exceeds the daily limit",
            zh: "发送总量超出每日上限"),
        "10073": LocalizedText(
            en: "the system's total exceeds the daily limit",
            zh: "系统总量超出每日上限"),
        "10071": LocalizedText(
            en: "outside the hours operation messages may be sent",
            zh: "不在运营消息允许发送的时段"),
        "10072": LocalizedText(
            en: "sending too fast",
            zh: "发送过快"),
        "10040": LocalizedText(
            en: "vivo asks to retry later",
            zh: "vivo 要求稍后重试"),
    ]
}
