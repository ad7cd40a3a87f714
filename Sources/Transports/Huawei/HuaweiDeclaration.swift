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
        serviceCodes: serviceCodes,
        renderBody: { HuaweiService().serviceBody($0) })

    /// Huawei's OAuth and Push Kit codes (docs/reference/android.md §3; Huawei's server error
    /// code pages).
    static let serviceCodes: [String: String] = [
        "1101":
            "Huawei's OAuth server refused the client: the client ID or client secret is wrong, or the client is unknown",
        "80200001": "OAuth authentication error: the access token is missing, wrong, or another app's",
        "80200003": "the OAuth access token expired",
        "80300002":
            "the app may not send to these tokens (no permission for Push Kit, or not enabled in AppGallery Connect)",
        "80300007": "every token is invalid (uninstalled, or another app's)",
        "80300008": "the message body is larger than 4,096 bytes",
        "80300010": "the number of tokens is not 1 to 1,000",
        "80100001": "some request parameters are incorrect",
        "80100003": "the message structure is incorrect",
        "80600003": "Huawei's OAuth service failed",
        "81000001": "Huawei internal error; retried later",
    ]
}
