import TuisongCore
import TuisongTransportKit

extension HuaweiService {
    /// Its channel's name, written here once: what devices, the store, the APIs, config
    /// (`transports.huawei`) and the CLI (`--channel huawei`) call it.
    public static let channel = PushChannel("huawei")

    /// Huawei as the gateway's transport registry knows it: Push Kit, an OAuth 2.0 client as its credential.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(
            channel: HuaweiService.channel, displayName: "Huawei", displayNameZH: "华为", withArticle: "a Huawei"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: HuaweiService.defaultSendURL),
            TransportConfigKey("token_url", .url(required: true), default: HuaweiService.defaultTokenURL),
        ],
        credentialForm: .appClient(
            HuaweiService.channel, appID: .init(en: "App ID", zh: "App ID"),
            clientID: .init(en: "Client ID", zh: "客户端 ID"),
            secret: .init(en: "Client secret", zh: "客户端密钥"), badgeClass: true, receiptID: true),
        make: { context in
            try .tokenBatch(
                HuaweiService(
                    baseURL: context.url("url"), tokenURL: context.url("token_url", localPath: "/oauth2/v3/token"),
                    receipts: context.receipts),
                context)
        },
        receipts: HuaweiReceipts.declaration,
        serviceCodes: serviceCodes,
        renderBody: { HuaweiService().serviceBody($0) })

    /// Huawei's OAuth and Push Kit codes (docs/reference/android.md §3; Huawei's server error
    /// code pages).
    static let serviceCodes: [String: LocalizedText] = [
        "1101": LocalizedText(
            en:
                "Huawei's OAuth server refused the client: the client ID or client secret is wrong, or the client is unknown",
            zh: "华为的 OAuth 服务拒绝了客户端：Client ID 或 Client Secret 错误，或客户端不存在"),
        "80200001": LocalizedText(
            en: "OAuth authentication error: the access token is missing, wrong, or another app's",
            zh: "OAuth 鉴权错误：访问令牌缺失、错误或属于其他应用"),
        "80200003": LocalizedText(
            en: "the OAuth access token expired",
            zh: "OAuth 访问令牌已过期"),
        "80300002": LocalizedText(
            en:
                "the app may not send to these tokens (no permission for Push Kit, or not enabled in AppGallery Connect)",
            zh: "应用无权向这些令牌发送（无 Push Kit 权限，或未在 AppGallery Connect 中开通）"),
        "80300007": LocalizedText(
            en: "every token is invalid (uninstalled, or another app's)",
            zh: "所有令牌均无效（已卸载或属于其他应用）"),
        "80300008": LocalizedText(
            en: "the message body is larger than 4,096 bytes",
            zh: "消息体超过 4,096 字节"),
        "80300010": LocalizedText(
            en: "the number of tokens is not 1 to 1,000",
            zh: "令牌数量不在 1 到 1,000 之间"),
        "80100001": LocalizedText(
            en: "some request parameters are incorrect",
            zh: "部分请求参数不正确"),
        "80100003": LocalizedText(
            en: "the message structure is incorrect",
            zh: "消息结构不正确"),
        "80600003": LocalizedText(
            en: "Huawei's OAuth service failed",
            zh: "华为 OAuth 服务故障"),
        "81000001": LocalizedText(
            en: "Huawei internal error; retried later",
            zh: "华为内部错误，稍后重试"),
    ]
}
