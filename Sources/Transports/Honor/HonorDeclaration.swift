import TuisongCore
import TuisongTransportKit

extension HonorService {
    /// Its channel's name, written here once: what devices, the store, the APIs, config
    /// (`transports.honor`) and the CLI (`--channel honor`) call it.
    public static let channel = PushChannel("honor")

    /// Honor as the gateway's transport registry knows it: Push Kit, an OAuth 2.0 client as its credential.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(
            channel: HonorService.channel, displayName: "Honor", displayNameZH: "荣耀", withArticle: "an Honor"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: HonorService.defaultSendURL),
            TransportConfigKey("token_url", .url(required: true), default: HonorService.defaultTokenURL),
        ],
        credentialForm: .appClient(
            HonorService.channel, appID: .init(en: "App ID", zh: "App ID"),
            clientID: .init(en: "Client ID", zh: "客户端 ID"),
            secret: .init(en: "Client secret", zh: "客户端密钥"), badgeClass: true, receiptSwitch: true),
        make: { context in
            try .tokenBatch(
                HonorService(
                    baseURL: context.url("url"), tokenURL: context.url("token_url", localPath: "/auth/token"),
                    receipts: context.receipts),
                context)
        },
        receipts: HonorReceipts.declaration,
        serviceCodes: serviceCodes,
        renderBody: { HonorService().serviceBody($0) })

    /// Honor's token endpoint and push codes (docs/reference/android.md §4: its numbers are
    /// Push Kit's, the API Honor's derives from, inside Honor's envelope).
    static let serviceCodes: [String: LocalizedText] = [
        "invalid_client": LocalizedText(
            en: "Honor's OAuth server refused the client: the client ID or client secret is wrong",
            zh: "荣耀的 OAuth 服务拒绝了客户端：Client ID 或 Client Secret 错误"),
        "unauthorized_client": LocalizedText(
            en: "the client may not ask for an access token",
            zh: "该客户端无权申请访问令牌"),
        "80200001": LocalizedText(
            en: "authentication error: the access token is missing, wrong, or another app's",
            zh: "鉴权错误：访问令牌缺失、错误或属于其他应用"),
        "80200003": LocalizedText(
            en: "the access token expired",
            zh: "访问令牌已过期"),
        "80300002": LocalizedText(
            en: "the app may not send to these tokens (no push permission)",
            zh: "应用无权向这些令牌发送（无推送权限）"),
        "80300007": LocalizedText(
            en: "every token is invalid",
            zh: "所有令牌均无效"),
        "80300008": LocalizedText(
            en: "the message body is larger than 4,096 bytes",
            zh: "消息体超过 4,096 字节"),
        "80300010": LocalizedText(
            en: "the number of tokens is not 1 to 1,000",
            zh: "令牌数量不在 1 到 1,000 之间"),
        "80100003": LocalizedText(
            en: "the message structure is incorrect",
            zh: "消息结构不正确"),
        "81000001": LocalizedText(
            en: "Honor internal error; retried later",
            zh: "荣耀内部错误，稍后重试"),
        "HTTP401": LocalizedText(
            en: "Honor refused the client's credentials",
            zh: "荣耀拒绝了客户端凭据"),
    ]
}
