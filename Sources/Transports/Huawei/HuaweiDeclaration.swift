import TuisongCore
import TuisongTransportKit

extension HuaweiService {
    /// Huawei as the gateway's transport registry knows it: Push Kit, an OAuth 2.0 client as its credential.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(channel: .huawei, displayName: "Huawei", withArticle: "a Huawei"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: HuaweiService.defaultSendURL),
            TransportConfigKey("token_url", .url(required: true), default: HuaweiService.defaultTokenURL),
        ],
        credentialForm: .appClient(
            .huawei, appID: .init(en: "App ID", zh: "App ID"), clientID: .init(en: "Client ID", zh: "客户端 ID"),
            secret: .init(en: "Client secret", zh: "客户端密钥"), badgeClass: true),
        make: { context in
            try .tokenBatch(
                HuaweiService(
                    baseURL: context.url("url"), tokenURL: context.url("token_url", localPath: "/oauth2/v3/token"),
                    receipts: context.receipts),
                context)
        },
        receipts: HuaweiReceipts.declaration,
        renderBody: { HuaweiService().serviceBody($0) })
}
